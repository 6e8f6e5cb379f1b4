/* cli/cmd_run.c — `vigil run`: the streaming daemon's main loop.
 *
 * Owns: option parsing, the wiring of inputs -> engine -> alert outputs, the
 * dead-letter and late files (cli/rejects.h), signals, the progress line and the
 * --stats summary. Signals are blocked and polled between input reads (at most
 * RUN_POLL_SLICE_MS apart), so no handler and no global state is needed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alerts/alerts.h"
#include "base/buf.h"
#include "base/clock.h"
#include "cli/commands.h"
#include "cli/control.h"
#include "cli/rejects.h"
#include "cli/run_state.h"
#include "cli/watch.h"
#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/input.h"

#define RUN_POLL_SLICE_MS 100
#define RUN_DEFAULT_MAX_LINE (1024 * 1024)
#define RUN_PROGRESS_PERIOD_MS 1000

typedef struct RunOptions {
    const char **inputs;       /* argv strings (borrowed); heap array, owned */
    size_t n_inputs;
    const char *output, *late, *errors, *control;
    bool watch, stats;
    const char *state;         /* --state DIR, or NULL */
    int64_t checkpoint_every_ms;
    unsigned long workers;
    size_t max_line, max_partials, max_memory, max_buffered;
    const char *const *rule_paths;   /* borrowed from argv */
    size_t n_rule_paths;
} RunOptions;

typedef struct Run {
    const RunOptions *opts;
    CompiledRuleSet *rs;       /* owned: replaced by each successful reload */
    AlertRouter *alerts;
    Engine *engine;
    InputSet *inputs;
    int read_fd;               /* the workers read this input themselves (engine_read_start),
                                  or -1: the InputSet reads every input */
    uint64_t read_size;        /* its size, for the progress line */
    RuleWatch *watch;          /* --watch, or NULL */
    RunState *state;           /* --state, or NULL */
    Control *control;          /* --control, or NULL */
    Rejects rejects;
    bool event_time;
    bool fatal;
    bool progress;
    uint64_t lines_seen;       /* lines handed over by the input, to notice idleness */
    uint64_t reloads, reload_failures;
    uint64_t alerts_lost_before;   /* by the alert routers that reloads replaced */
    uint64_t replaced_undelivered; /* dropped or failed by outputs a reload closed (the
                                      unchanged ones go on in the new router) */
    int64_t started_ms, last_progress_ms;
} Run;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- options ---------------------------------------------------------------- */

static void usage(FILE *out)
{
    fputs("usage: vigil run [OPTIONS] FILE|DIR...\n"
          "\n"
          "Streams JSON events (one object per line) through the rules in FILE|DIR (every\n"
          "*.cep file of a DIR) and writes alerts as JSON lines to the rules' outputs.\n"
          "\n"
          "Options:\n"
          "  -i, --input SRC      read events from SRC; repeatable. `-` is stdin (the\n"
          "                       default), a file path, tcp://HOST:PORT or unix:PATH\n"
          "                       (listen; many clients at once)\n"
          "  -o, --output DEST    where the `stdout` output goes: `-` (default) or a file\n"
          "      --late FILE      append late events (event time older than the\n"
          "                       watermark) to FILE as JSON lines with the reason\n"
          "      --errors FILE    append malformed input lines (dead letters) to FILE as\n"
          "                       JSON lines {\"input\",\"line\",\"reason\",\"text\"}; without\n"
          "                       it they are counted and logged to stderr, rate-limited\n"
          "      --watch          reload when a rule file changes, including editors that\n"
          "                       save by renaming a temp file (SIGHUP always reloads)\n"
          "      --control PATH   serve `vigil ctl` on a Unix socket (mode 0600): one\n"
          "                       command line (stats, rules, reload), one JSON reply\n"
          "      --workers N      worker threads (default 1); events are sharded by\n"
          "                       key so each key's events stay in order\n"
          "      --stats          print a JSON summary to stderr at exit\n"
          "      --max-line BYTES longest accepted input line (default 1M; K/M/G suffixes)\n"
          "      --state DIR      checkpoint the whole state into DIR (every 10s and at\n"
          "                       exit) and, at start, recover from it: file inputs resume\n"
          "                       at their offsets, -o/file outputs are cut back to the\n"
          "                       checkpoint, so a crash neither repeats nor loses alerts\n"
          "      --checkpoint-every DUR  time between checkpoints (10s; ms/s/m/h)\n"
          "      --max-partials N partial matches kept per key; when full the oldest is\n"
          "                       dropped and counted (default 10000)\n"
          "      --max-memory BYTES  budget for the matching state (keys, partial matches,\n"
          "                       the events they hold, the reorder buffer; estimated;\n"
          "                       K/M/G suffixes); once reached new keys are refused and\n"
          "                       counted, existing keys keep matching (default: none)\n"
          "      --max-buffered N events held in the reorder buffer (event time); when\n"
          "                       full the oldest is released early (default 1000000)\n"
          "  -h, --help           show this help\n"
          "\n"
          "Time: with a `time` declaration events are reordered within its lateness and\n"
          "matched in event-time order; the end of input moves time to +infinity, so\n"
          "pending `within` timeouts fire. Without one, time is the arrival time and\n"
          "timeouts fire on a real timer.\n"
          "\n"
          "Signals: SIGTERM and SIGINT stop reading, process every event already\n"
          "accepted (the reorder buffer too), write their alerts, flush the outputs and\n"
          "exit 0; pending partial matches are counted, not fired as timeouts.\n"
          "\n"
          "SIGHUP (or, with --watch, a saved rule file) recompiles the rules; if that\n"
          "fails the old ones keep running. Rules whose matching definition is\n"
          "unchanged keep their partial matches.\n"
          "\n"
          "Exit status: 0 ok, 1 rule errors, 2 usage error, 3 I/O or runtime failure.\n",
          out);
}

/* BYTES with an optional K, M or G (binary) suffix. */
static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end || v == 0 || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)(v << shift);
    return true;
}

enum { OPT_LATE = 256, OPT_ERRORS, OPT_WATCH, OPT_CONTROL, OPT_WORKERS, OPT_STATS,
       OPT_MAX_LINE, OPT_MAX_PARTIALS, OPT_STATE, OPT_CHECKPOINT_EVERY, OPT_MAX_MEMORY,
       OPT_MAX_BUFFERED };

static const struct option run_long_options[] = {
    {"input", required_argument, NULL, 'i'},
    {"output", required_argument, NULL, 'o'},
    {"late", required_argument, NULL, OPT_LATE},
    {"errors", required_argument, NULL, OPT_ERRORS},
    {"watch", no_argument, NULL, OPT_WATCH},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"stats", no_argument, NULL, OPT_STATS},
    {"max-line", required_argument, NULL, OPT_MAX_LINE},
    {"max-partials", required_argument, NULL, OPT_MAX_PARTIALS},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"max-buffered", required_argument, NULL, OPT_MAX_BUFFERED},
    {"state", required_argument, NULL, OPT_STATE},
    {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad_value(const char *opt, const char *value)
{
    fprintf(stderr, "vigil run: invalid value '%s' for %s\n", value, opt);
    return EXIT_USAGE;
}

/* Returns -1 to continue, or an exit code (help, usage error). */
static int parse_options(int argc, char **argv, RunOptions *o)
{
    memset(o, 0, sizeof *o);
    o->workers = 1;
    o->max_line = RUN_DEFAULT_MAX_LINE;
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    if (!o->inputs) {
        fprintf(stderr, "vigil run: out of memory\n");
        return EXIT_IO;
    }
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":i:o:h", run_long_options, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'i': o->inputs[o->n_inputs++] = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_LATE: o->late = optarg; break;
        case OPT_ERRORS: o->errors = optarg; break;
        case OPT_WATCH: o->watch = true; break;
        case OPT_CONTROL: o->control = optarg; break;
        case OPT_STATS: o->stats = true; break;
        case OPT_WORKERS:
            errno = 0;
            o->workers = strtoul(optarg, &end, 10);
            if (errno || *end || end == optarg || o->workers < 1 || o->workers > 256)
                return bad_value("--workers (1..256)", optarg);
            break;
        case OPT_MAX_LINE:
            if (!parse_size(optarg, &o->max_line))
                return bad_value("--max-line", optarg);
            break;
        case OPT_STATE: o->state = optarg; break;
        case OPT_CHECKPOINT_EVERY:
            if (!run_state_parse_every(optarg, &o->checkpoint_every_ms))
                return bad_value("--checkpoint-every", optarg);
            break;
        case OPT_MAX_PARTIALS:
            if (!parse_size(optarg, &o->max_partials))
                return bad_value("--max-partials", optarg);
            break;
        case OPT_MAX_MEMORY:
            if (!parse_size(optarg, &o->max_memory))
                return bad_value("--max-memory", optarg);
            break;
        case OPT_MAX_BUFFERED:
            if (!parse_size(optarg, &o->max_buffered))
                return bad_value("--max-buffered", optarg);
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        case ':':
            fprintf(stderr, "vigil run: option '%s' needs a value\n", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "vigil run: unknown option '%s'\n", argv[optind - 1]);
            fprintf(stderr, "Try 'vigil run --help'.\n");
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "vigil run: no rule files given\n");
        fprintf(stderr, "usage: vigil run [OPTIONS] FILE|DIR...   (see 'vigil run --help')\n");
        return EXIT_USAGE;
    }
    if (o->checkpoint_every_ms && !o->state) {
        fprintf(stderr, "vigil run: --checkpoint-every needs --state DIR\n");
        return EXIT_USAGE;
    }
    if (o->n_inputs == 0)
        o->inputs[o->n_inputs++] = "-";
    o->rule_paths = (const char *const *)argv + optind;
    o->n_rule_paths = (size_t)(argc - optind);
    return -1;
}

/* ---- engine callbacks ------------------------------------------------------- */

static void deliver_alert(void *user, size_t rule, const Value *key, size_t n_key,
                          const NfaResult *r, EvalScratch *scratch)
{
    Run *run = user;
    alerts_deliver(run->alerts, &run->rs->rules[rule], key, n_key, r, scratch);
}

static void dead_letter(void *user, const char *origin, uint64_t line_no, const char *reason,
                        const char *text, size_t len)
{
    Run *run = user;
    rejects_dead_letter(&run->rejects, origin, line_no, reason, text, len, clock_monotonic_ms());
}

static void late_event(void *user, const Event *ev, int64_t watermark)
{
    Run *run = user;
    rejects_late(&run->rejects, ev, watermark, clock_monotonic_ms());
}

static void engine_warning(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "vigil run: warning: %s\n", msg);
}

static void on_line(void *user, const InputLine *line)
{
    Run *run = user;
    run->lines_seen++;
    if (run->fatal)
        return;
    int64_t now = run->event_time ? 0 : wall_ms();
    if (engine_input_line(run->engine, line, now) < 0)
        run->fatal = true;
    if (engine_backlogged(run->engine))
        input_pause(run->inputs, true);   /* the rest of this read waits in its buffer */
}

/* The good lines of a read, in runs: one call for many lines. */
static size_t on_lines(void *user, const InputLines *lines)
{
    Run *run = user;
    if (run->fatal) {
        run->lines_seen += lines->n;
        return lines->n;
    }
    int64_t now = run->event_time ? 0 : wall_ms();
    bool failed = false;
    size_t took = engine_input_lines(run->engine, lines, now, &failed);
    run->lines_seen += took;
    if (failed)
        run->fatal = true;
    if (took < lines->n)
        input_pause(run->inputs, true);   /* backlogged: the rest waits in its buffer */
    return took;
}

static void on_reject(void *user, const InputLine *line, const char *reason)
{
    Run *run = user;
    run->lines_seen++;
    engine_reject(run->engine, line->text, line->len, line->origin, line->line_no, reason);
}

/* ---- progress and statistics ------------------------------------------------ */

static void show_progress(Run *run, bool final)
{
    int64_t now = clock_monotonic_ms();
    if (!run->progress || (!final && now - run->last_progress_ms < RUN_PROGRESS_PERIOD_MS))
        return;
    run->last_progress_ms = now;
    if (final) {
        fputs("\r\033[K", stderr);
        return;
    }
    uint64_t done = 0, total = 0;
    input_progress(run->inputs, &done, &total);
    if (run->read_fd >= 0) {
        done = engine_read_bytes(run->engine);
        total = run->read_size;
    }
    EngineStats st;
    engine_stats(run->engine, &st);
    double secs = (double)(now - run->started_ms) / 1000.0;
    fprintf(stderr, "\r\033[K%llu events, %.0f events/s, %.0f%%", (unsigned long long)st.events,
            secs > 0 ? (double)st.events / secs : 0.0,
            total ? 100.0 * (double)done / (double)total : 0.0);
}

/* The --stats summary; `live` (the reply to `vigil ctl SOCKET stats`) adds the uptime
 * and the process id, which a summary at exit has no use for. */
static void append_stats(Run *run, Buf *b, bool live)
{
    EngineStats st;
    engine_stats(run->engine, &st);
    struct rusage ru;
    long peak_kb = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
    double secs = (double)(clock_monotonic_ms() - run->started_ms) / 1000.0;
    buf_puts(b, "{\"engine\":");
    engine_stats_json(run->engine, b);
    buf_puts(b, ",\"outputs\":");
    alerts_stats(run->alerts, b);
    buf_printf(b, ",\"reloads\":%llu,\"reload_failures\":%llu,\"replaced_outputs_undelivered\":%llu",
               (unsigned long long)run->reloads, (unsigned long long)run->reload_failures,
               (unsigned long long)run->replaced_undelivered);
    buf_printf(b, ",\"peak_rss_kb\":%ld,\"elapsed_s\":%.3f,\"events_per_s\":%.0f", peak_kb,
               secs, secs > 0 ? (double)st.events / secs : 0.0);
    if (run->state)
        run_state_stats_json(run->state, b);
    if (live)
        buf_printf(b, ",\"uptime_s\":%.3f,\"pid\":%ld", secs, (long)getpid());
    buf_putc(b, '}');
}

static void print_stats(Run *run)
{
    Buf b = BUF_INIT;
    append_stats(run, &b, false);
    if (!b.failed)
        fprintf(stderr, "%s\n", b.data);
    buf_free(&b);
}

/* ---- hot reload ------------------------------------------------------------- */

typedef struct OutputSwap {
    Run *run;
    CompiledRuleSet *next;
    AlertRouter *next_alerts;
    AlertRouter *old_alerts;
} OutputSwap;

/* Called by the engine while nothing renders alerts: the old router's stdout/file
 * lines go out before the first line of the new one. */
static void swap_outputs(void *user)
{
    OutputSwap *sw = user;
    sw->old_alerts = sw->run->alerts;
    alerts_idle(sw->old_alerts);
    alerts_adopt(sw->next_alerts, sw->old_alerts);
    sw->run->alerts = sw->next_alerts;
    sw->run->rs = sw->next;
}

/* Counts and logs a failed reload; the message also goes to `outcome`. */
static bool reload_failed(Run *run, const char *why, Buf *outcome)
{
    run->reload_failures++;
    buf_printf(outcome, "reload failed (%s); the previous rules keep running", why);
    fprintf(stderr, "vigil run: %s\n", outcome->failed ? "reload failed" : outcome->data);
    return false;
}

/* The diagnostics as `vigil check` prints them, for a control client. */
static void append_diags(const Diags *diags, Buf *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        out->failed = true;
        return;
    }
    diags_print(diags, f);
    if (fclose(f) == 0)
        buf_append(out, text, len);
    else
        out->failed = true;
    free(text);
}

/* RUNTIME.md 5: recompile everything; on any error keep running the old rules.
 * The one-line outcome is logged and appended to `outcome`; the diagnostics are
 * printed and, if `diag_text` is not NULL, appended to it. */
static bool reload_rules(Run *run, Buf *outcome, Buf *diag_text)
{
    const RunOptions *o = run->opts;
    Diags diags;
    diags_init(&diags);
    CompiledRuleSet *next = ruleset_reload(o->rule_paths, o->n_rule_paths, run->rs, &diags);
    diags_print(&diags, stderr);
    if (diag_text)
        append_diags(&diags, diag_text);
    bool oom = diags.oom;
    diags_free(&diags);
    if (oom) {
        /* even a rule set that came back may lack rules that did not fit */
        ruleset_free(next);
        return reload_failed(run, "out of memory", outcome);
    }
    if (!next)
        return reload_failed(run, "rule errors", outcome);
    AlertOptions aopts = {.stdout_path = o->output};
    if (run->state) {
        aopts.file_opened = run_state_file_opened;
        aopts.file_opened_user = run->state;
    }
    char *err = NULL;
    AlertRouter *ar = alerts_new_after(next, &aopts, run->alerts, &err);
    if (!ar) {
        fprintf(stderr, "vigil run: %s\n", err ? err : "cannot open the outputs");
        free(err);
        ruleset_free(next);
        return reload_failed(run, "outputs", outcome);
    }
    CompiledRuleSet *old = run->rs;
    OutputSwap sw = {run, next, ar, NULL};
    EngineReloadSummary sum;
    if (engine_reload(run->engine, next, swap_outputs, &sw, &sum) < 0) {
        alerts_free(ar);
        ruleset_free(next);
        return reload_failed(run, "out of memory", outcome);
    }
    run->event_time = next->event_time;
    if (alerts_flush(sw.old_alerts) < 0)
        fprintf(stderr, "vigil run: an output of the previous rules failed while closing\n");
    run->alerts_lost_before += alerts_lost(sw.old_alerts);
    alerts_finish(sw.old_alerts);
    run->replaced_undelivered += alerts_undelivered(sw.old_alerts);
    alerts_free(sw.old_alerts);
    ruleset_free(old);
    run->reloads++;
    buf_printf(outcome, "reloaded %zu rules: %zu changed, %zu added, %zu removed, %zu kept state",
               sum.rules, sum.changed, sum.added, sum.removed, sum.kept);
    fprintf(stderr, "vigil run: %s\n", outcome->failed ? "reloaded" : outcome->data);
    return true;
}

static void reload_and_log(Run *run)
{
    Buf outcome = BUF_INIT;
    reload_rules(run, &outcome, NULL);
    buf_free(&outcome);
}

/* ---- control socket ------------------------------------------------------------ */

/* One rule of the `rules` reply: where it is defined, what it matches on, and its
 * live state (`live` NULL when the workers could not be paused to read it). */
static void append_rule(const CompiledRule *r, const EngineRuleStats *live, Buf *b)
{
    buf_puts(b, "{\"name\":");
    buf_json_string(b, r->name, strlen(r->name));
    buf_printf(b, ",\"fingerprint\":\"%016llx\",\"file\":", (unsigned long long)r->fingerprint);
    const SourceFile *src = r->ast->span.src;
    if (src)
        buf_json_string(b, src->path, strlen(src->path));
    else
        buf_puts(b, "null");
    buf_printf(b, ",\"line\":%d,\"key\":[", r->ast->span.line);
    for (size_t k = 0; k < r->n_keys; k++) {
        if (k)
            buf_putc(b, ',');
        buf_json_string(b, r->key_names[k], strlen(r->key_names[k]));
    }
    buf_printf(b, "],\"on_match\":%zu,\"on_timeout\":%zu", r->n_on_match, r->n_on_timeout);
    if (live)
        buf_printf(b, ",\"keys_live\":%llu,\"partials_live\":%llu",
                   (unsigned long long)live->keys_live, (unsigned long long)live->partials_live);
    buf_putc(b, '}');
}

static void append_rules(const Run *run, Buf *b)
{
    size_t n = run->rs->n_rules;
    EngineRuleStats *live = calloc(n ? n : 1, sizeof *live);
    if (live && engine_all_rule_stats(run->engine, live) < 0) {
        free(live);
        live = NULL;
    }
    buf_puts(b, "{\"rules\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(b, ',');
        append_rule(&run->rs->rules[i], live ? &live[i] : NULL, b);
    }
    buf_printf(b, "],\"event_time\":%s,\"reloads\":%llu}", run->rs->event_time ? "true" : "false",
               (unsigned long long)run->reloads);
    free(live);
}

/* {"ok":..,"message":"reloaded ..." or "reload failed ...","diagnostics":"..."}; the
 * diagnostics (as `vigil check` prints them) only when there are some. */
static void control_reload(Run *run, Buf *reply)
{
    Buf outcome = BUF_INIT, diags = BUF_INIT;
    bool ok = reload_rules(run, &outcome, &diags);
    buf_printf(reply, "{\"ok\":%s,\"message\":", ok ? "true" : "false");
    buf_json_string(reply, outcome.data ? outcome.data : "", outcome.len);
    if (diags.len || diags.failed) {
        buf_puts(reply, ",\"diagnostics\":");
        if (diags.failed)
            buf_puts(reply, "\"(out of memory while rendering the diagnostics)\"");
        else
            buf_json_string(reply, diags.data, diags.len);
    }
    buf_putc(reply, '}');
    buf_free(&outcome);
    buf_free(&diags);
}

static void control_command(void *user, const char *cmd, Buf *reply)
{
    Run *run = user;
    if (!strcmp(cmd, "stats")) {
        append_stats(run, reply, true);
    } else if (!strcmp(cmd, "rules")) {
        append_rules(run, reply);
    } else if (!strcmp(cmd, "reload")) {
        control_reload(run, reply);
    } else {
        buf_puts(reply, "{\"ok\":false,\"error\":");
        Buf msg = BUF_INIT;
        buf_printf(&msg, "unknown command '%s' (stats, rules, reload)", cmd);
        buf_json_string(reply, msg.data ? msg.data : "", msg.len);
        buf_putc(reply, '}');
        buf_free(&msg);
    }
}

/* Takes every pending signal: SIGHUP reloads; true when one asks to stop. */
static bool stop_requested(Run *run, const sigset_t *set)
{
    struct timespec zero = {0, 0};
    bool stop = false, reload = false;
    int sig;
    while ((sig = sigtimedwait(set, NULL, &zero)) > 0) {
        if (sig == SIGHUP)
            reload = true;
        else
            stop = true;
    }
    if (reload && !stop)
        reload_and_log(run);
    return stop;
}

static int poll_timeout(Run *run)
{
    if (run->event_time)
        return RUN_POLL_SLICE_MS;
    int64_t next = engine_next_deadline(run->engine);
    if (next == INT64_MAX)
        return RUN_POLL_SLICE_MS;
    int64_t wait = next - wall_ms();
    return wait < 0 ? 0 : wait > RUN_POLL_SLICE_MS ? RUN_POLL_SLICE_MS : (int)wait;
}

/* Backpressure: while the workers are behind, no input is read (sockets push back on
 * their senders through flow control; files and stdin simply wait) and the loop waits
 * for the workers in slices, still taking signals and control commands. */
static int poll_or_wait(Run *run, const InputHandler *h)
{
    bool behind = engine_backlogged(run->engine) &&
                  !engine_drain(run->engine, RUN_POLL_SLICE_MS);
    input_pause(run->inputs, behind);
    return input_poll_runs(run->inputs, behind ? 0 : poll_timeout(run), h, on_lines);
}

/* poll_or_wait when the workers read the input: a step of at most a poll slice. */
static int workers_read_step(Run *run)
{
    uint64_t before = engine_read_bytes(run->engine);
    int rc = engine_read_step(run->engine, RUN_POLL_SLICE_MS);
    if (engine_read_bytes(run->engine) != before)
        run->lines_seen++;   /* not idle */
    if (rc < 0 && engine_read_error(run->engine))
        fprintf(stderr, "vigil run: input %s: read error: %s\n", run->opts->inputs[0],
                strerror(engine_read_error(run->engine)));
    else if (rc < 0)
        run->fatal = true;
    return rc;
}

/* Reads until end of input or a stop signal. Returns 1 on stop, 0 at end, -1 on error. */
static int read_loop(Run *run, const sigset_t *signals)
{
    InputHandler h = {on_line, on_reject, run};
    for (;;) {
        if (stop_requested(run, signals))
            return 1;
        if (run->watch && watch_due(run->watch, clock_monotonic_ms()))
            reload_and_log(run);
        if (run->control) {
            ControlHandler ch = {control_command, run};
            control_poll(run->control, &ch);
        }
        uint64_t before = run->lines_seen;
        int rc = run->read_fd >= 0 ? workers_read_step(run) : poll_or_wait(run, &h);
        if (run->fatal || rc < 0)
            return -1;
        /* timers on processing time; with workers, hands them what was routed */
        if (engine_tick(run->engine, run->event_time ? 0 : wall_ms()) < 0)
            return -1;
        if (run->state && run_state_due(run->state, clock_monotonic_ms()))
            run_state_checkpoint(run->state, run->engine, run->alerts, run->inputs,
                                 &run->rejects);
        if (run->lines_seen == before)
            alerts_idle(run->alerts);   /* idle: no alert waits in a buffer */
        rejects_tick(&run->rejects, clock_monotonic_ms(), false);
        show_progress(run, false);
        if (rc == 0)
            return 0;
    }
}

static bool is_file_input(const char *spec)
{
    return strcmp(spec, "-") && strncmp(spec, "tcp://", 6) && strncmp(spec, "unix:", 5);
}

static bool any_file_input(const RunOptions *o)
{
    for (size_t i = 0; i < o->n_inputs; i++)
        if (is_file_input(o->inputs[i]))
            return true;
    return false;
}

/* The regular file at path, or behind std_fd when path is NULL (or "-" for an input). */
static bool regular_file(const char *path, int std_fd, struct stat *st)
{
    int rc = path && strcmp(path, "-") ? stat(path, st) : fstat(std_fd, st);
    return rc == 0 && S_ISREG(st->st_mode);
}

/* An output written into a file that is also read as input feeds its records back
 * in as events: the file grows without end (`-i big.jsonl -o big.jsonl`, or stdin
 * and stdout redirected to one file). Says so and returns true in that case. */
static bool output_reads_back(const RunOptions *o)
{
    const struct { const char *option, *path; int std_fd; } outs[] = {
        {"-o", o->output, STDOUT_FILENO}, {"--errors", o->errors, -1}, {"--late", o->late, -1}};
    for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
        struct stat out;
        if ((!outs[k].path && outs[k].std_fd < 0) ||
            !regular_file(outs[k].path, outs[k].std_fd, &out))
            continue;
        for (size_t i = 0; i < o->n_inputs; i++) {
            struct stat in;
            const char *spec = o->inputs[i];
            if ((is_file_input(spec) || !strcmp(spec, "-")) &&
                regular_file(spec, STDIN_FILENO, &in) && in.st_dev == out.st_dev &&
                in.st_ino == out.st_ino) {
                bool named = outs[k].path != NULL;
                fprintf(stderr, "vigil run: %s%s%s is also the input %s: its records would "
                        "be read back as events\n", named ? outs[k].option : "",
                        named ? " " : "", named ? outs[k].path : "standard output",
                        strcmp(spec, "-") ? spec : "standard input");
                return true;
            }
        }
    }
    return false;
}

/* The workers read the input themselves (engine_read_start) where that is safe:
 * --workers N > 1 on event time, one input that is a regular file (a path, or stdin
 * redirected from one: a pipe or a socket would block a worker in read(), and only
 * the input layer serves several inputs in turn), and no --state (its checkpoints
 * record input positions, which the input layer keeps). Elsewhere, or if it cannot
 * start, the input layer reads as always. True when the workers read it. */
static bool start_workers_read(Run *run, const RunOptions *o)
{
    const char *spec = o->inputs[0];
    bool is_stdin = !strcmp(spec, "-");
    struct stat st;
    if (o->workers < 2 || o->n_inputs != 1 || run->state || !run->event_time ||
        (!is_stdin && !is_file_input(spec)) || !regular_file(spec, STDIN_FILENO, &st))
        return false;
    int fd = is_stdin ? STDIN_FILENO : open(spec, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;   /* the input layer says why */
    if (engine_read_start(run->engine, fd, spec, o->max_line) != 0) {
        if (!is_stdin)
            close(fd);
        return false;
    }
    run->read_fd = fd;
    run->read_size = (uint64_t)st.st_size;
    return true;
}

static int open_inputs(Run *run, const RunOptions *o)
{
    run->inputs = input_set_new(o->max_line);
    if (!run->inputs) {
        fprintf(stderr, "vigil run: out of memory\n");
        return -1;
    }
    if (start_workers_read(run, o))
        return 0;
    for (size_t i = 0; i < o->n_inputs; i++) {
        char *err = NULL;
        if (input_add(run->inputs, o->inputs[i], &err) < 0) {
            if (err)   /* it names the input */
                fprintf(stderr, "vigil run: %s\n", err);
            else
                fprintf(stderr, "vigil run: %s: cannot open\n", o->inputs[i]);
            free(err);
            return -1;
        }
    }
    return 0;
}

static int start(Run *run, const RunOptions *o)
{
    AlertOptions aopts = {.stdout_path = o->output};
    if (run->state) {
        aopts.file_opened = run_state_file_opened;
        aopts.file_opened_user = run->state;
    }
    char *err = NULL;
    run->alerts = alerts_new(run->rs, &aopts, &err);
    if (!run->alerts) {
        fprintf(stderr, "vigil run: %s\n", err ? err : "cannot open the outputs");
        free(err);
        return -1;
    }
    EngineSink sink = {deliver_alert, dead_letter, late_event, run};
    EngineOptions eopts = {o->max_partials, o->workers};
    run->engine = engine_new(run->rs, &eopts, &sink, &err);
    if (!run->engine) {
        fprintf(stderr, "vigil run: %s\n", err ? err : "out of memory");
        free(err);
        return -1;
    }
    engine_set_warn(run->engine, engine_warning, run);
    EngineLimits limits = {.max_memory = o->max_memory, .max_buffered = o->max_buffered};
    engine_set_limits(run->engine, &limits);
    if (o->watch && !(run->watch = watch_new(o->rule_paths, o->n_rule_paths, &err))) {
        fprintf(stderr, "vigil run: --watch: %s\n", err ? err : "out of memory");
        free(err);
        return -1;
    }
    if (o->control && !(run->control = control_open(o->control, &err))) {
        fprintf(stderr, "vigil run: --control: %s\n", err ? err : "out of memory");
        free(err);
        return -1;
    }
    if (open_inputs(run, o) < 0)
        return -1;
    return run->state ? run_state_restore(run->state, run->engine, run->inputs) : 0;
}

/* SIGTERM/SIGINT/SIGHUP are taken between reads (stop_requested), never by a handler.
 * They stay blocked on return: a second SIGTERM during the final flush must not kill
 * the process before the outputs are flushed; vigil exits right after. */
static void take_signals(sigset_t *signals)
{
    sigemptyset(signals);
    sigaddset(signals, SIGTERM);
    sigaddset(signals, SIGINT);
    sigaddset(signals, SIGHUP);
    sigprocmask(SIG_BLOCK, signals, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a closed output is an error to report, not a death */
}

/* Reads to the end (or a stop signal), drains the engine and flushes the outputs. */
static int serve(Run *run, const sigset_t *signals)
{
    int code = EXIT_OK;
    run->progress = isatty(STDERR_FILENO) && any_file_input(run->opts);
    int how = read_loop(run, signals);
    int end = 0;
    bool checkpoint_failed = false;
    if (run->state && how == 1) {
        /* the checkpoint keeps buffered events and partial matches for the next run */
        end = run_state_checkpoint(run->state, run->engine, run->alerts, run->inputs,
                                   &run->rejects);
        checkpoint_failed = end < 0;
    } else {
        end = how == 1 ? engine_stop(run->engine) : engine_finish(run->engine);
    }
    /* An input that closed on an error (lines lost) ended the reading early: a final
     * checkpoint would record the end of input (event time at +infinity, every
     * timeout fired) with that input's lines after the error unread, so the next run
     * would take them all as late. The previous checkpoint stays; the run exits 3. */
    bool lines_lost = run->inputs && input_lost_lines(run->inputs);
    if (run->state && how == 0 && end == 0 && !lines_lost && alerts_flush(run->alerts) == 0) {
        end = run_state_checkpoint(run->state, run->engine, run->alerts, run->inputs,
                                   &run->rejects);
        checkpoint_failed = end < 0;
    }
    if (run->state)
        run_state_report(run->state);
    if (how < 0 || end < 0) {
        fprintf(stderr, "vigil run: stopped on %s\n",
                run->fatal || (end < 0 && !checkpoint_failed) ? "an allocation failure"
                : checkpoint_failed ? "a failed checkpoint" : "an input error");
        code = EXIT_IO;
    } else if (lines_lost) {
        fprintf(stderr, "vigil run: an input closed on an error; its lines after it were "
                        "not read\n");
        code = EXIT_IO;
    }
    show_progress(run, true);
    if (alerts_flush(run->alerts) < 0) {
        fprintf(stderr, "vigil run: an output failed; some alerts were not delivered\n");
        code = EXIT_IO;
    }
    alerts_finish(run->alerts);   /* what is still held is dropped: the stats count it */
    if (run->replaced_undelivered) {
        fprintf(stderr, "vigil run: %llu alerts were not delivered by outputs a reload "
                        "closed\n", (unsigned long long)run->replaced_undelivered);
        code = EXIT_IO;
    }
    uint64_t lost = run->alerts_lost_before + alerts_lost(run->alerts);
    if (lost) {
        fprintf(stderr, "vigil run: %llu alerts lost: out of memory\n", (unsigned long long)lost);
        code = EXIT_IO;
    }
    EngineStats st;
    engine_stats(run->engine, &st);
    if (how == 1 && st.pending_at_stop)
        fprintf(stderr, "vigil run: stopped with %llu partial matches pending (not fired)\n",
                (unsigned long long)st.pending_at_stop);
    if (run->opts->stats)
        print_stats(run);
    return code;
}

static void run_free(Run *run)
{
    engine_free(run->engine);   /* joins the workers, which may still reference inputs */
    if (run->inputs)
        input_set_free(run->inputs);
    if (run->read_fd > STDIN_FILENO)
        close(run->read_fd);
    watch_free(run->watch);
    control_close(run->control);
    if (run->alerts)
        alerts_free(run->alerts);   /* before the rule set it borrows */
    ruleset_free(run->rs);
}

/* Takes ownership of rs. */
static int run_rules(const RunOptions *o, CompiledRuleSet *rs)
{
    Run run = {.opts = o, .rs = rs, .event_time = rs->event_time, .read_fd = -1};
    RunState state;
    /* recovery cuts the files back before anything opens them */
    if (o->state && run_state_open(&state, o->state, o->checkpoint_every_ms, o->errors,
                                   o->late) < 0) {
        run_state_close(&state);
        ruleset_free(rs);
        return EXIT_IO;
    }
    run.state = o->state ? &state : NULL;
    if (rejects_open(&run.rejects, o->errors, o->late) < 0) {
        if (run.state)
            run_state_close(run.state);
        ruleset_free(rs);
        return EXIT_IO;
    }
    sigset_t signals;
    take_signals(&signals);
    run.started_ms = run.last_progress_ms = clock_monotonic_ms();
    int code = start(&run, o) < 0 ? EXIT_IO : serve(&run, &signals);
    if (rejects_close(&run.rejects) < 0) {
        fprintf(stderr, "vigil run: writing --errors or --late failed\n");
        code = EXIT_IO;
    }
    run_free(&run);
    if (run.state)
        run_state_close(run.state);
    return code;
}

int cmd_run(int argc, char **argv)
{
    RunOptions o;
    int code = parse_options(argc, argv, &o);
    if (code < 0 && output_reads_back(&o))
        code = EXIT_USAGE;
    if (code >= 0) {
        free(o.inputs);
        return code;
    }
    Diags diags;
    diags_init(&diags);
    CompiledRuleSet *rs = ruleset_load(o.rule_paths, o.n_rule_paths, &diags);
    diags_print(&diags, stderr);
    bool oom = diags.oom;
    diags_free(&diags);
    if (!rs || oom) {
        /* a load that ran out of memory may still return the rules that fitted:
         * running those would miss the others' alerts without a word */
        ruleset_free(rs);
        free(o.inputs);
        if (oom)
            fprintf(stderr, "vigil run: out of memory\n");
        return oom ? EXIT_IO : EXIT_RULES;
    }
    code = run_rules(&o, rs);
    free(o.inputs);
    return code;
}
