#!/bin/sh
# tests/fuzz/run-fuzzers.sh SECONDS [BUILD_DIR] — runs every libFuzzer target present
# in BUILD_DIR (default: the current folder, configured with CC=clang --enable-fuzzing)
# for SECONDS each on a scratch copy of its seed corpus. Builds nothing. Exits 1 if a
# target crashed (the reproducer is left as crash-*/leak-*/timeout-* in the build
# folder: replay it with `tests/fuzz/fuzz_NAME FILE`), 2 on a usage error.
set -u
usage() { echo "usage: $0 SECONDS [BUILD_DIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
secs=$1
case "$secs" in '' | *[!0-9]*) usage ;; esac
build=${2:-.}
src=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
# fuzz_rules keeps its dictionary beside its corpus; the others need none.
ran=0
failed=0
for name in decode pipeline rules restore; do
    target="$build/tests/fuzz/fuzz_$name"
    [ -x "$target" ] || continue
    seeds="$src/tests/fuzz/corpus/$name"
    [ -d "$seeds" ] || { echo "run-fuzzers: no corpus $seeds" >&2; failed=1; continue; }
    # New inputs go to a scratch folder so the tree's corpus stays small and reviewed.
    work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-fuzz-$name.XXXXXX") || exit 2
    dict=""
    [ -f "$src/tests/fuzz/$name.dict" ] && dict="-dict=$src/tests/fuzz/$name.dict"
    echo "run-fuzzers: fuzz_$name for ${secs}s"
    # -rss_limit_mb bounds a run the way --max-line bounds the daemon.
    # shellcheck disable=SC2086
    if "$target" $dict -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/" \
        "$work" "$seeds" > "$build/fuzz_$name.log" 2>&1; then
        tail -n 12 "$build/fuzz_$name.log" | grep -E 'stat::(number_of_executed_units|new_units_added|peak_rss_mb)'
    else
        echo "run-fuzzers: fuzz_$name FAILED, see $build/fuzz_$name.log" >&2
        grep -E 'ERROR|SUMMARY|Test unit written' "$build/fuzz_$name.log" >&2
        failed=1
    fi
    rm -rf "$work"
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "run-fuzzers: no fuzz target in $build/tests/fuzz" >&2; exit 2; }
exit "$failed"
