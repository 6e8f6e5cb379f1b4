/* alerts/alerts.h — alert records and their delivery to outputs.
 *
 * Owns: the outputs of a rule set (stdout or -o FILE, file with path templates and
 * rotation, exec without a shell, tcp/unix clients with bounded buffers) and the
 * rendering of alert records (RUNTIME.md section 4): byte-exact JSON, valid UTF-8,
 * events echoed verbatim, message templates and `fields` evaluated on the match.
 * A rule with no `on` clause at all alerts on match with its name as the message.
 *
 * The record: {"rule","kind","severity","key","time","message","fields","events"} in
 * that order, one line, no spaces. "key" is {} for a rule without key; "fields" is
 * always present ({} when the action has none), so consumers need no special case.
 *
 * Threads: alert_render uses only its arguments. One router may be shared by several
 * engine threads: every output has its own lock, and the slow ones (exec, tcp, unix)
 * work in their own threads, so alerts_deliver never waits for a child or a network.
 *
 * Buffering: `stdout` and `file` outputs write in batches (64 KiB, or at the next alert
 * once the oldest buffered line is 100 ms old). Call alerts_idle whenever the input
 * goes idle (it never waits), so no alert sits in a buffer while nothing happens, and
 * alerts_flush at shutdown. */
#ifndef VIGIL_ALERTS_ALERTS_H
#define VIGIL_ALERTS_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/nfa.h"
#include "rules/ruleset.h"

typedef struct AlertRouter AlertRouter;

typedef struct AlertOptions {
    const char *stdout_path;   /* -o FILE for the `stdout` output; NULL or "-" for stdout */
    /* The rest is optional: zero / NULL selects the default. */
    void (*log)(void *user, const char *msg);  /* output failures; default: stderr */
    void *log_user;
    size_t net_buffer;         /* alerts buffered per tcp/unix output while down (10000) */
    size_t exec_queue;         /* alerts waiting per exec output (1000) */
    size_t exec_children;      /* children at once per exec output (4) */
    int exec_tries;            /* attempts per alert and exec output (3) */
    int64_t exec_backoff_ms;   /* before the 2nd attempt, doubling (100) */
    int64_t flush_timeout_ms;  /* alerts_flush waits at most this long in all (5000) */
    /* Checkpoints: called when the stdout (-o FILE) or a file output opens a path for
     * the first time in this run, before anything is written to it; may be NULL.
     * Called from the thread that delivers the alert. */
    void (*file_opened)(void *user, const char *path);
    void *file_opened_user;
} AlertOptions;

/* Opens every output the rule set declares (opts may be NULL). The rule set must
 * outlive the router. NULL with *err (heap) on failure. */
AlertRouter *alerts_new(const CompiledRuleSet *rs, const AlertOptions *opts, char **err);
/* The same for a reload: an output declared exactly as one of prev's (name, kind,
 * target, options) is not opened again but taken over from prev by alerts_adopt,
 * with what it buffers, its connection, queue and children, and its counters, so
 * that a reload loses and delays nothing on it. Until then the router is not usable
 * (alerts_free is fine); prev must stay as it is. */
AlertRouter *alerts_new_after(const CompiledRuleSet *rs, const AlertOptions *opts,
                              const AlertRouter *prev, char **err);
/* Moves the outputs next takes over from prev (see alerts_new_after); call it while no
 * thread delivers to either. prev keeps the others, to flush and free. */
void alerts_adopt(AlertRouter *next, AlertRouter *prev);
/* Appends one alert record (one line of JSON, no newline) to out. Returns 0, or -1
 * on allocation failure. `key` holds the partition's key values (n_key of them).
 * action NULL is the default action (severity medium, the rule name as message).
 * Expression results stay in scratch until the caller resets it. */
int alert_render(const CompiledRule *rule, const CompiledAction *action,
                 const Value *key, size_t n_key, const NfaResult *r,
                 EvalScratch *scratch, Buf *out);
/* Renders every action of the rule that fits r->kind and sends each record to its
 * outputs. A rule without any `on` clause uses the default action on match. The
 * events of r must come from decoder_decode (every engine event does): their lines
 * are echoed without being validated again. */
void alerts_deliver(AlertRouter *ar, const CompiledRule *rule,
                    const Value *key, size_t n_key, const NfaResult *r, EvalScratch *scratch);
/* How many alerts were lost because memory ran out while rendering them (each was
 * logged); a run that lost any did not do its job. */
uint64_t alerts_lost(const AlertRouter *ar);
/* Flushes buffered output (end of input, SIGTERM), waiting at most flush_timeout_ms
 * for exec children and network outputs to deliver what they hold. Returns 0, or -1
 * if something is still undelivered or an output failed since the previous flush. */
int alerts_flush(AlertRouter *ar);
/* Writes out the stdout and file buffers without waiting for anything (call it when
 * the input is idle). Exec and network outputs deliver on their own threads anyway. */
void alerts_idle(AlertRouter *ar);
/* Checkpoints (vigil run --state): writes out the stdout and file buffers, syncs them
 * to disk and calls fn once for every file the `stdout` output (-o FILE) and the file
 * outputs have written to in this run, with its current length. Call it while no
 * thread delivers alerts. -1 if a buffer could not be written or synced (the lengths
 * reported may then be short of what the caller has already counted as done). */
int alerts_sync_files(AlertRouter *ar, void (*fn)(void *user, const char *path,
                                                  uint64_t length), void *user);
/* Appends a JSON object with per-output counters and health to out:
 * {"stdout":{"kind":"stdout","sent":1,"failed":0,"dropped":0,"buffered":0,
 *  "healthy":true,"state":"ok"},"NAME":{...}} */
void alerts_stats(const AlertRouter *ar, Buf *out);
/* At exit, after alerts_flush and before the last alerts_stats: stops the threads and
 * children of exec and network outputs and counts what they still hold as dropped
 * (logged). No alert may be delivered afterwards; alerts_free follows. */
void alerts_finish(AlertRouter *ar);
/* Alerts its outputs dropped or failed to deliver so far (the sum of their stats). */
uint64_t alerts_undelivered(const AlertRouter *ar);
/* Flushes what it can without waiting, stops threads, kills running children;
 * alerts still undelivered are counted as dropped and logged. */
void alerts_free(AlertRouter *ar);

/* "info" ... "critical"; "match" / "timeout" (inline: asked at every alert). */
const char *alert_severity_name(Severity s);
static inline const char *alert_kind_name(NfaResultKind k)
{
    return k == NFA_TIMEOUT ? "timeout" : "match";
}

#endif
