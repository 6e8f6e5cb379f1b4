/* alerts/outputs.h — the outputs an alert line can be written to (internal to alerts/).
 *
 * Owns: the Output interface and its four kinds: stdout (or -o FILE), file (path
 * templates, a cache of open files, rotation), exec (a worker thread spawning children
 * without a shell) and net (tcp/unix clients with a background thread and a bounded
 * buffer). An output receives an already rendered alert line plus the AlertMeta its
 * path or argv templates need; it never sees events or expressions, so this layer has
 * no dependency on the expression evaluator.
 *
 * Every Output is safe to call from several threads at once (each has its own lock).
 * Messages about failures go to OutConfig.log (stderr when NULL), never to stdout. */
#ifndef VIGIL_ALERTS_OUTPUTS_H
#define VIGIL_ALERTS_OUTPUTS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "dsl/ast.h"

/* What path and argv templates may name. Strings are borrowed for one write call. */
typedef struct AlertMeta {
    const char *rule;
    const char *kind;                 /* "match" or "timeout" */
    const char *severity;             /* "info" ... "critical" */
    const char *const *key_names;     /* n_key names */
    const char *const *key_texts;     /* n_key values as text (NUL-terminated) */
    size_t n_key;
    int64_t time_ms;                  /* the alert's time */
} AlertMeta;

typedef void (*AlertLogFn)(void *user, const char *msg);

/* Tunables with their defaults already applied (see out_config_defaults). */
typedef struct OutConfig {
    AlertLogFn log;             /* NULL: stderr */
    void *log_user;
    size_t net_buffer;          /* alerts kept per tcp/unix output while it is down */
    size_t exec_queue;          /* alerts waiting per exec output */
    size_t exec_children;       /* children running at once per exec output */
    int exec_tries;             /* attempts per alert before it is logged as failed */
    int64_t exec_backoff_ms;    /* delay before the 2nd try; doubles after each failure */
    int64_t exec_timeout_ms;    /* when the output declares no `timeout` */
    int64_t exec_kill_grace_ms; /* SIGTERM at the timeout, SIGKILL this much later */
    int64_t flush_timeout_ms;   /* how long a flush waits for asynchronous outputs */
    size_t file_cache;          /* open files kept per file output */
    size_t fd_buffer;           /* bytes buffered per stdout/file before a write */
    int64_t fd_max_delay_ms;    /* a buffered line is written at the next alert after this */
    void (*file_opened)(void *user, const char *path);   /* AlertOptions.file_opened */
    void *file_opened_user;
} OutConfig;

void out_config_defaults(OutConfig *c);

/* Formats a message (no newline needed) and hands it to the configured log. */
void out_log(const OutConfig *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Rate-limited reporting of dropped alerts: the first drop is logged at once, later
 * ones at most every OUT_DROP_LOG_INTERVAL_MS with their count. Never silent. */
#define OUT_DROP_LOG_INTERVAL_MS 10000
typedef struct OutDropLog {
    int64_t last_ms;
    uint64_t pending;        /* drops not yet logged */
    bool logged_once;
} OutDropLog;
void out_drop_note(const OutConfig *c, OutDropLog *dl, const char *name, const char *why);
/* Logs drops not yet reported (at shutdown). */
void out_drop_final(const OutConfig *c, OutDropLog *dl, const char *name, const char *why);

/* Condition variables on CLOCK_MONOTONIC, so waits ignore wall-clock jumps. */
int out_cond_init(pthread_cond_t *cv);
void out_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms);

/* Counters of one output, read under its lock. */
typedef struct OutStats {
    uint64_t sent;        /* lines written / delivered */
    uint64_t failed;      /* lines lost to an error after retries */
    uint64_t dropped;     /* lines refused because a buffer or queue was full, or left at exit */
    uint64_t buffered;    /* lines accepted but not yet delivered */
    bool healthy;         /* the last attempt succeeded (or none was made yet) */
    const char *state;    /* short word: "ok", "failing", "connected", "connecting", "down" */
} OutStats;

typedef struct Output Output;
typedef struct OutputOps {
    /* Accepts one alert line (no newline). Returns 0, or -1 if it was lost (counted). */
    int (*write)(Output *o, const AlertMeta *m, const char *line, size_t len);
    /* Delivers what is buffered, waiting at most timeout_ms for asynchronous outputs.
     * Returns -1 if something is still undelivered or failed since the last flush. */
    int (*flush)(Output *o, int64_t timeout_ms);
    /* Writes out what is buffered without waiting; NULL for outputs that deliver in
     * their own thread. Leaves flush's "failed since" accounting alone. */
    void (*drain)(Output *o);
    void (*stats)(Output *o, OutStats *st);
    void (*destroy)(Output *o);   /* stops threads and children, counts what is left */
    /* Checkpoints: writes out, syncs, and reports every file written in this run with
     * its length; -1 on a failed write or sync. NULL for outputs without files. */
    int (*sync_files)(Output *o, void (*fn)(void *user, const char *path, uint64_t length),
                      void *user);
    /* At exit, before the last stats: stops the output's thread and children and counts
     * what is left as dropped, so the stats say what became of every alert. The output
     * takes no more alerts; destroy follows. NULL for outputs without a thread. */
    void (*finish)(Output *o);
} OutputOps;

struct Output {
    const OutputOps *ops;
    const char *name;     /* name_owned, or "stdout" */
    char *name_owned;     /* a copy of the declared name: a reload hands an unchanged
                             output to the next rule set, whose AST outlives the old one */
    const char *kind;     /* "stdout", "file", "exec", "tcp", "unix" */
    bool reads_keys;      /* write reads AlertMeta.key_texts (else they may be left out) */
};

/* Each constructor returns NULL with *err (heap message) on failure. The OutputDecl and
 * the config must outlive the output. */
Output *out_stdout_new(const char *path, const OutConfig *cfg, char **err);
Output *out_file_new(const OutputDecl *d, const OutConfig *cfg, char **err);
Output *out_exec_new(const OutputDecl *d, const OutConfig *cfg, char **err);
Output *out_net_new(const OutputDecl *d, const OutConfig *cfg, char **err);

/* ---- templates of output paths and argv ---------------------------------- */

typedef enum {
    OV_TEXT, OV_DATE, OV_HOUR, OV_RULE, OV_KIND, OV_SEVERITY, OV_KEY,
} OutVar;

#define OV_BIT(v) (1u << (v))

typedef struct OutTemplatePart {
    OutVar var;
    char *text;           /* OV_TEXT: the literal; OV_KEY: the key name; heap, owned */
    size_t len;
} OutTemplatePart;

typedef struct OutTemplate {
    OutTemplatePart *parts;   /* heap, owned */
    size_t n_parts;
} OutTemplate;

/* Compiles a Template whose {names} must be among `allowed` (OV_BIT mask). `what`
 * names the template in messages ("output 'x' path"). 0, or -1 with *err. */
int out_template_compile(const Template *t, unsigned allowed, const char *what,
                         OutTemplate *out, char **err);
void out_template_render(const OutTemplate *t, const AlertMeta *m, Buf *out);
bool out_template_is_literal(const OutTemplate *t);
bool out_template_uses(const OutTemplate *t, OutVar var);
void out_template_free(OutTemplate *t);

/* "file:line:col: " for a span (empty without a source); heap, NULL on OOM. */
char *out_span_prefix(Span sp);

#endif
