/* tests/fuzz/fuzz_restore.c — libFuzzer target for the checkpoint restore of
 * `vigil run --state` (runtime/checkpoint.c, engine_restore, nfa/snapshot.c).
 *
 * The input is a whole checkpoint file (runtime/checkpoint.h). It goes two ways:
 * - as it is, into a state folder's slot that ckpt_load reads: a torn, other-version
 *   or corrupt file must be refused with the reason;
 * - past the framing: the body after the header is taken whatever the header's length
 *   and checksum say (a mutated body would never pass the checksum), so the section
 *   parsers see it. Its engine section is restored into an engine of fixed rules
 *   (tests/fuzz/restore/rules.cep on event time, rules-pt.cep on processing time,
 *   whichever the section says it ran on; on event time two workers when the header's
 *   sequence number is odd; the header's version, folded into the versions read),
 *   its inputs section resumes an input set of one file, and its files section is
 *   read pair by pair (never acted on) and must read back the same once written again.
 * A refused restore must say why and leave an engine that frees cleanly. An accepted
 * one must leave a valid state: its checkpoint restores again to the same bytes, its
 * statistics are valid JSON, and more events and the end of input (or, on processing
 * time, ticks and a stop) run through it with every alert rendered as valid JSON and
 * counted by the engine as the sink saw it. */
#include "tests/fuzz/fuzz_restore.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/diag.h"
#include "nfa/snapshot.h"
#include "rules/ruleset.h"
#include "runtime/checkpoint.h"
#include "runtime/decode.h"
#include "runtime/input.h"
#include "tests/fuzz/fuzz_alerts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_SRCDIR
#define FUZZ_SRCDIR "."
#endif

/* Small enough that restored keys and buffers meet them. */
#define FUZZ_MAX_PARTIALS 8
#define FUZZ_MAX_BUFFERED 16
/* Processing time: after the restore, a line every PT_STEP_MS from the restored
 * timers' earliest deadline (or PT_START_MS), then a tick an hour later. */
#define PT_START_MS 1767225600000LL
#define PT_STEP_MS 700
#define PT_LAST_TICK_MS 3600000LL

/* After the restore: events for the keys of the seeds, later than theirs. */
static const char *const MORE_EVENTS[] = {
    "{\"ts\":\"2026-05-01T10:01:30Z\",\"type\":\"tx\",\"user\":\"u1\",\"card\":\"c1\","
    "\"country\":\"NL\",\"amount\":1900}",
    "{\"ts\":\"2026-05-01T10:01:31Z\",\"type\":\"log\",\"service\":\"api\",\"host\":\"h1\"}",
    "{\"ts\":\"2026-05-01T10:01:32Z\",\"type\":\"approval\",\"trade\":\"t2\",\"manager\":\"bob\"}",
    "{\"ts\":\"2026-05-01T10:01:33Z\",\"type\":\"order_shipped\",\"order\":\"o2\"}",
    "{\"ts\":\"2026-05-01T10:01:34Z\",\"type\":\"payment_confirmed\",\"payment\":\"p2\"}",
    "{\"ts\":\"2026-05-01T10:01:35Z\",\"type\":\"login\",\"user\":\"u2\",\"ip\":\"10.0.0.7\","
    "\"ok\":true}",
    "{\"ts\":\"2026-05-01T10:01:36Z\",\"type\":\"sshd\",\"msg\":\"Failed password for x from "
    "192.0.2.7 port 22\"}",
    "{\"ts\":\"2026-05-01T10:01:37Z\",\"type\":\"logout\",\"user\":\"u4\"}",
    "{\"ts\":\"2026-05-01T10:01:38Z\",\"type\":\"login\",\"user\":\"u4\",\"ip\":\"10.0.0.9\","
    "\"ok\":true}",
    "{\"ts\":\"2026-05-01T10:01:39Z\",\"type\":\"tx\",\"user\":\"u4\",\"amount\":990}",
    "{\"ts\":\"2026-05-01T10:00:50Z\",\"type\":\"tx\",\"user\":\"u3\",\"amount\":5000}",
    "{\"ts\":\"2026-05-01T10:01:40Z\",\"type\":\"logout\",\"user\":\"u1\"}",
};
#define N_MORE_EVENTS (sizeof MORE_EVENTS / sizeof MORE_EVENTS[0])

/* libFuzzer keeps the input that aborted; the replay test names its file. */
_Noreturn static void die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_restore: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* ---- fixed inputs, made once per process (libFuzzer gives no other place) ---- */

typedef struct Fixture {
    CompiledRuleSet *event_time, *processing_time;   /* owned */
    char *events_path;     /* an input file the inputs section resumes; heap */
    char *state_dir;       /* scratch state folder, removed at exit; heap */
} Fixture;

static char *srcdir_path(const char *rel)
{
    const char *top = getenv("top_srcdir");
    return buf_format("%s/%s", top ? top : FUZZ_SRCDIR, rel);
}

static CompiledRuleSet *load_rules(const char *rel)
{
    char *path = srcdir_path(rel);
    if (!path)
        return NULL;
    Diags d;
    diags_init(&d);
    const char *paths[] = {path};
    CompiledRuleSet *rs = ruleset_load(paths, 1, &d);
    if (!rs) {
        diags_print(&d, stderr);
        fprintf(stderr, "fuzz_restore: the rules %s do not load (is top_srcdir set?)\n", path);
        abort();
    }
    diags_free(&d);
    free(path);
    return rs;
}

static Fixture fixture;

static void fixture_remove(void)
{
    if (!fixture.state_dir)
        return;
    const char *names[] = {"checkpoint.0", "checkpoint.1", "checkpoint.tmp", "lock"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = buf_format("%s/%s", fixture.state_dir, names[i]);
        if (p)
            unlink(p);
        free(p);
    }
    rmdir(fixture.state_dir);
}

static const Fixture *fixture_get(void)
{
    if (fixture.event_time)
        return &fixture;
    fixture.event_time = load_rules("tests/fuzz/restore/rules.cep");
    fixture.processing_time = load_rules("tests/fuzz/restore/rules-pt.cep");
    fixture.events_path = srcdir_path("tests/fuzz/restore/events.jsonl");
    const char *tmp = getenv("TMPDIR");
    fixture.state_dir = buf_format("%s/vigil-fuzz-restore.XXXXXX", tmp ? tmp : "/tmp");
    if (!fixture.events_path || !fixture.state_dir || !mkdtemp(fixture.state_dir)) {
        perror("fuzz_restore: scratch state folder");
        abort();
    }
    atexit(fixture_remove);
    return &fixture;
}

/* ---- the framing, as vigil reads it ---- */

static void note_skip(void *user, const char *msg)
{
    bool *said = user;
    *said = msg[0] != '\0';
}

/* The input as DIR/checkpoint.0 with no other slot: ckpt_load takes it, or refuses
 * it saying why. */
static bool load_framed(const Fixture *fx, const uint8_t *data, size_t size)
{
    char *slot = buf_format("%s/checkpoint.0", fx->state_dir);
    FILE *f = slot ? fopen(slot, "wb") : NULL;
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        die("cannot write the scratch checkpoint", slot);
    free(slot);
    CkptStore store;
    char *err = NULL;
    if (ckpt_open(&store, fx->state_dir, &err) < 0)
        die("ckpt_open", err);
    CkptLoaded loaded;
    bool said = false;
    int rc = ckpt_load(&store, &loaded, note_skip, &said, &err);
    if (rc == 0)
        die("ckpt_load found no checkpoint", NULL);
    if (rc < 0 && (!err || !strstr(err, "is unusable (")))
        die("ckpt_load refused a checkpoint without saying why", err);
    if (rc > 0 && (loaded.len != size - CKPT_HEADER_SIZE ||
                   memcmp(loaded.body, data + CKPT_HEADER_SIZE, loaded.len) != 0))
        die("ckpt_load gave another body than the file's", NULL);
    if (said)
        die("ckpt_load skipped a slot that is not there", NULL);
    if (rc > 0)
        ckpt_loaded_free(&loaded);
    free(err);
    ckpt_close(&store);
    return rc > 0;
}

/* ---- an engine and what its sink saw ---- */

typedef struct Run {
    const CompiledRuleSet *rs;
    Engine *e;
    pthread_mutex_t lock;    /* guards the fields below: workers call the sink */
    Buf record;
    uint64_t *alerts;        /* per rule: sink calls; heap */
    const char *bad;         /* what went wrong in the sink, for die() */
} Run;

static void on_alert(void *user, size_t rule_index, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    Run *run = user;
    const CompiledRule *rule = &run->rs->rules[rule_index];
    pthread_mutex_lock(&run->lock);
    run->alerts[rule_index]++;
    if (n_key != rule->n_keys)
        run->bad = "an alert's key has another number of values than its rule's";
    if (!fuzz_render_alerts(rule, key, n_key, r, scratch, &run->record, NULL, NULL))
        run->bad = "an alert record is not valid JSON";
    pthread_mutex_unlock(&run->lock);
}

static void on_dead_letter(void *user, const char *origin, uint64_t line_no, const char *reason,
                           const char *text, size_t len)
{
    (void)user;
    (void)origin;
    (void)line_no;
    (void)reason;
    (void)text;
    (void)len;
}

static void on_late(void *user, const Event *ev, int64_t watermark_ms)
{
    Run *run = user;
    if (ev->time_ms >= watermark_ms)
        run->bad = "an event reported late that is not older than the watermark";
}

/* Memory does not run out under the fuzzer (libFuzzer stops a huge allocation as
 * an error of its own): every failure of the engine after an accepted restore is a
 * state the restore should have refused. */
static void run_start(Run *run, const CompiledRuleSet *rs, size_t workers)
{
    memset(run, 0, sizeof *run);
    run->rs = rs;
    run->record = (Buf)BUF_INIT;
    if (!(run->alerts = calloc(rs->n_rules, sizeof *run->alerts)) ||
        pthread_mutex_init(&run->lock, NULL) != 0)
        die("cannot start a run", NULL);
    EngineSink sink = {on_alert, on_dead_letter, on_late, run};
    EngineOptions opts = {.max_partials = FUZZ_MAX_PARTIALS, .workers = workers};
    char *err = NULL;
    if (!(run->e = engine_new(rs, &opts, &sink, &err)))
        die("engine_new", err);
    EngineLimits limits = {.max_buffered = FUZZ_MAX_BUFFERED};
    engine_set_limits(run->e, &limits);
}

static void run_end(Run *run)
{
    engine_free(run->e);
    buf_free(&run->record);
    free(run->alerts);
    pthread_mutex_destroy(&run->lock);
}

/* ---- after an accepted restore ---- */

static void check_stats(const Engine *e)
{
    Buf json = BUF_INIT;
    engine_stats_json(e, &json);
    DecodeError err;
    if (!json.failed && !json_validate(json.data, json.len, DECODE_MAX_DEPTH, &err))
        die("engine_stats_json is not valid JSON after a restore", json.data);
    buf_free(&json);
}

/* The restored state checkpointed, restored into a fresh engine and checkpointed
 * again gives the same bytes: nothing the restore accepted is lost or changed by a
 * second round. */
static void check_round_trip(Run *run, size_t workers)
{
    Buf first = BUF_INIT, second = BUF_INIT;
    if (engine_checkpoint(run->e, &first, NULL, NULL, NULL) < 0)
        die("a restored state cannot be checkpointed", NULL);
    Run again;
    run_start(&again, run->rs, workers);
    char *err = NULL;
    if (engine_restore(again.e, first.data, first.len, NULL, &err) < 0)
        die("a restored state's checkpoint does not restore", err);
    if (engine_checkpoint(again.e, &second, NULL, NULL, NULL) < 0)
        die("a twice restored state cannot be checkpointed", NULL);
    if (first.len != second.len || memcmp(first.data, second.data, first.len) != 0)
        die("a restored state checkpoints differently after a second round", NULL);
    run_end(&again);
    buf_free(&first);
    buf_free(&second);
}

static int64_t first_pt_time(const Engine *e)
{
    int64_t deadline = engine_next_deadline(e);
    /* a deadline far from any real clock would overflow the steps below */
    if (deadline == INT64_MAX || deadline < PT_STEP_MS || deadline > INT64_MAX / 2)
        return PT_START_MS;
    return deadline - PT_STEP_MS;
}

/* More events, then the end. */
static void feed_more(Run *run, bool event_time)
{
    int64_t now = first_pt_time(run->e);
    for (size_t i = 0; i < N_MORE_EVENTS; i++) {
        const char *line = MORE_EVENTS[i];
        if (engine_line(run->e, line, strlen(line), "more", i + 1, now) < 0)
            die("the engine failed on an event after a restore", line);
        now += PT_STEP_MS;
        if (!event_time && engine_tick(run->e, now) < 0)
            die("the engine failed on a tick after a restore", NULL);
    }
    int rc = event_time ? engine_finish(run->e)
                        : engine_tick(run->e, now + PT_LAST_TICK_MS) < 0 ? -1
                                                                         : engine_stop(run->e);
    if (rc < 0)
        die("the engine failed at the end of a restored run", NULL);
}

static void check_alert_counts(Run *run, const EngineRuleStats *before,
                               FuzzRestoreOutcome *out)
{
    for (size_t i = 0; i < run->rs->n_rules; i++) {
        EngineRuleStats st;
        engine_rule_stats(run->e, i, &st);
        if (st.alerts - before[i].alerts != run->alerts[i])
            die("a rule's alert counter differs from the alerts delivered",
                run->rs->rules[i].name);
        out->alerts += run->alerts[i];
    }
}

/* ---- the inputs section ---- */

static InputSet *fixed_inputs(const Fixture *fx)
{
    InputSet *in = input_set_new(4096);
    char *err = NULL;
    if (!in || input_add(in, fx->events_path, &err) < 0)
        die("cannot open the fixed input", err);
    return in;
}

/* The section resumes the fixed input or says why not. When it does, the section the
 * next checkpoint writes (with the entries of the inputs this run was not given
 * carried over) must resume it again. */
static void resume_inputs(const Fixture *fx, const char *body, size_t len)
{
    const char *sec;
    size_t sec_len;
    if (!ckpt_find_section(body, len, CKPT_SEC_INPUTS, &sec, &sec_len))
        return;
    InputSet *in = fixed_inputs(fx);
    char *err = NULL;
    if (ckpt_resume_inputs(in, sec, sec_len, NULL, NULL, &err) < 0) {
        if (!err)
            die("ckpt_resume_inputs failed without saying why", NULL);
        free(err);
        input_set_free(in);
        return;
    }
    Buf next = BUF_INIT;
    ckpt_put_inputs(&next, in, sec, sec_len);
    const char *next_sec;
    size_t next_len;
    if (next.failed || !ckpt_find_section(next.data, next.len, CKPT_SEC_INPUTS, &next_sec,
                                          &next_len))
        die("no inputs section after a resume", NULL);
    InputSet *again = fixed_inputs(fx);
    if (ckpt_resume_inputs(again, next_sec, next_len, NULL, NULL, &err) < 0)
        die("the inputs section written after a resume does not resume", err);
    input_set_free(again);
    buf_free(&next);
    input_set_free(in);
}

/* ---- the files section ---- */

/* The files section is read, never acted on: cutting files back would truncate
 * whatever paths the input names. */
typedef struct FilesWalk {
    const char *sec;       /* the bytes walked */
    size_t len;
    Buf again;             /* the pairs walked, written again */
} FilesWalk;

static bool rewrite_pair(const char *path, size_t n, uint64_t length, void *user)
{
    FilesWalk *w = user;
    if (path < w->sec || n > (size_t)(w->sec + w->len - path) || memchr(path, '\0', n))
        die("a files-section path outside its section, or with a NUL", NULL);
    char *copy = strndup(path, n);
    if (!copy)
        die("out of memory", NULL);
    ckpt_files_add(&w->again, copy, length);
    free(copy);
    return true;
}

/* Walks `sec` and writes its pairs again (in w->again, owned by the caller). */
static int rewrite_files(const char *sec, size_t len, FilesWalk *w)
{
    *w = (FilesWalk){sec, len, BUF_INIT};
    int rc = ckpt_files_each(sec, len, rewrite_pair, w);
    if (rc == 1)
        die("the files walk stopped though every pair said go on", NULL);
    if (w->again.failed)
        die("out of memory", NULL);
    return rc;
}

/* Whatever the section holds, the pairs read from it, written again, read back as the
 * same pairs, to the end: the reader and the writer agree on the encoding. */
static void walk_files(const char *body, size_t len)
{
    const char *sec;
    size_t sec_len;
    if (!ckpt_find_section(body, len, CKPT_SEC_FILES, &sec, &sec_len))
        return;
    FilesWalk first, second;
    (void)rewrite_files(sec, sec_len, &first);
    const char *again = first.again.data ? first.again.data : "";
    if (rewrite_files(again, first.again.len, &second) != 0)
        die("the files section written again does not read to its end", NULL);
    if (second.again.len != first.again.len ||
        memcmp(second.again.data ? second.again.data : "", again, first.again.len))
        die("the files section written again reads as other pairs", NULL);
    buf_free(&second.again);
    buf_free(&first.again);
}

/* ---- the engine section ---- */

static void restore_engine(const Fixture *fx, const uint8_t *header, const char *sec,
                           size_t sec_len, FuzzRestoreOutcome *out)
{
    uint32_t raw_version = (uint32_t)header[8] | (uint32_t)header[9] << 8 |
                           (uint32_t)header[10] << 16 | (uint32_t)header[11] << 24;
    /* another version is refused at once: fold it into those read, to go deeper */
    uint32_t version = raw_version >= CKPT_OLDEST_VERSION && raw_version <= CKPT_VERSION
                           ? raw_version
                           : CKPT_OLDEST_VERSION +
                                 raw_version % (CKPT_VERSION - CKPT_OLDEST_VERSION + 1);
    /* the section's first number says which clock it ran on */
    SnapReader peek;
    snap_reader_init(&peek, sec, sec_len);
    out->event_time = snap_get_u64(&peek) != 0;
    /* Workers keep processing-time timers on the wall clock, which would fire the
     * restored deadlines at moments no check could follow: one on processing time. */
    size_t workers = out->event_time && (header[16] & 1) ? 2 : 1;
    const CompiledRuleSet *rs = out->event_time ? fx->event_time : fx->processing_time;
    out->n_rules = rs->n_rules;
    Run run;
    run_start(&run, rs, workers);
    char *err = NULL;
    if (engine_restore_version(run.e, sec, sec_len, version, &out->sum, &err) < 0) {
        if (!err || strncmp(err, "checkpoint state: ", 18) != 0)
            die("a refused restore does not say why", err);
        free(err);
        run_end(&run);   /* engine.h: the engine must then be freed */
        return;
    }
    out->restored = true;
    check_stats(run.e);
    check_round_trip(&run, workers);
    EngineRuleStats *before = calloc(rs->n_rules, sizeof *before);
    if (!before || engine_all_rule_stats(run.e, before) < 0)
        die("cannot read the restored counters", NULL);
    feed_more(&run, out->event_time);
    if (run.bad)
        die(run.bad, NULL);
    check_alert_counts(&run, before, out);
    check_stats(run.e);
    free(before);
    run_end(&run);
}

void fuzz_restore_run(const uint8_t *data, size_t size, FuzzRestoreOutcome *out)
{
    memset(out, 0, sizeof *out);
    const Fixture *fx = fixture_get();
    out->framed = load_framed(fx, data, size);
    if (size < CKPT_HEADER_SIZE)
        return;
    const char *body = (const char *)data + CKPT_HEADER_SIZE;
    size_t len = size - CKPT_HEADER_SIZE;
    const char *sec;
    size_t sec_len;
    resume_inputs(fx, body, len);
    walk_files(body, len);
    if (!ckpt_find_section(body, len, CKPT_SEC_ENGINE, &sec, &sec_len))
        return;
    out->has_engine = true;
    restore_engine(fx, data, sec, sec_len, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzRestoreOutcome out;
    fuzz_restore_run(data, size, &out);
    return 0;
}
