# bench/local.mk — `make bench`: the benchmark programs and the harness.
# `make bench` never runs from `make check`. The check only builds the generator and
# the hand-written floor to test them (bench/test_bench.sh); the other programs are
# EXTRA_PROGRAMS, built by `make bench` (or bench-programs) alone.
EXTRA_PROGRAMS = bench/linecount bench/memprobe
check_PROGRAMS += bench/gen bench/floor_fraud bench/floor_s4
TESTS += bench/test_bench.sh
bench_gen_SOURCES = bench/gen.c
bench_gen_LDADD = -lm
bench_linecount_SOURCES = bench/linecount.c
bench_floor_fraud_SOURCES = bench/floor_fraud.c bench/flat.h
bench_floor_s4_SOURCES = bench/floor_s4.c bench/flat.h
bench_memprobe_SOURCES = bench/memprobe.c
bench_memprobe_LDADD = $(LDADD_VIGIL)

BENCH_BINS = bench/gen$(EXEEXT) bench/linecount$(EXEEXT) \
	bench/floor_fraud$(EXEEXT) bench/floor_s4$(EXEEXT) bench/memprobe$(EXEEXT)
CLEANFILES += $(BENCH_BINS)
EXTRA_DIST += bench/README.md bench/run.sh bench/results.md bench/to_oracle.sh \
	bench/test_bench.sh \
	bench/s1_fraud.cep bench/s2_brute.cep bench/s3_absence.cep bench/s4_rules.cep \
	bench/s6_loop_any.cep bench/s6_loop_det.cep \
	bench/peer_a.cep bench/peer_b.cep bench/peer_c.cep

bench-programs: $(BENCH_BINS)

# BENCH_ARGS passes options to run.sh, e.g. make bench BENCH_ARGS=--quick
bench: all bench-programs
	$(SHELL) $(srcdir)/bench/run.sh --srcdir '$(abs_top_srcdir)' \
		--builddir '$(abs_top_builddir)' $(BENCH_ARGS)

.PHONY: bench bench-programs
