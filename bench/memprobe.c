/* bench/memprobe.c — heap bytes held per key and per live partial match.
 *
 * Owns its own engine run: it compiles RULES, feeds the JSON lines of stdin to an
 * engine (one worker, alerts counted and dropped), and BEFORE the end of input
 * (which would fire and free every pending match) reads the heap in use with
 * mallinfo2(), plus the resident bytes of the slab regions that base/slab.c maps
 * outside malloc (advised for huge pages, so flagged `hg` in /proc/self/smaps:
 * mallinfo2 does not see them). The difference from the heap after compiling is the
 * state that the events left behind; it prints that, the live keys and partial
 * matches, and the quotients, as one JSON object. `vigil run --stats` reports the
 * counters but not bytes, and peak RSS also counts the reorder buffer, allocator
 * slack and page granularity, hence this probe. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"

typedef struct Probe {
    uint64_t alerts, dead, late;
} Probe;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)rule, (void)key, (void)n_key, (void)r, (void)scratch;
    ((Probe *)user)->alerts++;
}

static void on_dead(void *user, const char *origin, uint64_t line_no, const char *reason,
                    const char *text, size_t len)
{
    (void)origin, (void)text, (void)len;
    ((Probe *)user)->dead++;
    fprintf(stderr, "memprobe: line %llu rejected: %s\n", (unsigned long long)line_no, reason);
}

static void on_late(void *user, const Event *ev, int64_t watermark_ms)
{
    (void)ev, (void)watermark_ms;
    ((Probe *)user)->late++;
}

/* Resident bytes of the mappings advised MADV_HUGEPAGE: the slab regions (nothing
 * else in this process asks for huge pages). A region's free slabs count as held,
 * as malloc's free chunks would not: the region is held until its last slab is back. */
static size_t slab_regions_resident(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return 0;
    char line[512];
    size_t total = 0, rss_kb = 0;
    while (fgets(line, sizeof line, f)) {
        size_t kb;
        if (sscanf(line, "Rss: %zu kB", &kb) == 1)
            rss_kb = kb;   /* of the mapping whose VmFlags come next */
        else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " hg"))
            total += rss_kb * 1024;
    }
    fclose(f);
    return total;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    /* small chunks in use + mmapped chunks + the slabs' own regions */
    return mi.uordblks + mi.hblkhd + slab_regions_resident();
}

static CompiledRuleSet *load_rules(const char *path)
{
    Diags diags;
    diags_init(&diags);
    const char *paths[] = {path};
    CompiledRuleSet *rs = ruleset_load(paths, 1, &diags);
    diags_print(&diags, stderr);
    diags_free(&diags);
    return rs;
}

/* Feeds stdin line by line; returns the number of lines, or -1 on an engine failure. */
static long long feed(Engine *e, uint64_t *line_bytes)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long long lines = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        size_t len = (size_t)n - (line[n - 1] == '\n');
        *line_bytes += len;
        if (engine_line(e, line, len, "stdin", (uint64_t)++lines, 0) < 0) {
            free(line);
            return -1;
        }
    }
    free(line);
    return lines;
}

static void live_state(const Engine *e, size_t n_rules, uint64_t *keys, uint64_t *partials)
{
    *keys = *partials = 0;
    for (size_t i = 0; i < n_rules; i++) {
        EngineRuleStats st;
        engine_rule_stats(e, i, &st);
        *keys += st.keys_live;
        *partials += st.partials_live;
    }
}

static double per(double bytes, uint64_t n)
{
    return n ? bytes / (double)n : 0.0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: memprobe RULES < events.jsonl\n");
        return 2;
    }
    CompiledRuleSet *rs = load_rules(argv[1]);
    if (!rs)
        return 1;
    Probe probe = {0};
    EngineSink sink = {on_alert, on_dead, on_late, &probe};
    EngineOptions opts = {0, 1};
    char *err = NULL;
    Engine *e = engine_new(rs, &opts, &sink, &err);
    if (!e) {
        fprintf(stderr, "memprobe: %s\n", err ? err : "out of memory");
        free(err);
        ruleset_free(rs);
        return 1;
    }
    size_t before = heap_in_use();
    uint64_t line_bytes = 0, keys, partials;
    long long lines = feed(e, &line_bytes);
    size_t after = heap_in_use();
    live_state(e, rs->n_rules, &keys, &partials);
    int rc = lines < 0 || engine_finish(e) < 0;
    double held = (double)after - (double)before;
    printf("{\"lines\":%lld,\"avg_line_bytes\":%.1f,\"heap_held_bytes\":%.0f,"
           "\"keys_live\":%llu,\"partials_live\":%llu,\"bytes_per_line\":%.1f,"
           "\"bytes_per_partial\":%.1f,\"alerts_before_end\":%llu,\"rejected\":%llu,"
           "\"late\":%llu}\n",
           lines, per((double)line_bytes, lines > 0 ? (uint64_t)lines : 0), held,
           (unsigned long long)keys, (unsigned long long)partials,
           per(held, lines > 0 ? (uint64_t)lines : 0), per(held, partials),
           (unsigned long long)probe.alerts, (unsigned long long)probe.dead,
           (unsigned long long)probe.late);
    engine_free(e);
    ruleset_free(rs);
    if (rc)
        fprintf(stderr, "memprobe: the engine failed (out of memory?)\n");
    return rc;
}
