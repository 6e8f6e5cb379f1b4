/* tests/test_nfa_semantics.c — table-driven semantics of the matcher: each case is a
 * rule body, an event list and the exact multiset of results (Flink CEP semantics;
 * several are ports of the worked examples of the Flink docs and its ITCases; others
 * reach branches that coverage measurement found untested: greedy loops with `until`,
 * tails of optional steps, `in` lists and count_distinct over non-numbers).
 *
 * Events are compact: "ID:N@TS[,FIELD=JSON]" is {"id":"ID","n":"N","ts":TS,...}
 * (TS in seconds); "!TS" advances time. Results: "KIND[@MS] STEP:[IDS] ...". */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nfa/nfa.h"
#include "tests/test_nfa_harness.h"
#include "tests/checkmain.h"

#define T NH_WITH_TIME

typedef struct SemCase {
    const char *name;
    const char *body;     /* rule body without `on` (one is appended) */
    const char *events;
    const char *expect;   /* results separated by ';' */
    int flags;
    size_t cap;           /* max_partials, 0: none */
} SemCase;

#define A "where n == \"a\""
#define B "where n == \"b\""
#define C "where n == \"c\""
#define D "where n == \"d\""

static const SemCase cases[] = {
    /* ---- contiguity of single steps ---------------------------------------- */
    {"strict_adjacent", "begin a " A "; next b " B "; skip no_skip;",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]", 0, 0},
    {"strict_gap_fails", "begin a " A "; next b " B "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3", "", 0, 0},
    {"strict_restart", "begin a " A "; next b " B "; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a2] b:[b1]", 0, 0},
    {"relaxed_gap", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3", "match a:[a1] b:[b1]", 0, 0},
    {"relaxed_first_only", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3", "match a:[a1] b:[b1]", 0, 0},
    {"relaxed_two_starts", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"any_branches", "begin a " A "; followed_by_any b " B "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3 b2:b@4", "match a:[a1] b:[b1]; match a:[a1] b:[b2]", 0, 0},
    {"any_two_starts", "begin a " A "; followed_by_any b " B "; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3 b2:b@4",
     "match a:[a1] b:[b1]; match a:[a1] b:[b2]; match a:[a2] b:[b1]; match a:[a2] b:[b2]", 0, 0},
    {"three_next_relaxed", "begin a " A "; next b " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 x:x@3 c1:c@4", "match a:[a1] b:[b1] c:[c1]", 0, 0},
    {"three_relaxed_then_strict", "begin a " A "; followed_by b " B "; next c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 x:x@3 c1:c@4", "", 0, 0},
    {"three_relaxed_then_strict_ok", "begin a " A "; followed_by b " B "; next c " C "; skip no_skip;",
     "a1:a@1 x:x@2 b1:b@3 c1:c@4", "match a:[a1] b:[b1] c:[c1]", 0, 0},
    {"any_then_relaxed", "begin a " A "; followed_by_any b " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4",
     "match a:[a1] b:[b1] c:[c1]; match a:[a1] b:[b2] c:[c1]", 0, 0},
    {"no_where_takes_anything", "begin a " A "; next b; skip no_skip;",
     "a1:a@1 x1:x@2", "match a:[a1] b:[x1]", 0, 0},
    {"begin_no_where", "begin a; next b " B "; skip no_skip;",
     "x1:x@1 b1:b@2 b2:b@3", "match a:[x1] b:[b1]; match a:[b1] b:[b2]", 0, 0},
    {"single_step", "begin a " A "; skip no_skip;",
     "a1:a@1 x:x@2 a2:a@3", "match a:[a1]; match a:[a2]", 0, 0},
    {"filter_counts_for_strict", "filter n != \"x\"; begin a " A "; next b " B "; skip no_skip;",
     "a1:a@1 x1:x@2 b1:b@3", "match a:[a1] b:[b1]", 0, 0},
    {"same_event_both_steps", "begin a where n == \"a\" or n == \"b\"; followed_by b " B "; skip no_skip;",
     "b1:b@1 b2:b@2", "match a:[b1] b:[b2]", 0, 0},

    /* ---- optional ------------------------------------------------------------ */
    {"optional_middle_skipped", "begin a " A "; next b " B " optional; next c " C "; skip no_skip;",
     "a1:a@1 c1:c@2", "match a:[a1] c:[c1]", 0, 0},
    {"optional_middle_taken", "begin a " A "; next b " B " optional; next c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3", "match a:[a1] b:[b1] c:[c1]", 0, 0},
    {"optional_middle_relaxed", "begin a " A "; followed_by b " B " optional; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3", "match a:[a1] b:[b1] c:[c1]; match a:[a1] c:[c1]", 0, 0},
    {"optional_middle_relaxed_gap", "begin a " A "; followed_by b " B " optional; followed_by c " C "; skip no_skip;",
     "a1:a@1 x:x@2 b1:b@3 x2:x@4 c1:c@5", "match a:[a1] b:[b1] c:[c1]; match a:[a1] c:[c1]", 0, 0},
    {"optional_end_no_skip", "begin a " A "; followed_by b " B " optional; skip no_skip;",
     "a1:a@1 b1:b@2", "match a:[a1]; match a:[a1] b:[b1]", 0, 0},
    {"optional_end_past_last", "begin a " A "; followed_by b " B " optional;",
     "a1:a@1 b1:b@2", "match a:[a1]", 0, 0},
    {"optional_begin", "begin a " A " optional; next b " B "; skip no_skip;",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]; match b:[b1]", 0, 0},
    {"optional_begin_absent", "begin a " A " optional; next b " B "; skip no_skip;",
     "x:x@1 b1:b@2", "match b:[b1]", 0, 0},
    {"optional_begin_past_last", "begin a " A " optional; next b " B ";",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]", 0, 0},
    {"two_optionals", "begin a " A "; followed_by b " B " optional; followed_by c " C " optional; followed_by d " D "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3 d1:d@4",
     "match a:[a1] b:[b1] c:[c1] d:[d1]; match a:[a1] b:[b1] d:[d1]; match a:[a1] c:[c1] d:[d1]; match a:[a1] d:[d1]", 0, 0},

    /* ---- times --------------------------------------------------------------- */
    {"times2_consecutive_gap", "begin a " A "; next b " B " times 2 consecutive; skip no_skip;",
     "a1:a@1 b1:b@2 x:x@3 b2:b@4", "", 0, 0},
    {"times2_consecutive", "begin a " A "; next b " B " times 2 consecutive; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3", "match a:[a1] b:[b1,b2]", 0, 0},
    {"times2_relaxed_inner", "begin a " A "; next b " B " times 2; skip no_skip;",
     "a1:a@1 b1:b@2 x:x@3 b2:b@4", "match a:[a1] b:[b1,b2]", 0, 0},
    {"times2_strict_first", "begin a " A "; next b " B " times 2; skip no_skip;",
     "a1:a@1 x:x@2 b1:b@3 b2:b@4", "", 0, 0},
    {"times2_followed_by", "begin a " A "; followed_by b " B " times 2; skip no_skip;",
     "a1:a@1 x:x@2 b1:b@3 x2:x@4 b2:b@5 b3:b@6", "match a:[a1] b:[b1,b2]", 0, 0},
    {"times2_any_combinations", "begin a " A "; followed_by_any b " B " times 2 allow_combinations; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4",
     "match a:[a1] b:[b1,b2]; match a:[a1] b:[b1,b3]; match a:[a1] b:[b2,b3]", 0, 0},
    {"times2_any_no_combinations", "begin a " A "; followed_by_any b " B " times 2; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4",
     "match a:[a1] b:[b1,b2]; match a:[a1] b:[b2,b3]", 0, 0},
    {"times_range_2_3", "begin a " A "; next b " B " times 2..3; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 c1:c@5",
     "match a:[a1] b:[b1,b2] c:[c1]; match a:[a1] b:[b1,b2,b3] c:[c1]", 0, 0},
    {"times_range_2_3_short", "begin a " A "; next b " B " times 2..3; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4", "match a:[a1] b:[b1,b2] c:[c1]", 0, 0},
    {"times_range_0_2", "begin a " A "; followed_by b " B " times 0..2; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4",
     "match a:[a1] c:[c1]; match a:[a1] b:[b1] c:[c1]; match a:[a1] b:[b1,b2] c:[c1]", 0, 0},
    {"times_range_at_end", "begin a " A "; next b " B " times 1..3; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 b4:b@5",
     "match a:[a1] b:[b1]; match a:[a1] b:[b1,b2]; match a:[a1] b:[b1,b2,b3]", 0, 0},
    {"times3_sliding_no_skip", "begin a " A " times 3; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3 a4:a@4",
     "match a:[a1,a2,a3]; match a:[a2,a3,a4]", 0, 0},
    {"times3_to_next", "begin a " A " times 3; skip to_next;",
     "a1:a@1 a2:a@2 a3:a@3 a4:a@4",
     "match a:[a1,a2,a3]; match a:[a2,a3,a4]", 0, 0},
    {"times3_past_last", "begin a " A " times 3;",
     "a1:a@1 a2:a@2 a3:a@3 a4:a@4 a5:a@5 a6:a@6 a7:a@7",
     "match a:[a1,a2,a3]; match a:[a4,a5,a6]", 0, 0},
    {"times2_optional", "begin a " A "; followed_by b " B " times 2 optional; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3 b2:b@4 c2:c@5",
     "match a:[a1] c:[c1]; match a:[a1] b:[b1,b2] c:[c2]", 0, 0},

    /* ---- loops ----------------------------------------------------------------- */
    {"loop_begin_no_skip", "begin a " A " one_or_more; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3",
     "match a:[a1]; match a:[a1,a2]; match a:[a1,a2,a3]; match a:[a2]; match a:[a2,a3]; match a:[a3]", 0, 0},
    {"loop_begin_past_last", "begin a " A " one_or_more;",
     "a1:a@1 a2:a@2 a3:a@3", "match a:[a1]; match a:[a2]; match a:[a3]", 0, 0},
    {"loop_begin_to_next", "begin a " A " one_or_more; skip to_next;",
     "a1:a@1 a2:a@2 a3:a@3", "match a:[a1]; match a:[a2]; match a:[a3]", 0, 0},
    {"loop_times2_plus", "begin a " A " times 2+; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3",
     "match a:[a1,a2]; match a:[a1,a2,a3]; match a:[a2,a3]", 0, 0},
    {"loop_relaxed_inner", "begin s " C "; followed_by a " A " one_or_more; followed_by e " B "; skip no_skip;",
     "c1:c@1 a1:a@2 x:x@3 a2:a@4 b1:b@5",
     "match s:[c1] a:[a1] e:[b1]; match s:[c1] a:[a1,a2] e:[b1]", 0, 0},
    {"loop_consecutive", "begin s " C "; followed_by a " A " one_or_more consecutive; followed_by e " B "; skip no_skip;",
     "c1:c@1 a1:a@2 x:x@3 a2:a@4 b1:b@5",
     "match s:[c1] a:[a1] e:[b1]", 0, 0},
    {"loop_combinations", "begin s " C "; followed_by a " A " one_or_more allow_combinations; followed_by e " B "; skip no_skip;",
     "c1:c@1 a1:a@2 a2:a@3 a3:a@4 b1:b@5",
     "match s:[c1] a:[a1] e:[b1]; match s:[c1] a:[a1,a2] e:[b1]; match s:[c1] a:[a1,a3] e:[b1]; "
     "match s:[c1] a:[a1,a2,a3] e:[b1]", 0, 0},
    {"loop_any_start", "begin s " C "; followed_by_any a " A " one_or_more; followed_by e " B "; skip no_skip;",
     "c1:c@1 a1:a@2 a2:a@3 b1:b@4",
     "match s:[c1] a:[a1] e:[b1]; match s:[c1] a:[a1,a2] e:[b1]; match s:[c1] a:[a2] e:[b1]", 0, 0},
    {"loop_optional_end", "begin c " C "; followed_by a " A " one_or_more optional; skip no_skip;",
     "c1:c@1 a1:a@2 a2:a@3",
     "match c:[c1]; match c:[c1] a:[a1]; match c:[c1] a:[a1,a2]", 0, 0},
    {"loop_optional_middle", "begin c " C "; followed_by a " A " one_or_more optional; followed_by b " B "; skip no_skip;",
     "c1:c@1 a1:a@2 b1:b@3",
     "match c:[c1] b:[b1]; match c:[c1] a:[a1] b:[b1]", 0, 0},
    {"loop_strict_next_then_loop", "begin a " A "; next b " B " one_or_more; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 x:x@4 b3:b@5",
     "match a:[a1] b:[b1]; match a:[a1] b:[b1,b2]; match a:[a1] b:[b1,b2,b3]", 0, 0},
    {"loop_skip_past_last_strict_end", "begin b " B " one_or_more; next c " C ";",
     "b1:b@1 b2:b@2 c1:c@3 b3:b@4 c2:c@5",
     "match b:[b1,b2] c:[c1]; match b:[b3] c:[c2]", 0, 0},
    {"loop_until", "begin a " A "; followed_by b " B " one_or_more until n == \"x\"; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 x1:x@4 b3:b@5",
     "match a:[a1] b:[b1]; match a:[a1] b:[b1,b2]", 0, 0},
    {"loop_until_first_event", "begin a " A " one_or_more until n == \"x\"; skip no_skip;",
     "a1:a@1 x1:x@2 a2:a@3",
     "match a:[a1]; match a:[a2]", 0, 0},
    {"loop_until_on_same_event", "begin a where n == \"a\" or n == \"x\" one_or_more until n == \"x\"; skip no_skip;",
     "a1:a@1 x1:x@2",
     "match a:[a1]", 0, 0},
    {"loop_until_then_step", "begin a " A " one_or_more until n == \"x\"; followed_by b where n == \"x\" or n == \"b\"; skip no_skip;",
     "a1:a@1 a2:a@2 x1:x@3",
     "match a:[a1] b:[x1]; match a:[a1,a2] b:[x1]; match a:[a2] b:[x1]", 0, 0},
    {"greedy_loop", "begin a " A " one_or_more greedy; followed_by b where n == \"a\" or n == \"b\"; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3",
     "match a:[a1,a2] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"reluctant_loop", "begin a " A " one_or_more; followed_by b where n == \"a\" or n == \"b\"; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3",
     "match a:[a1] b:[a2]; match a:[a1,a2] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"greedy_loop_at_end", "begin a " A " one_or_more greedy; skip no_skip;",
     "a1:a@1 a2:a@2", "match a:[a1]; match a:[a1,a2]; match a:[a2]", 0, 0},

    /* ---- iterative conditions ------------------------------------------------ */
    {"iterative_step_field", "begin a " A "; followed_by b where n == \"b\" and v > a.v; skip no_skip;",
     "a1:a@1,v=5 b1:b@2,v=3 b2:b@3,v=7", "match a:[a1] b:[b2]", 0, 0},
    {"iterative_count", "begin a where n == \"a\" and count(a) < 2 one_or_more; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3",
     "match a:[a1]; match a:[a1,a2]; match a:[a2]; match a:[a2,a3]; match a:[a3]", 0, 0},
    {"iterative_sum_greedy", "begin a where sum(a.p) + p < 10 one_or_more greedy; next c;",
     "p1:x@1,p=4 p2:x@2,p=4 p3:x@3,p=4 p4:x@4,p=1",
     "match a:[p1,p2] c:[p3]", 0, 0},
    {"iterative_time", "begin a " A "; followed_by b where n == \"b\" and time() - time(a) < 5s; skip no_skip;",
     "a1:a@1 b1:b@7 a2:a@8 b2:b@9", "match a:[a2] b:[b2]", 0, 0},

    /* ---- negation ------------------------------------------------------------ */
    {"not_next_blocks", "begin a " A "; not_next x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3", "", 0, 0},
    {"not_next_passes", "begin a " A "; not_next x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 y:y@2 b1:b@3 c1:c@4", "match a:[a1] c:[c1]", 0, 0},
    {"not_next_direct", "begin a " A "; not_next x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 c1:c@2", "match a:[a1] c:[c1]", 0, 0},
    {"not_next_then_strict", "begin a " A "; not_next x " B "; next c " C "; skip no_skip;",
     "a1:a@1 y:y@2 c1:c@3", "", 0, 0},
    {"not_next_at_end", "begin a " A "; not_next x " B "; skip no_skip;",
     "a1:a@1 y:y@2", "match@2000 a:[a1]", T, 0},
    {"not_next_at_end_blocked", "begin a " A "; not_next x " B "; skip no_skip;",
     "a1:a@1 b1:b@2", "", 0, 0},
    {"not_next_at_end_no_next", "begin a " A "; not_next x " B "; skip no_skip;",
     "a1:a@1", "", 0, 0},
    {"not_followed_by_blocks", "begin a " A "; not_followed_by x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 y:y@2 b1:b@3 c1:c@4", "", 0, 0},
    {"not_followed_by_passes", "begin a " A "; not_followed_by x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 y:y@2 c1:c@3 b1:b@4", "match a:[a1] c:[c1]", 0, 0},
    {"not_followed_by_any_kills_branch", "begin a " A "; not_followed_by x " B "; followed_by_any c " C "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3 c2:c@4", "match a:[a1] c:[c1]", 0, 0},
    {"not_followed_by_after_loop", "begin a " A " one_or_more; not_followed_by x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 a2:a@3 c1:c@4", "match a:[a2] c:[c1]", 0, 0},
    {"not_followed_by_tail", "begin a " A "; not_followed_by x " B "; within 5s; skip no_skip;",
     "a1:a@1 y:y@3", "match@6000 a:[a1]", T, 0},
    {"not_followed_by_tail_blocked", "begin a " A "; not_followed_by x " B "; within 5s; skip no_skip;",
     "a1:a@1 b1:b@3", "", T, 0},
    {"not_followed_by_tail_late_b", "begin a " A "; not_followed_by x " B "; within 5s; skip no_skip;",
     "a1:a@1 b1:b@6", "match@6000 a:[a1]", T, 0},
    {"not_followed_by_tail_step_within", "begin a " A "; not_followed_by x " B " within 2s; skip no_skip;",
     "a1:a@1 y:y@2", "match@3000 a:[a1]", T, 0},
    {"not_followed_by_tail_advance", "begin a " A "; not_followed_by x " B "; within 5s; skip no_skip;",
     "a1:a@1 !7 b1:b@8", "match@6000 a:[a1]", T, 0},
    {"not_followed_by_tail_two", "begin a " A "; not_followed_by x " B "; within 5s; skip no_skip;",
     "a1:a@1 a2:a@3 b1:b@4", "", T, 0},
    {"not_followed_by_before_optional", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " optional; followed_by_any d " D "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3 d1:d@4", "match a:[a1] c:[c1] d:[d1]", 0, 0},
    {"not_followed_by_before_optional_skipped", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " optional; followed_by_any d " D "; skip no_skip;",
     "a1:a@1 b1:b@2 d1:d@3", "", 0, 0},

    /* ---- within and timeouts -------------------------------------------------- */
    {"within_timeout", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@1 x:x@3", "timeout@6000 a:[a1]", T, 0},
    {"within_edge_is_dead", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@0 b1:b@5", "timeout@5000 a:[a1]", T, 0},
    {"within_just_inside", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@0 b1:b@4.999", "match@4999 a:[a1] b:[b1]", T, 0},
    {"within_timeout_before_same_time", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@0 a2:a@5 b1:b@5", "timeout@5000 a:[a1]; match@5000 a:[a2] b:[b1]", T, 0},
    {"within_timeout_carries_events", "begin a " A "; next b " B "; followed_by c " C "; within 10s; skip no_skip;",
     "a1:a@1 b1:b@2", "timeout@11000 a:[a1] b:[b1]", T, 0},
    {"within_advance", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@1 !6 b1:b@6", "timeout@6000 a:[a1]", T, 0},
    {"within_advance_early", "begin a " A "; followed_by b " B "; within 5s; skip no_skip;",
     "a1:a@1 !5.5 b1:b@5.9", "match@5900 a:[a1] b:[b1]", T, 0},
    {"step_within_timeout", "begin a " A "; followed_by b " B " within 2s; skip no_skip;",
     "a1:a@1 b1:b@4", "timeout@3000 a:[a1]", T, 0},
    {"step_within_ok", "begin a " A "; followed_by b " B " within 2s; skip no_skip;",
     "a1:a@1 b1:b@2.5", "match@2500 a:[a1] b:[b1]", T, 0},
    {"step_within_from_previous", "begin a " A "; followed_by b " B "; followed_by c " C " within 2s; skip no_skip;",
     "a1:a@1 b1:b@5 c1:c@6.5", "match@6500 a:[a1] b:[b1] c:[c1]", T, 0},
    {"step_within_from_previous_late", "begin a " A "; followed_by b " B "; followed_by c " C " within 2s; skip no_skip;",
     "a1:a@1 b1:b@5 c1:c@7", "timeout@7000 a:[a1] b:[b1]", T, 0},
    {"rule_and_step_within", "begin a " A "; followed_by b " B "; followed_by c " C " within 2s; within 5s; skip no_skip;",
     "a1:a@1 b1:b@5 c1:c@6.5", "timeout@6000 a:[a1] b:[b1]", T, 0},
    /* an optional step's window bounds the partial match waiting in the step itself,
     * not the one an ignored event moved to the step's ignore copy (Flink makes that
     * copy as a state that takes nothing, which gets no window) */
    {"optional_step_within_waiting", "begin a " A "; followed_by o where n == \"o\" optional within 2s;"
     " followed_by b " B "; skip no_skip;",
     "a1:a@1 o1:o@4 b1:b@5", "timeout@3000 a:[a1]", T, 0},
    {"optional_step_within_ignore_copy", "begin a " A "; followed_by o where n == \"o\" optional within 2s;"
     " followed_by b " B "; skip no_skip;",
     "a1:a@1 x:x@1.5 o1:o@4 b1:b@5", "match@5000 a:[a1] b:[b1]; match@5000 a:[a1] o:[o1] b:[b1]", T, 0},
    {"within_loop_timeouts", "begin a " A " one_or_more; within 3s; skip no_skip;",
     "a1:a@0 a2:a@1",
     "match@0 a:[a1]; match@1000 a:[a1,a2]; match@1000 a:[a2]; timeout@3000 a:[a1,a2]; timeout@4000 a:[a2]", T, 0},
    {"within_end_of_input_fires", "begin a " A "; followed_by b " B "; followed_by c " C "; within 1h; skip no_skip;",
     "a1:a@1 b1:b@2", "timeout@3601000 a:[a1] b:[b1]", T, 0},
    {"no_within_end_of_input_silent", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1", "", 0, 0},
    {"within_any_timeouts", "begin a " A "; followed_by_any b " B "; within 5s; skip no_skip;",
     "a1:a@1 b1:b@2", "match@2000 a:[a1] b:[b1]; timeout@6000 a:[a1]", T, 0},

    /* ---- skip strategies and hold-back ---------------------------------------- */
    {"skip_past_last_relaxed", "begin a " A "; followed_by b " B ";",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1] b:[b1]", 0, 0},
    {"skip_to_next_relaxed", "begin a " A "; followed_by b " B "; skip to_next;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"skip_any_past_last", "begin a " A "; followed_by_any b " B ";",
     "a1:a@1 b1:b@2 b2:b@3", "match a:[a1] b:[b1]", 0, 0},
    {"skip_to_first_missing_step", "begin a " A " optional; followed_by b " B "; skip to_first a;",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]; match b:[b1]", 0, 0},
    {"skip_to_last_missing_step", "begin a " A " optional; followed_by b " B "; skip to_last a;",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]; match b:[b1]", 0, 0},
    {"skip_past_last_optional_begin", "begin a " A " optional; followed_by b " B ";",
     "a1:a@1 b1:b@2", "match a:[a1] b:[b1]", 0, 0},
    {"holdback_past_last", "begin a " A "; followed_by b where n == \"b\" and v == a.v;",
     "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2 b1:b@4,v=1", "match a:[a1] b:[b1]", 0, 0},
    /* matches that start and end on the same events come out in the order Flink's
     * decision graph makes them (a state's own edges before those it proceeds to), so
     * the skip strategy keeps the longest loop, and the optional step's event */
    {"tie_loop_past_last", "begin a " A " one_or_more; followed_by b " B ";",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1,a2] b:[b1]", 0, 0},
    {"tie_times_plus_past_last", "begin a " A " times 2+; followed_by b " B ";",
     "a1:a@1 a2:a@2 a3:a@3 b1:b@4", "match a:[a1,a2,a3] b:[b1]", 0, 0},
    {"tie_optional_past_last",
     "begin a " A "; followed_by o where n == \"o\" optional; followed_by b " B ";",
     "a1:a@1 x:x@2 o1:o@3 b1:b@4", "match a:[a1] o:[o1] b:[b1]", 0, 0},
    {"tie_loop_to_last", "begin a " A " one_or_more; followed_by b " B "; skip to_last a;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1,a2] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"holdback_to_next", "begin a " A "; followed_by b where n == \"b\" and v == a.v; skip to_next;",
     "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2 b1:b@4,v=1",
     "match a:[a1] b:[b1]; match a:[a2] b:[b2]", 0, 0},
    {"holdback_no_skip", "begin a " A "; followed_by b where n == \"b\" and v == a.v; skip no_skip;",
     "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2 b1:b@4,v=1",
     "match a:[a1] b:[b1]; match a:[a2] b:[b2]", 0, 0},
    {"holdback_released_at_end", "begin a " A "; followed_by b where n == \"b\" and v == a.v;",
     "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2", "match a:[a2] b:[b2]", 0, 0},
    {"holdback_released_by_timeout", "begin a " A "; followed_by b where n == \"b\" and v == a.v; within 5s;",
     "a1:a@0,v=1 a2:a@1,v=2 b2:b@2,v=2 x:x@6",
     "timeout@5000 a:[a1]; match@2000 a:[a2] b:[b2]", T, 0},
    {"skip_to_first_b", "begin b " B " one_or_more; next c " C "; skip to_first b;",
     "b1:b@1 b2:b@2 c1:c@3", "match b:[b1,b2] c:[c1]; match b:[b2] c:[c1]", 0, 0},
    {"skip_to_last_b", "begin b " B " one_or_more; next c " C "; skip to_last b;",
     "b1:b@1 b2:b@2 b3:b@3 c1:c@4", "match b:[b1,b2,b3] c:[c1]; match b:[b3] c:[c1]", 0, 0},
    {"skip_to_last_c_prunes_all", "begin b " B " one_or_more; next c " C "; skip to_last c;",
     "b1:b@1 b2:b@2 c1:c@3", "match b:[b1,b2] c:[c1]", 0, 0},
    {"skip_to_first_a_three", "begin a " A "; followed_by b " B "; followed_by c " C "; skip to_first b;",
     "a1:a@1 a2:a@2 b1:b@3 c1:c@4",
     "match a:[a1] b:[b1] c:[c1]", 0, 0},
    {"skip_to_next_times", "begin a " A " times 2; skip to_next;",
     "a1:a@1 a2:a@2 a3:a@3", "match a:[a1,a2]; match a:[a2,a3]", 0, 0},
    {"skip_past_last_then_new", "begin a " A "; next b " B ";",
     "a1:a@1 b1:b@2 a2:a@3 b2:b@4", "match a:[a1] b:[b1]; match a:[a2] b:[b2]", 0, 0},

    /* ---- the cap --------------------------------------------------------------- */
    {"cap_drops_oldest", "begin a " A "; followed_by_any b " B "; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3 b1:b@4", "match a:[a2] b:[b1]; match a:[a3] b:[b1]", 0, 2},
    {"cap_one", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a2] b:[b1]", 0, 1},

    /* ---- more combinations ------------------------------------------------------ */
    {"loop_ignore_state_waits_for_loop", "begin b " B " one_or_more; next c " C "; skip no_skip;",
     "b1:b@1 b2:b@2 x:x@3 b3:b@4 c1:c@5",
     "match b:[b1,b2,b3] c:[c1]; match b:[b2,b3] c:[c1]; match b:[b3] c:[c1]", 0, 0},
    {"times2_consecutive_begin", "begin a " A " times 2 consecutive; skip no_skip;",
     "a1:a@1 x:x@2 a2:a@3 a3:a@4", "match a:[a2,a3]", 0, 0},
    {"times2_relaxed_begin", "begin a " A " times 2; skip no_skip;",
     "a1:a@1 x:x@2 a2:a@3", "match a:[a1,a2]", 0, 0},
    {"optional_strict_end", "begin a " A "; next b " B " optional; skip no_skip;",
     "a1:a@1 x:x@2", "match a:[a1]", 0, 0},
    {"optional_strict_end_taken", "begin a " A "; next b " B " optional; skip no_skip;",
     "a1:a@1 b1:b@2", "match a:[a1]; match a:[a1] b:[b1]", 0, 0},
    {"optional_any_middle", "begin a " A "; followed_by_any b " B " optional; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4",
     "match a:[a1] b:[b1] c:[c1]; match a:[a1] c:[c1]; match a:[a1] b:[b2] c:[c1]", 0, 0},
    {"not_next_after_loop", "begin a " A " one_or_more; not_next x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 a2:a@2 c1:c@3",
     "match a:[a1] c:[c1]; match a:[a1,a2] c:[c1]; match a:[a2] c:[c1]", 0, 0},
    {"not_next_after_loop_blocked", "begin a " A " one_or_more; not_next x " B "; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3", "", 0, 0},
    {"iterative_count_in_next", "begin a " A " times 2..4; next b where n == \"b\" and count(a) == 3; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3 b1:b@4", "match a:[a1,a2,a3] b:[b1]", 0, 0},
    {"nothing_matches", "begin a " A "; skip no_skip;", "x1:x@1 x2:x@2", "", 0, 0},
    {"step_within_edge", "begin a " A "; followed_by b " B " within 2s; skip no_skip;",
     "a1:a@1 b1:b@3", "timeout@3000 a:[a1]", T, 0},
    {"timeouts_in_order", "begin a " A "; followed_by b " B "; within 2s; skip no_skip;",
     "a1:a@0 a2:a@1 !10", "timeout@2000 a:[a1]; timeout@3000 a:[a2]", T, 0},
    {"not_followed_by_tail_step_and_rule_within", "begin a " A "; not_followed_by x " B " within 2s; within 5s; skip no_skip;",
     "a1:a@1", "match@3000 a:[a1]", T, 0},
    {"not_followed_by_tail_past_last", "begin a " A "; not_followed_by x " B "; within 5s;",
     "a1:a@1 a2:a@2", "match@6000 a:[a1]; match@7000 a:[a2]", T, 0},
    {"skip_past_last_any_two_starts", "begin a " A "; followed_by_any b " B ";",
     "a1:a@1 a2:a@2 b1:b@3 b2:b@4", "match a:[a1] b:[b1]", 0, 0},
    {"skip_to_next_any_two_starts", "begin a " A "; followed_by_any b " B "; skip to_next;",
     "a1:a@1 a2:a@2 b1:b@3 b2:b@4", "match a:[a1] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"skip_to_first_times_begin", "begin a " A " times 2; skip to_first a;",
     "a1:a@1 a2:a@2 a3:a@3 a4:a@4", "match a:[a1,a2]; match a:[a2,a3]; match a:[a3,a4]", 0, 0},
    {"cap_with_loop", "begin a " A " one_or_more; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3",
     "match a:[a1]; match a:[a1,a2]; match a:[a2]; match a:[a2,a3]; match a:[a3]", 0, 1},
    {"filter_hides_events", "filter n != \"b\"; begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 b1:b@2", "", 0, 0},
    {"greedy_times_range", "begin a " A " times 1..3 greedy; next b where n == \"a\" or n == \"b\"; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3", "match a:[a1,a2] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"reluctant_times_range", "begin a " A " times 1..3; next b where n == \"a\" or n == \"b\"; skip no_skip;",
     "a1:a@1 a2:a@2 b1:b@3",
     "match a:[a1] b:[a2]; match a:[a1,a2] b:[b1]; match a:[a2] b:[b1]", 0, 0},
    {"consecutive_times_range", "begin a " A "; next b " B " times 2..3 consecutive; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 x:x@4 b3:b@5 c1:c@6", "match a:[a1] b:[b1,b2] c:[c1]", 0, 0},
    {"loop_begin_combinations", "begin a " A " one_or_more allow_combinations; skip no_skip;",
     "a1:a@1 a2:a@2 a3:a@3",
     "match a:[a1]; match a:[a1,a2]; match a:[a1,a2,a3]; match a:[a1,a3]; match a:[a2]; "
     "match a:[a2,a3]; match a:[a3]", 0, 0},
    {"loop_begin_consecutive", "begin a " A " one_or_more consecutive; skip no_skip;",
     "a1:a@1 a2:a@2 x:x@3 a3:a@4",
     "match a:[a1]; match a:[a1,a2]; match a:[a2]; match a:[a3]", 0, 0},

    /* ---- ports of worked examples (Flink docs and ITCases, own cases) -------- */
    {"docs_strict_abc", "begin a " A "; next b " B "; skip no_skip;",
     "a1:a@1 c:c@2 b1:b@3 b2:b@4", "", 0, 0},
    {"docs_relaxed_abc", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 c:c@2 b1:b@3 b2:b@4", "match a:[a1] b:[b1]", 0, 0},
    {"docs_any_abc", "begin a " A "; followed_by_any b " B "; skip no_skip;",
     "a1:a@1 c:c@2 b1:b@3 b2:b@4", "match a:[a1] b:[b1]; match a:[a1] b:[b2]", 0, 0},
    {"docs_skip_no_skip", "begin b " B " one_or_more; next c " C "; skip no_skip;",
     "b1:b@1 b2:b@2 b3:b@3 c1:c@4",
     "match b:[b1,b2,b3] c:[c1]; match b:[b2,b3] c:[c1]; match b:[b3] c:[c1]", 0, 0},
    {"docs_skip_past_last", "begin b " B " one_or_more; next c " C ";",
     "b1:b@1 b2:b@2 b3:b@3 c1:c@4", "match b:[b1,b2,b3] c:[c1]", 0, 0},
    {"itcase_start_middle_end", "begin s where n == \"start\"; followed_by m where n == \"middle\" and v > 5; followed_by e where n == \"end\"; skip no_skip;",
     "s1:start@1 m1:middle@2,v=3 m2:middle@3,v=7 x:x@4 e1:end@5",
     "match s:[s1] m:[m2] e:[e1]", 0, 0},
    {"itcase_branching", "begin s where n == \"start\"; followed_by_any m where n == \"middle\"; followed_by_any e where n == \"end\"; skip no_skip;",
     "s1:start@1 m1:middle@2 m2:middle@3 e1:end@4 e2:end@5",
     "match s:[s1] m:[m1] e:[e1]; match s:[s1] m:[m1] e:[e2]; match s:[s1] m:[m2] e:[e1]; match s:[s1] m:[m2] e:[e2]", 0, 0},
    {"itcase_zero_or_more_between", "begin s " C "; followed_by m " A " one_or_more optional; followed_by e " B "; skip no_skip;",
     "c1:c@1 a1:a@2 a2:a@3 b1:b@4",
     "match s:[c1] e:[b1]; match s:[c1] m:[a1] e:[b1]; match s:[c1] m:[a1,a2] e:[b1]", 0, 0},
    {"itcase_times_optional_end", "begin s " C "; followed_by m " A " times 2 optional; skip no_skip;",
     "c1:c@1 a1:a@2 a2:a@3", "match s:[c1]; match s:[c1] m:[a1,a2]", 0, 0},
    /* GreedyITCase (no_skip, Flink's default): c a* d */
    {"greedy_zero_or_more", "begin c " C "; followed_by m " A " one_or_more optional greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 a3:a@4 d:d@5", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_zero_or_more_in_between", "begin c " C "; followed_by m " A " one_or_more optional greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 x1:x@2 a1:a@3 x2:x@4 a2:a@5 x3:x@6 a3:a@7 d:d@8", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_zero_or_more_dummy_after", "begin c " C "; followed_by m " A " one_or_more optional greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 x:x@4 d:d@5", "match c:[c] m:[a1,a2] e:[d]", 0, 0},
    {"greedy_zero_or_more_dummy_before", "begin c " C "; followed_by m " A " one_or_more optional greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 x:x@2 d:d@5", "match c:[c] e:[d]", 0, 0},
    {"greedy_until_zero_or_more_after", "begin c " C "; followed_by m " A " one_or_more optional greedy until p > 3; followed_by e " D "; skip no_skip;",
     "c:c@1,p=1 a1:a@2,p=2 a2:a@3,p=3 a3:a@4,p=3 a4:a@5,p=4 d:d@6,p=3", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_until_zero_or_more_before", "begin c " C "; followed_by m " A " one_or_more optional greedy until p > 3; followed_by e " D "; skip no_skip;",
     "c:c@1,p=1 a4:a@2,p=4 a1:a@3,p=2 a2:a@4,p=3 a3:a@5,p=3 d:d@6,p=3", "match c:[c] e:[d]", 0, 0},
    {"greedy_one_or_more", "begin c " C "; followed_by m " A " one_or_more greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 a3:a@4 d:d@5", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_one_or_more_in_between", "begin c " C "; followed_by m " A " one_or_more greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 x1:x@2 a1:a@3 x2:x@4 a2:a@5 x3:x@6 a3:a@7 d:d@8", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_one_or_more_dummy_after", "begin c " C "; followed_by m " A " one_or_more greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 x:x@4 d:d@5", "match c:[c] m:[a1,a2] e:[d]", 0, 0},
    {"greedy_one_or_more_dummy_before", "begin c " C "; followed_by m " A " one_or_more greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 x:x@2 d:d@5", "", 0, 0},
    {"greedy_until_one_or_more_after", "begin c " C "; followed_by m " A " one_or_more greedy until p > 3; followed_by e " D "; skip no_skip;",
     "c:c@1,p=1 a1:a@2,p=2 a2:a@3,p=3 a3:a@4,p=3 a4:a@5,p=4 d:d@6,p=3", "match c:[c] m:[a1,a2,a3] e:[d]", 0, 0},
    {"greedy_until_one_or_more_before", "begin c " C "; followed_by m " A " one_or_more greedy until p > 3; followed_by e " D "; skip no_skip;",
     "c:c@1,p=1 a4:a@2,p=4 a1:a@3,p=2 a2:a@4,p=3 a3:a@5,p=3 d:d@6,p=3", "", 0, 0},
    {"greedy_end_zero_or_more", "begin c " C "; followed_by m " A " one_or_more optional greedy; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 x:x@4 a3:a@5",
     "match c:[c]; match c:[c] m:[a1]; match c:[c] m:[a1,a2]; match c:[c] m:[a1,a2,a3]", 0, 0},
    {"greedy_end_zero_or_more_consecutive", "begin c " C "; followed_by m " A " one_or_more optional consecutive greedy; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 x:x@4 a3:a@5",
     "match c:[c]; match c:[c] m:[a1]; match c:[c] m:[a1,a2]", 0, 0},
    {"greedy_end_times_range", "begin c " C "; followed_by m " A " times 2..5 greedy; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 a3:a@4 a4:a@5 x:x@6",
     "match c:[c] m:[a1,a2]; match c:[c] m:[a1,a2,a3]; match c:[c] m:[a1,a2,a3,a4]", 0, 0},
    {"greedy_times_range_between", "begin c " C "; followed_by m " A " times 2..5 greedy; followed_by e " D "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 a3:a@4 a4:a@5 d:d@6", "match c:[c] m:[a1,a2,a3,a4] e:[d]", 0, 0},
    /* UntilConditionITCase (no_skip): c a+ until(price == 5) followed by the breaking event */
    {"until_fb_one_or_more", "begin c " C "; followed_by m " A " one_or_more until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1] e:[brk]", 0, 0},
    {"until_fb_one_or_more_combinations", "begin c " C "; followed_by m " A " one_or_more allow_combinations until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 a3:a@5,p=4 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2,a3] e:[brk]; match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1,a3] e:[brk]; match c:[c] m:[a1] e:[brk]", 0, 0},
    {"until_fb_one_or_more_consecutive", "begin c " C "; followed_by m " A " one_or_more consecutive until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1] e:[brk]", 0, 0},
    {"until_fb_one_or_more_consecutive2", "begin c " C "; followed_by m " A " one_or_more consecutive until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 b:b@4,p=3 a3:a@5,p=4 brk:a@7,p=5 ign:a@8,p=6", "match c:[c] m:[a1] e:[brk]", 0, 0},
    {"until_fb_zero_or_more", "begin c " C "; followed_by m " A " one_or_more optional until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1] e:[brk]; match c:[c] e:[brk]", 0, 0},
    {"until_fb_zero_or_more_combinations", "begin c " C "; followed_by m " A " one_or_more optional allow_combinations until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 a3:a@5,p=4 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2,a3] e:[brk]; match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1,a3] e:[brk]; match c:[c] m:[a1] e:[brk]; match c:[c] e:[brk]", 0, 0},
    {"until_fb_zero_or_more_consecutive", "begin c " C "; followed_by m " A " one_or_more optional consecutive until p == 5; followed_by e where p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2] e:[brk]; match c:[c] m:[a1] e:[brk]; match c:[c] e:[brk]", 0, 0},
    {"until_fb_any_one_or_more", "begin c " C "; followed_by_any m " A " one_or_more until p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 a3:a@7,p=6", "match c:[c] m:[a1,a2]; match c:[c] m:[a1]; match c:[c] m:[a2]; match c:[c] m:[a3]", 0, 0},
    {"until_fb_any_zero_or_more", "begin c " C "; followed_by_any m " A " one_or_more optional until p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 brk:a@6,p=5 a3:a@7,p=6", "match c:[c] m:[a1,a2]; match c:[c] m:[a1]; match c:[c] m:[a2]; match c:[c] m:[a3]; match c:[c]", 0, 0},
    {"until_empty_where", "begin c " C "; followed_by m one_or_more until p == 5; skip no_skip;",
     "c:c@1,p=1 a1:a@3,p=2 a2:a@4,p=3 d:d@5,p=1 brk:a@6,p=5 ign:a@7,p=6", "match c:[c] m:[a1,a2,d]; match c:[c] m:[a1,a2]; match c:[c] m:[a1]", 0, 0},
    /* NotPatternITCase (no_skip) */
    {"notp_not_next_at_end_none", "begin a " A "; followed_by_any c " C "; followed_by_any d " D "; not_next x " B "; skip no_skip;",
     "a1:a@1 c1:c@2 c2:c@3 d:d@4 b1:b@5", "", 0, 0},
    {"notp_not_followed_by_before_optional", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " optional; followed_by d " D "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3 c2:c@4 d:d@5", "match a:[a1] c:[c1] d:[d]", 0, 0},
    {"notp_times_with_not_followed_by", "begin a " A "; followed_by_any b " B " times 2; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@1 b1:b@2 c:c@3 b2:b@4 d:d@5", "", 0, 0},
    {"notp_ignore_state_of_times", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " times 2 optional; followed_by d " D "; skip no_skip;",
     "a1:a@1 d1:d@2 e:e@3 b1:b@4 c1:c@5 c2:c@6 d2:d@7", "match a:[a1] d:[d1]", 0, 0},
    {"notp_times_with_not_followed_by_after", "begin a " A "; followed_by_any b " B " times 2; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@1 d1:d@2 e:e@3 b1:b@4 b2:b@5 c1:c@6 d2:d@7", "", 0, 0},
    {"notp_before_optional_at_end", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " optional; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3 c2:c@4", "match a:[a1] c:[c1]; match a:[a1]", 0, 0},
    {"notp_before_optional_times", "begin a " A "; not_followed_by x " B "; followed_by_any c " C " times 2 optional; followed_by d " D "; skip no_skip;",
     "a1:a@1 c1:c@2 b1:b@3 c2:c@4 d:d@5", "match a:[a1] c:[c1,c2] d:[d]", 0, 0},
    {"notp_branching_at_start", "begin a " A "; not_followed_by x " B "; followed_by c " C "; followed_by d " D "; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3 a2:a@4 c2:c@5 d:d@6", "match a:[a2] c:[c2] d:[d]", 0, 0},
    {"notp_not_next_after_loop_next", "begin a " A "; followed_by b " B " one_or_more; not_next x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 c1:c@2 b2:b@3 d1:d@4", "", 0, 0},
    {"notp_not_next_after_loop_any", "begin a " A "; followed_by_any b " B " one_or_more; not_next x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 c1:c@2 b2:b@3 d1:d@4", "match a:[a1] b:[b2] d:[d1]", 0, 0},
    {"notp_not_followed_by_after_loop_next", "begin a " A "; followed_by b " B " one_or_more; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 b2:b@2 b3:b@3 c1:c@4 b4:b@5 b5:b@6 b6:b@7 d1:d@8", "", 0, 0},
    {"notp_not_followed_by_after_loop_any", "begin a " A "; followed_by_any b " B " one_or_more; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 b2:b@2 b3:b@3 c1:c@4 b4:b@5 b5:b@6 b6:b@7 d1:d@8",
     "match a:[a1] b:[b4,b5,b6] d:[d1]; match a:[a1] b:[b4,b5] d:[d1]; match a:[a1] b:[b4] d:[d1]; "
     "match a:[a1] b:[b5,b6] d:[d1]; match a:[a1] b:[b5] d:[d1]; match a:[a1] b:[b6] d:[d1]", 0, 0},
    {"notp_not_followed_by_after_combinations_next", "begin a " A "; followed_by b " B " one_or_more allow_combinations; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 b2:b@2 b3:b@3 c1:c@4 b4:b@5 b5:b@6 b6:b@7 d1:d@8", "", 0, 0},
    {"notp_not_followed_by_after_combinations_any", "begin a " A "; followed_by_any b " B " one_or_more allow_combinations; not_followed_by x " C "; followed_by d " D "; skip no_skip;",
     "a1:a@0 b1:b@1 b2:b@2 b3:b@3 c1:c@4 b4:b@5 b5:b@6 b6:b@7 d1:d@8",
     "match a:[a1] b:[b4,b5,b6] d:[d1]; match a:[a1] b:[b4,b5] d:[d1]; match a:[a1] b:[b4,b6] d:[d1]; match a:[a1] b:[b4] d:[d1]; "
     "match a:[a1] b:[b5,b6] d:[d1]; match a:[a1] b:[b5] d:[d1]; match a:[a1] b:[b6] d:[d1]", 0, 0},
    /* AfterMatchSkipITCase */
    {"skipit_to_first_times", "begin s where n == \"ab\" times 2; next e where n == \"ab\" times 2; skip to_first e;",
     "ab1:ab@1 ab2:ab@2 ab3:ab@3 ab4:ab@4 ab5:ab@5 ab6:ab@6",
     "match s:[ab1,ab2] e:[ab3,ab4]; match s:[ab3,ab4] e:[ab5,ab6]", 0, 0},
    {"skipit_to_last_times", "begin s where n == \"ab\" times 2; next e where n == \"ab\" times 2; skip to_last e;",
     "ab1:ab@1 ab2:ab@2 ab3:ab@3 ab4:ab@4 ab5:ab@5 ab6:ab@6 ab7:ab@7",
     "match s:[ab1,ab2] e:[ab3,ab4]; match s:[ab4,ab5] e:[ab6,ab7]", 0, 0},
    {"skipit_past_last_any_chain", "begin a where contains(n, \"a\"); followed_by_any b where contains(n, \"b\"); followed_by_any c where contains(n, \"c\"); followed_by d where contains(n, \"d\"); skip past_last_event;",
     "a1:a1@1 a2:a2@2 b1:b1@3 b2:b2@4 c1:c1@5 c2:c2@6 d1:d1@7 d2:d2@7",
     "match a:[a1] b:[b1] c:[c1] d:[d1]", 0, 0},
    {"skipit_past_last_strict", "begin a where contains(n, \"a\"); next b where contains(n, \"b\"); skip past_last_event;",
     "a1:a1@1 c:c@2 a2:a2@3 b2:b2@4", "match a:[a2] b:[b2]", 0, 0},
    {"skipit_to_first_optional_loop", "begin x where contains(n, \"x\") one_or_more optional; next b where contains(n, \"b\"); next c where contains(n, \"c\"); skip to_first b;",
     "ab1:ab1@1 c1:c1@2 ab2:ab2@3 c2:c2@4", "match b:[ab1] c:[c1]; match b:[ab2] c:[c2]", 0, 0},
    {"skipit_to_first_at_start", "begin b where contains(n, \"b\"); next c where contains(n, \"c\"); skip to_first b;",
     "ab1:ab1@1 c1:c1@2 ab2:ab2@3 c2:c2@4", "match b:[ab1] c:[c1]; match b:[ab2] c:[c2]", 0, 0},
    {"skipit_to_first_one_or_more", "begin a where contains(n, \"a\"); next b where contains(n, \"b\") one_or_more consecutive; skip to_first b;",
     "a1:a1@1 b1:b1@2 a2:a2@3 b2:b2@4 b3:b3@5 a3:a3@6 b4:b4@7",
     "match a:[a1] b:[b1]; match a:[a2] b:[b2]; match a:[a3] b:[b4]", 0, 0},
    {"skipit_to_first_missing", "begin a where contains(n, \"a\"); next b where contains(n, \"b\") one_or_more optional consecutive; next c where contains(n, \"c\"); skip to_first b;",
     "a:a@1 c:c@4", "match a:[a] c:[c]", 0, 0},
    {"skipit_to_last_missing", "begin a where contains(n, \"a\"); next b where contains(n, \"b\") one_or_more optional consecutive; next c where contains(n, \"c\"); skip to_last b;",
     "a:a@1 c:c@4", "match a:[a] c:[c]", 0, 0},
    /* NFAITCase: windows and timeouts (1 ms there is 1 s here) */
    {"nfait_window_first_last", "begin s where n == \"start\"; followed_by m where n == \"middle\"; followed_by e where n == \"end\"; within 10s; skip no_skip;",
     "s1:start@1 s2:start@2 m:middle@3 f:foobar@4 e1:end@11 e2:end@13", "timeout@11000 s:[s1] m:[m]; match@11000 s:[s2] m:[m] e:[e1]", T, 0},
    {"nfait_window_previous_current", "begin s where n == \"start\"; followed_by m where n == \"middle\"; followed_by e where n == \"end\" within 9s; skip no_skip;",
     "s1:start@1 s2:start@2 m:middle@3 f:foobar@4 e1:end@11 e2:end@13", "match@11000 s:[s1] m:[m] e:[e1]; match@11000 s:[s2] m:[m] e:[e1]", T, 0},
    {"nfait_timeouts_first_last", "begin s where n == \"start\"; followed_by_any m where n == \"middle\"; followed_by_any e where n == \"end\"; within 10s; skip no_skip;",
     "s1:start@1 s2:start@2 m:middle@3 f:foobar@4 e1:end@11 e2:end@13", "timeout@11000 s:[s1] m:[m]; timeout@11000 s:[s1]; timeout@12000 s:[s2] m:[m]; timeout@12000 s:[s2]; "
     "match@11000 s:[s2] m:[m] e:[e1]", T, 0},
    {"nfait_timeouts_previous_current", "begin s where n == \"start\"; followed_by_any m where n == \"middle\"; followed_by_any e where n == \"end\" within 10s; skip no_skip;",
     "s1:start@1 s2:start@2 m:middle@3 f:foobar@4 e1:end@11 e2:end@13", "match@11000 s:[s1] m:[m] e:[e1]; match@11000 s:[s2] m:[m] e:[e1]; timeout@13000 s:[s1] m:[m]; "
     "timeout@13000 s:[s2] m:[m]", T, 0},
    {"nfait_pending_first_last", "begin s where n == \"start\"; not_followed_by m where n == \"middle\"; within 5s; skip no_skip;",
     "s1:start@1 m2:middle@4 s3:start@5 s4:start@11 m5:middle@18", "match@10000 s:[s3]; match@16000 s:[s4]", T, 0},
    {"nfait_pending_previous_current", "begin s where n == \"start\"; not_followed_by m where n == \"middle\" within 5s; skip no_skip;",
     "s1:start@1 m2:middle@4 s3:start@5 s4:start@11 m5:middle@18", "match@10000 s:[s3]; match@16000 s:[s4]", T, 0},
    /* TimesOrMoreITCase */
    {"tom_combinations", "begin c " C "; followed_by m " A " times 2+ allow_combinations; followed_by e " B "; skip no_skip;",
     "c:c@1 a1:a@2 a2:a@3 a3:a@4 b:b@6",
     "match c:[c] m:[a1,a2,a3] e:[b]; match c:[c] m:[a1,a2] e:[b]; match c:[c] m:[a1,a3] e:[b]", 0, 0},
    {"tom_non_strict", "begin c " C "; followed_by_any m " A " times 2+ allow_combinations; followed_by e " B "; skip no_skip;",
     "c:c@1 f1:f@2 a1:a@3 f2:f@4 a2:a@5 a3:a@6 b:b@7",
     "match c:[c] m:[a1,a2,a3] e:[b]; match c:[c] m:[a1,a2] e:[b]; match c:[c] m:[a1,a3] e:[b]; match c:[c] m:[a2,a3] e:[b]", 0, 0},
    {"tom_strict", "begin c " C "; followed_by_any m " A " times 2 consecutive; followed_by e " B "; skip no_skip;",
     "c:c@1 f1:f@2 a1:a@3 f2:f@4 a2:a@5 a3:a@6 b:b@7", "match c:[c] m:[a2,a3] e:[b]", 0, 0},
    {"tom_strict_optional", "begin c " C "; followed_by_any m " A " times 2+ consecutive optional; followed_by e " B "; skip no_skip;",
     "c:c@1 f1:f@2 a1:a@3 f2:f@4 a2:a@5 a3:a@6 b:b@7", "match c:[c] m:[a2,a3] e:[b]; match c:[c] e:[b]", 0, 0},
    {"esper_every_a_b", "begin a " A "; followed_by b " B "; skip no_skip;",
     "a1:a@1 b1:b@2 a2:a@3 x:x@4 a3:a@5 b2:b@6",
     "match a:[a1] b:[b1]; match a:[a2] b:[b2]; match a:[a3] b:[b2]", 0, 0},
    /* ---- greedy loops with until -------------------------------------------- */
    /* until stops the loop at c1, which the next step then takes; greedy leaves no
     * match that proceeds while the loop could still take an event */
    {"greedy_until", "begin a " A "; next b where n == \"b\" or n == \"c\" one_or_more greedy"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4", "match a:[a1] b:[b1,b2] c:[c1]", 0, 0},
    {"not_greedy_until", "begin a " A "; next b where n == \"b\" or n == \"c\" one_or_more"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 c1:c@4",
     "match a:[a1] b:[b1,b2] c:[c1]; match a:[a1] b:[b1] c:[c1]", 0, 0},
    {"greedy_times_until", "begin a " A "; next b where n == \"b\" or n == \"c\" times 2+ greedy"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 c1:c@5", "match a:[a1] b:[b1,b2,b3] c:[c1]", 0, 0},
    {"times_until", "begin a " A "; next b where n == \"b\" or n == \"c\" times 2+"
     " until n == \"c\"; followed_by c " C "; skip no_skip;",
     "a1:a@1 b1:b@2 b2:b@3 b3:b@4 c1:c@5",
     "match a:[a1] b:[b1,b2,b3] c:[c1]; match a:[a1] b:[b1,b2] c:[c1]", 0, 0},

    /* ---- a tail of several optional steps completes at once ------------------ */
    {"optional_tail_relaxed", "begin a " A "; followed_by b " B " optional;"
     " followed_by c " C " optional; skip no_skip;",
     "a1:a@1 b1:b@2 c1:c@3",
     "match a:[a1]; match a:[a1] b:[b1]; match a:[a1] b:[b1] c:[c1]; match a:[a1] c:[c1]", 0, 0},
    {"optional_tail_strict", "begin a " A "; next b " B " optional; next c " C " optional;"
     " skip no_skip;",
     "a1:a@1 c1:c@2 a2:a@3 b2:b@4 c2:c@5",
     "match a:[a1]; match a:[a1] c:[c1]; match a:[a2]; match a:[a2] b:[b2];"
     "match a:[a2] b:[b2] c:[c2]", 0, 0},

    /* ---- `in` lists and count_distinct over non-numbers ------------------------ */
    {"in_with_booleans", "begin a where f in [true, 2]; skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=2 a4:a@4 a5:a@5,f=\"true\" a6:a@6,f=null",
     "match a:[a1]; match a:[a3]", 0, 0},
    {"in_with_null_never_holds", "begin a where f in [null, 1, false]; skip no_skip;",
     "a1:a@1,f=null a2:a@2 a3:a@3,f=1 a4:a@4,f=false a5:a@5,f=0",
     "match a:[a3]; match a:[a4]", 0, 0},
    {"not_in_with_booleans", "begin a where not (f in [true]); skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=\"x\"", "match a:[a2]; match a:[a3]", 0, 0},
    {"count_distinct_booleans", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f=true a2:a@2,f=false a3:a@3,f=true c1:c@4 "
     "a4:a@5,f=true a5:a@6,f=true a6:a@7,f=true c2:c@8",
     "match a:[a1,a2,a3] c:[c1]", 0, 0},
    {"count_distinct_objects", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f={\"x\":1} a2:a@2,f={\"x\":2} a3:a@3,f={\"x\":1} c1:c@4 "
     "a4:a@5,f={\"x\":1} a5:a@6,f={\"x\":1} a6:a@7,f={\"x\":1} c2:c@8",
     "match a:[a1,a2,a3] c:[c1]", 0, 0},
    {"count_distinct_arrays", "begin a " A " times 3 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 3; skip no_skip;",
     "a1:a@1,f=[1] a2:a@2,f=[2] a3:a@3,f=[] c1:c@4 "
     "a4:a@5,f=[1] a5:a@6,f=[2] a6:a@7,f=[2] c2:c@8",
     "match a:[a1,a2,a3] c:[c1]", 0, 0},
    /* null and missing values are not counted; a string "1" is not the number 1 */
    {"count_distinct_skips_nulls", "begin a " A " times 4 consecutive;"
     " next c where n == \"c\" and count_distinct(a.f) == 2; skip no_skip;",
     "a1:a@1,f=null a2:a@2 a3:a@3,f=1 a4:a@4,f=\"1\" c1:c@5", "match a:[a1,a2,a3,a4] c:[c1]", 0, 0},
};

#define N_CASES (sizeof cases / sizeof cases[0])

static char *rule_text(const SemCase *c)
{
    static const char fmt[] = "time ts;\nrule r { %s on match alert \"m\"; }\n";
    size_t n = sizeof fmt + strlen(c->body);
    char *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    snprintf(t, n, fmt, c->body);
    return t;
}

START_TEST(test_case)
{
    const SemCase *c = &cases[_i];
    char *text = rule_text(c);
    char *err = NULL;
    NfaHarness *h = nh_new(text, c->flags, c->cap, &err);
    ck_assert_msg(h != NULL, "%s: %s", c->name, err ? err : "?");
    ck_assert_msg(nh_feed_compact(h, c->events, &err), "%s: %s", c->name, err ? err : "?");
    nh_advance(h, INT64_MAX);
    char *diff = nh_diff(h, c->expect);
    ck_assert_msg(diff == NULL, "%s:%s", c->name, diff ? diff : "");
    ck_assert_msg(nh_idle(h), "%s: state left after end of input", c->name);
    ck_assert_uint_eq(nh_live(h), 0);
    nh_free(h);
    free(text);
}
END_TEST

/* ---- cases that look inside the run ------------------------------------------- */

static NfaHarness *harness(const char *body, int flags, size_t cap)
{
    SemCase c = {.body = body};
    char *text = rule_text(&c);
    char *err = NULL;
    NfaHarness *h = nh_new(text, flags, cap, &err);
    ck_assert_msg(h != NULL, "%s", err ? err : "?");
    free(text);
    return h;
}

static void feed(NfaHarness *h, const char *events)
{
    char *err = NULL;
    ck_assert_msg(nh_feed_compact(h, events, &err), "%s", err ? err : "?");
}

START_TEST(test_holdback_waits)
{
    NfaHarness *h = harness("begin a " A "; followed_by b where n == \"b\" and v == a.v;", 0, 0);
    feed(h, "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2");
    size_t n;
    nh_results(h, &n);
    ck_assert_uint_eq(n, 0);                 /* a1 started earlier and is pending */
    ck_assert(!nh_idle(h));
    feed(h, "b1:b@4,v=1");
    char *diff = nh_diff(h, "match a:[a1] b:[b1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    nh_free(h);
}
END_TEST

START_TEST(test_no_skip_emits_at_once)
{
    NfaHarness *h = harness("begin a " A "; followed_by b where n == \"b\" and v == a.v; skip no_skip;", 0, 0);
    feed(h, "a1:a@1,v=1 a2:a@2,v=2 b2:b@3,v=2");
    char *diff = nh_diff(h, "match a:[a2] b:[b2]");
    ck_assert_msg(diff == NULL, "%s", diff);
    nh_free(h);
}
END_TEST

START_TEST(test_counters_and_idle)
{
    NfaHarness *h = harness("begin a " A "; followed_by b " B "; skip no_skip;", 0, 0);
    feed(h, "x:x@1");
    ck_assert(nh_idle(h));                   /* an event that starts nothing allocates nothing */
    feed(h, "a1:a@2 a2:a@3");
    ck_assert_uint_eq(nh_live(h), 2);
    feed(h, "b1:b@4");
    ck_assert_uint_eq(nh_live(h), 0);
    ck_assert(nh_idle(h));
    nh_free(h);
}
END_TEST

START_TEST(test_cap_counts_drops)
{
    NfaHarness *h = harness("begin a " A "; followed_by_any b " B "; skip no_skip;", 0, 2);
    feed(h, "a1:a@1 a2:a@2 a3:a@3 a4:a@4");
    ck_assert_uint_eq(nh_live(h), 2);
    ck_assert_uint_eq(nh_dropped(h), 2);
    nh_free(h);
}
END_TEST

START_TEST(test_key_cap_counts_hits)
{
    NfaHarness *h = harness("begin a " A "; followed_by_any b " B "; skip no_skip;", 0, 2);
    feed(h, "a1:a@1 a2:a@2 a3:a@3 x:x@4 a4:a@5");
    const NfaCounters *c = nh_counters(h);
    ck_assert_uint_eq(c->partials_dropped, 2);
    ck_assert_uint_eq(c->cap_hits, 2);          /* a3 and a4; x dropped nothing */
    ck_assert_uint_eq(c->partials_refused, 0);
    nh_free(h);
}
END_TEST

/* The per-rule cap counts every key of the rule: at the cap, no key starts a new
 * partial match, but live ones still advance and complete. */
START_TEST(test_rule_cap_refuses_new_starts)
{
    NfaHarness *h = harness("begin a " A "; followed_by b " B "; skip no_skip;", 0, 0);
    nh_limits(h)->max_partials_per_rule = 3;
    feed(h, "a1:a@1 a2:a@2");                 /* key 0: two partial matches */
    nh_use_key(h, 1);
    feed(h, "a3:a@3 a4:a@4 a5:a@5");          /* key 1: one fits, two refused */
    const NfaCounters *c = nh_counters(h);
    ck_assert_uint_eq(nh_live(h), 3);
    ck_assert_uint_eq(c->partials_refused, 2);
    ck_assert_uint_eq(c->partials_dropped, 2);
    ck_assert_uint_eq(c->cap_hits, 2);
    nh_use_key(h, 0);
    feed(h, "b1:b@6");                        /* key 0 completes both: room again */
    ck_assert_uint_eq(nh_live(h), 1);
    nh_use_key(h, 1);
    feed(h, "a6:a@7 b2:b@8");
    char *diff = nh_diff(h, "match a:[a1] b:[b1]; match a:[a2] b:[b1];"
                            "match a:[a3] b:[b2]; match a:[a6] b:[b2]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert_uint_eq(c->partials_refused, 2);
    nh_free(h);
}
END_TEST

/* An idle key starting its first partial match goes a short way (key_step): at the
 * rule's cap it is refused there too. */
START_TEST(test_rule_cap_refuses_an_idle_key)
{
    NfaHarness *h = harness("begin a " A "; followed_by b " B "; skip no_skip;", 0, 0);
    nh_limits(h)->max_partials_per_rule = 2;
    feed(h, "a1:a@1 a2:a@2");                 /* key 0 fills the cap */
    nh_use_key(h, 1);
    feed(h, "a3:a@3");                        /* key 1, idle: refused */
    const NfaCounters *c = nh_counters(h);
    ck_assert_uint_eq(nh_live(h), 2);
    ck_assert_uint_eq(c->partials_refused, 1);
    ck_assert_uint_eq(c->cap_hits, 1);
    nh_use_key(h, 0);
    feed(h, "b1:b@4");                        /* key 0 completes both: room again */
    nh_use_key(h, 1);
    feed(h, "a4:a@5 b2:b@6");
    char *diff = nh_diff(h, "match a:[a1] b:[b1]; match a:[a2] b:[b1]; match a:[a4] b:[b2]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert_uint_eq(c->partials_refused, 1);
    nh_free(h);
}
END_TEST

/* Unset, the per-rule cap is the documented default, far above this test's load. */
START_TEST(test_rule_cap_default)
{
    NfaHarness *h = harness("begin a " A "; followed_by_any b " B "; skip no_skip;", 0, 0);
    for (int i = 0; i < 2000; i++) {
        char ev[32];
        snprintf(ev, sizeof ev, "a%d:a@%d", i, i + 1);
        feed(h, ev);
    }
    ck_assert_uint_eq(nh_live(h), 2000);
    ck_assert_uint_eq(nh_counters(h)->cap_hits, 0);
    ck_assert_uint_eq(nh_dropped(h), 0);
    nh_free(h);
}
END_TEST

/* Runs the rules of `text` over `events` twice, each rule testing its own conditions
 * (*plain) and through the shared condition cache (*shared), both to the end of time;
 * the results must be the same. The caller frees both harnesses. */
static size_t run_plain_and_shared(const char *text, const char *events, NfaHarness **plain,
                                   NfaHarness **shared)
{
    char *err = NULL;
    *plain = nh_new(text, NH_WITH_RULE | NH_WITH_TIME, 0, &err);
    ck_assert_msg(*plain != NULL, "%s", err ? err : "?");
    *shared = nh_new(text, NH_WITH_RULE | NH_WITH_TIME | NH_SHARE_CONDS, 0, &err);
    ck_assert_msg(*shared != NULL, "%s", err ? err : "?");
    feed(*plain, events);
    feed(*shared, events);
    nh_advance(*plain, INT64_MAX);
    nh_advance(*shared, INT64_MAX);
    size_t n_results;
    char *diff = nh_same_results(*plain, *shared, &n_results);
    ck_assert_msg(diff == NULL, "shared conditions changed the results: %s", diff);
    return n_results;
}

/* Rules sharing condition texts give the same results with and without the
 * shared cache, and the cache answers the repeated conditions. */
START_TEST(test_shared_conditions)
{
    static const char *const text =
        "rule r1 { begin a where n == \"a\"; followed_by b where n == \"b\"; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r2 { begin a where n == \"a\"; next b where n == \"b\" or n == \"c\";"
        " skip no_skip; on match alert \"m\"; }\n"
        "rule r3 { begin x where n == \"a\"; followed_by y where n == \"b\" and count(x) > 0"
        " times 2; skip no_skip; on match alert \"m\"; }\n"
        "rule r4 { filter n != \"c\"; begin a where n == \"a\"; followed_by b where n == \"b\";"
        " within 5s; on match alert \"m\"; on timeout alert \"t\"; }\n";
    static const char *const events =
        "a1:a@1 b1:b@2 c1:c@3 a2:a@4 c2:c@5 b2:b@6 b3:b@7 a3:a@8 x1:x@9 !20 a4:a@21 b4:b@22";
    NfaHarness *plain, *shared;
    size_t n_results = run_plain_and_shared(text, events, &plain, &shared);
    /* n == "a" in four rules, n == "b" in r1 and r4 (r3's reads the match) */
    ck_assert_uint_eq(nfa_cond_share_groups(nh_share(shared)), 2);
    ck_assert_uint_gt(n_results, 5);
    ck_assert_uint_gt(nfa_cond_cache_hits(nh_cache(shared)), 0);
    nh_free(plain);
    nh_free(shared);
}
END_TEST

/* Range conditions on fields whose names are prefixes of each other (`amount`,
 * `amount2`) and identical conditions in different rules are grouped by the shared
 * condition cache; results are the same as each rule testing its own. */
START_TEST(test_shared_prefix_fields)
{
    static const char *const text =
        "rule r1 { begin a where amount > 5; followed_by b where amount2 > 5; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r2 { begin a where amount2 > 5; next b where amount > 7; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r3 { begin a where amount > 7; followed_by b where amount2 >= 9; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r4 { begin a where amount > 5 and amount2 > 5; skip no_skip;"
        " on match alert \"m\"; }\n"
        "rule r5 { begin a where amount2 > 5; skip no_skip; on match alert \"m\"; }\n";
    static const char *const events =
        "e1:x@1,amount=6 e2:x@2,amount2=6 e3:x@3,amount=8 e4:x@4,amount2=9,amount=9 "
        "e5:x@5,amount=5,amount2=5 e6:x@6,amount2=10 e7:x@7,amount=\"8\"";
    NfaHarness *plain, *shared;
    run_plain_and_shared(text, events, &plain, &shared);
    /* r2's strict second step fails on e5 (5) and on e7 (a string is not > 7) */
    char *diff = nh_diff(plain,
        "r1|match@2000 a:[e1] b:[e2]; r1|match@4000 a:[e3] b:[e4];"
        "r1|match@6000 a:[e4] b:[e6];"
        "r2|match@3000 a:[e2] b:[e3];"
        "r3|match@4000 a:[e3] b:[e4]; r3|match@6000 a:[e4] b:[e6];"
        "r4|match@4000 a:[e4];"
        "r5|match@2000 a:[e2]; r5|match@4000 a:[e4]; r5|match@6000 a:[e6]");
    ck_assert_msg(diff == NULL, "%s", diff);
    nh_free(plain);
    nh_free(shared);
}
END_TEST

/* A match that completes at its first event waits behind an earlier partial match of
 * the same key (skip to_first: the earlier one may still come first). The rule's cap
 * of one partial match refuses the new match's own continuation, so the key holds a
 * single partial match and the waiting match at once. */
START_TEST(test_single_event_match_waits_behind_earlier_partial)
{
    NfaHarness *h = harness("begin a where n == \"s\" or n == \"x\";"
                            " followed_by b " B " optional; skip to_first a;", T, 0);
    nh_limits(h)->max_partials_per_rule = 1;
    feed(h, "s1:s@1 x1:x@2");
    /* [x1] is complete but held: [s1] may still grow into [s1 b] */
    char *diff = nh_diff(h, "match@1000 a:[s1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert_uint_eq(nh_live(h), 1);
    /* x1's continuation: refused by the rule cap (and counted as dropped too) */
    ck_assert_uint_eq(nh_counters(h)->partials_refused, 1);
    ck_assert_uint_eq(nh_dropped(h), 1);
    feed(h, "b1:b@3");
    diff = nh_diff(h, "match@1000 a:[s1]; match@3000 a:[s1] b:[b1]; match@2000 a:[x1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert(nh_idle(h));
    nh_free(h);
}
END_TEST

START_TEST(test_deadline)
{
    NfaHarness *h = harness("begin a " A "; followed_by b " B " within 2s; followed_by c " C "; within 10s; skip no_skip;", T, 0);
    ck_assert_int_eq(nh_deadline(h, 0), INT64_MAX);
    feed(h, "a1:a@1");
    /* rule within from a1 (11 s) and step within of b from a1 (3 s): the earlier */
    ck_assert_int_eq(nh_deadline(h, 0), 3000);
    nh_advance(h, 2999);
    size_t n;
    nh_results(h, &n);
    ck_assert_uint_eq(n, 0);
    nh_advance(h, 3000);
    char *diff = nh_diff(h, "timeout@3000 a:[a1]");
    ck_assert_msg(diff == NULL, "%s", diff);
    ck_assert(nh_idle(h));
    ck_assert_int_eq(nh_deadline(h, 0), INT64_MAX);
    feed(h, "a2:a@20 b2:b@21");
    /* now waiting for c: only the rule within from a2 is left */
    ck_assert_int_eq(nh_deadline(h, 0), 30000);
    nh_free(h);
}
END_TEST

START_TEST(test_compile_errors)
{
    static const char *const bad[] = {
        "begin a " A " optional; not_next x " B "; followed_by c " C ";",
        "begin a " A "; followed_by b " B " optional; not_followed_by x " B "; followed_by c " C ";",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        SemCase c = {.body = bad[i]};
        char *text = rule_text(&c);
        char *err = NULL;
        NfaHarness *h = nh_new(text, 0, 0, &err);
        ck_assert_msg(h == NULL, "accepted: %s", bad[i]);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(err, "optional") != NULL, "%s", err);
        free(err);
        free(text);
    }
}
END_TEST

/* ---- every combination: invariants ------------------------------------------
 * Each second-step kind x quantifier x following step x within, under every skip
 * strategy, runs over one pseudo-random stream. Whatever the results: every result
 * lists its events in input order; nothing is left after end of input; a skip
 * strategy only removes matches (its matches are a sub-multiset of no_skip's); and
 * past_last_event matches never share an event. */

static const char *const combo_kinds[] = {"next", "followed_by", "followed_by_any"};
static const char *const combo_quants[] = {
    "", "optional", "times 2", "times 1..2", "times 2 optional", "times 0..2", "one_or_more",
    "one_or_more optional", "one_or_more consecutive", "one_or_more allow_combinations",
    "one_or_more greedy", "times 1..3 greedy", "times 2+", "one_or_more until n == \"x\"",
};
static const char *const combo_tails[] = {
    "followed_by c " C ";",
    "next c " C ";",
    "not_followed_by x where n == \"x\"; followed_by c " C ";",
    "not_next x where n == \"x\"; followed_by c " C ";",
    "not_followed_by x where n == \"x\";",
    "",
};
static const char *const combo_skips[] = {"no_skip" /* first: the reference */, "to_next", "past_last_event", "to_first b",
                                          "to_last b"};
static const char *const combo_withins[] = {"", "within 3s;"};

#define N_KINDS (sizeof combo_kinds / sizeof *combo_kinds)
#define N_QUANTS (sizeof combo_quants / sizeof *combo_quants)
#define N_TAILS (sizeof combo_tails / sizeof *combo_tails)
#define N_SKIPS (sizeof combo_skips / sizeof *combo_skips)
#define N_WITHINS (sizeof combo_withins / sizeof *combo_withins)
#define N_COMBOS (N_KINDS * N_QUANTS * N_TAILS * N_WITHINS)

static void combo_events(char *out, size_t size)
{
    static const char names[] = "abcxab";
    unsigned x = 12345;
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < 40 && len + 32 < size; i++) {
        x = x * 1103515245u + 12345u;
        char n = names[(x >> 16) % 6];
        len += (size_t)snprintf(out + len, size - len, "e%02d:%c@%d.%d ", i, n, i / 2, (i % 2) * 5);
    }
}

/* Ids e00..e39 in a result must appear in strictly increasing order. */
static bool ids_in_order(const char *r)
{
    int last = -1;
    for (const char *p = strchr(r, 'e'); p; p = strchr(p + 1, 'e')) {
        if (p[1] < '0' || p[1] > '9')
            continue;
        int id = (p[1] - '0') * 10 + (p[2] - '0');
        if (id <= last)
            return false;
        last = id;
    }
    return true;
}

/* The match results of one rule body (timeouts left out); NULL if rejected. */
static char **combo_matches(const char *body, size_t *n)
{
    SemCase c = {.body = body};
    char *text = rule_text(&c);
    char *err = NULL;
    NfaHarness *h = nh_new(text, 0, 0, &err);
    free(text);
    if (!h) {
        /* rejected combinations: a negation after an optional step, a tail without within */
        ck_assert_msg(err && (strstr(err, "a negation after an optional step") ||
                              strstr(err, "step cannot follow the optional step") ||
                              strstr(err, "as the last step needs 'within'")),
                      "%s: %s", body, err ? err : "?");
        free(err);
        return NULL;
    }
    char events[2048];
    combo_events(events, sizeof events);
    ck_assert_msg(nh_feed_compact(h, events, &err), "%s: %s", body, err ? err : "?");
    nh_advance(h, INT64_MAX);
    ck_assert_msg(nh_idle(h), "%s: state left after end of input", body);
    ck_assert_uint_eq(nh_live(h), 0);
    size_t total;
    char **res = nh_results(h, &total);
    char **out = calloc(total + 1, sizeof *out);
    ck_assert_ptr_nonnull(out);
    *n = 0;
    for (size_t k = 0; k < total; k++) {
        ck_assert_msg(ids_in_order(res[k]), "%s: events out of order: %s", body, res[k]);
        if (!strncmp(res[k], "match", 5))
            out[(*n)++] = strdup(res[k]);
    }
    nh_free(h);
    return out;
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Sorted multisets: is every element of `sub` in `all`? */
static const char *not_included(char **sub, size_t n_sub, char **all, size_t n_all)
{
    size_t j = 0;
    for (size_t i = 0; i < n_sub; i++) {
        while (j < n_all && strcmp(all[j], sub[i]) < 0)
            j++;
        if (j == n_all || strcmp(all[j], sub[i]) != 0)
            return sub[i];
        j++;
    }
    return NULL;
}

/* past_last_event: no event belongs to two released matches. */
static void assert_disjoint(const char *body, char **v, size_t n)
{
    bool used[40] = {false};
    for (size_t i = 0; i < n; i++)
        for (const char *p = strchr(v[i], 'e'); p; p = strchr(p + 1, 'e')) {
            if (p[1] < '0' || p[1] > '9')
                continue;
            int id = (p[1] - '0') * 10 + (p[2] - '0');
            ck_assert_msg(!used[id], "%s: e%02d in two matches", body, id);
            used[id] = true;
        }
}

START_TEST(test_combination)
{
    size_t i = (size_t)_i;
    const char *within = combo_withins[i % N_WITHINS];
    i /= N_WITHINS;
    const char *tail = combo_tails[i % N_TAILS];
    i /= N_TAILS;
    const char *quant = combo_quants[i % N_QUANTS];
    const char *kind = combo_kinds[i / N_QUANTS];
    char **base = NULL;
    size_t n_base = 0;
    for (size_t k = 0; k < N_SKIPS; k++) {
        char body[512];
        snprintf(body, sizeof body, "begin a " A "; %s b " B " %s; %s %s skip %s;", kind, quant,
                 tail, within, combo_skips[k]);
        size_t n;
        char **m = combo_matches(body, &n);
        if (!m)
            return;   /* rejected whatever the skip strategy */
        if (k == 0) {
            base = m;   /* no_skip: every other strategy only prunes */
            n_base = n;
            continue;
        }
        const char *extra = not_included(m, n, base, n_base);
        ck_assert_msg(extra == NULL, "%s: '%s' is not a no_skip match", body, extra);
        if (!strcmp(combo_skips[k], "past_last_event"))
            assert_disjoint(body, m, n);
        free_strs(m, n);
    }
    free_strs(base, n_base);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nfa_semantics");
    TCase *tc = tcase_create("table");
    tcase_add_loop_test(tc, test_case, 0, (int)N_CASES);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("run");
    tcase_add_test(tr, test_holdback_waits);
    tcase_add_test(tr, test_no_skip_emits_at_once);
    tcase_add_test(tr, test_counters_and_idle);
    tcase_add_test(tr, test_cap_counts_drops);
    tcase_add_test(tr, test_key_cap_counts_hits);
    tcase_add_test(tr, test_rule_cap_refuses_new_starts);
    tcase_add_test(tr, test_rule_cap_refuses_an_idle_key);
    tcase_add_test(tr, test_rule_cap_default);
    tcase_add_test(tr, test_shared_conditions);
    tcase_add_test(tr, test_shared_prefix_fields);
    tcase_add_test(tr, test_single_event_match_waits_behind_earlier_partial);
    tcase_add_test(tr, test_deadline);
    tcase_add_test(tr, test_compile_errors);
    suite_add_tcase(s, tr);
    TCase *tcomb = tcase_create("combinations");
    tcase_add_loop_test(tcomb, test_combination, 0, (int)N_COMBOS);
    suite_add_tcase(s, tcomb);
    return check_run_suite(s);
}
