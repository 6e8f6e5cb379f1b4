/* alerts/out_common.c — what every output kind shares: configuration defaults, the
 * log, and the templates of output paths and argv; see outputs.h. */
#include "alerts/outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

void out_config_defaults(OutConfig *c)
{
    c->log = NULL;
    c->log_user = NULL;
    c->net_buffer = 10000;
    c->exec_queue = 1000;
    c->exec_children = 4;
    c->exec_tries = 3;
    c->exec_backoff_ms = 100;
    c->exec_timeout_ms = 10000;
    c->exec_kill_grace_ms = 1000;
    c->flush_timeout_ms = 5000;
    c->file_cache = 64;
    c->fd_buffer = 64 * 1024;
    c->fd_max_delay_ms = 100;
    c->file_opened = NULL;
    c->file_opened_user = NULL;
}

void out_log(const OutConfig *c, const char *fmt, ...)
{
    /* A Buf, not a fixed array: a failed exec logs the whole alert line. */
    Buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    const char *msg = b.failed ? "(out of memory formatting a message)" : b.data;
    if (c->log)
        c->log(c->log_user, msg);
    else
        fprintf(stderr, "vigil: %s\n", msg);
    buf_free(&b);
}

void out_drop_note(const OutConfig *c, OutDropLog *dl, const char *name, const char *why)
{
    int64_t now = clock_monotonic_ms();
    dl->pending++;
    if (dl->logged_once && now - dl->last_ms < OUT_DROP_LOG_INTERVAL_MS)
        return;
    out_log(c, "output %s: %llu alert(s) dropped: %s", name, (unsigned long long)dl->pending, why);
    dl->logged_once = true;
    dl->last_ms = now;
    dl->pending = 0;
}

void out_drop_final(const OutConfig *c, OutDropLog *dl, const char *name, const char *why)
{
    if (dl->pending)
        out_log(c, "output %s: %llu alert(s) dropped: %s", name,
                (unsigned long long)dl->pending, why);
    dl->pending = 0;
}

int out_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : -1;
}

void out_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ms / 1000);
    ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

char *out_span_prefix(Span sp)
{
    if (!sp.src)
        return buf_format("%s", "");
    return buf_format("%s:%d:%d: ", sp.src->path, sp.line, sp.col);
}

/* ---- templates ------------------------------------------------------------ */

static const struct {
    const char *name;
    OutVar var;
} out_var_names[] = {
    {"date", OV_DATE}, {"hour", OV_HOUR}, {"rule", OV_RULE},
    {"kind", OV_KIND}, {"severity", OV_SEVERITY},
};

/* Resolves the {expression} of a template part to a variable; false if it is none. */
static bool out_var_of(const Expr *e, OutVar *var, const char **key)
{
    if (e->kind != EX_PATH || e->u.path.n_segs == 0 || !e->u.path.segs[0].name)
        return false;
    const PathSeg *s = e->u.path.segs;
    if (e->u.path.n_segs == 2 && strcmp(s[0].name, "key") == 0 && s[1].name) {
        *var = OV_KEY;
        *key = s[1].name;
        return true;
    }
    if (e->u.path.n_segs != 1)
        return false;
    for (size_t i = 0; i < sizeof out_var_names / sizeof out_var_names[0]; i++) {
        if (strcmp(s[0].name, out_var_names[i].name) == 0) {
            *var = out_var_names[i].var;
            return true;
        }
    }
    return false;
}

static void out_allowed_list(unsigned allowed, Buf *b)
{
    const char *sep = "";
    for (size_t i = 0; i < sizeof out_var_names / sizeof out_var_names[0]; i++) {
        if (allowed & OV_BIT(out_var_names[i].var)) {
            buf_printf(b, "%s{%s}", sep, out_var_names[i].name);
            sep = ", ";
        }
    }
    if (allowed & OV_BIT(OV_KEY))
        buf_printf(b, "%s{key.NAME}", sep);
}

static char *out_template_error(const Template *t, const Expr *e, unsigned allowed,
                                const char *what)
{
    Buf b = BUF_INIT;
    char *where = out_span_prefix(e ? e->span : t->span);
    buf_printf(&b, "%s%s: this {...} is not allowed here (allowed: ", where ? where : "", what);
    out_allowed_list(allowed, &b);
    buf_puts(&b, ")");
    free(where);
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

int out_template_compile(const Template *t, unsigned allowed, const char *what,
                         OutTemplate *out, char **err)
{
    out->n_parts = 0;
    out->parts = calloc(t->n_parts ? t->n_parts : 1, sizeof *out->parts);
    if (!out->parts)
        goto oom;
    for (size_t i = 0; i < t->n_parts; i++) {
        const TemplatePart *tp = &t->parts[i];
        OutTemplatePart *p = &out->parts[out->n_parts];
        const char *text = tp->text;
        size_t len = tp->len;
        p->var = OV_TEXT;
        if (tp->expr) {
            const char *key = NULL;
            if (!out_var_of(tp->expr, &p->var, &key) || !(allowed & OV_BIT(p->var))) {
                *err = out_template_error(t, tp->expr, allowed, what);
                out_template_free(out);
                return -1;
            }
            text = key;
            len = key ? strlen(key) : 0;
        }
        p->len = len;
        p->text = malloc(len + 1);
        if (!p->text)
            goto oom;
        if (len)
            memcpy(p->text, text, len);
        p->text[len] = '\0';
        out->n_parts++;
    }
    return 0;
oom:
    out_template_free(out);
    *err = buf_format("out of memory");
    return -1;
}

void out_template_free(OutTemplate *t)
{
    for (size_t i = 0; i < t->n_parts; i++)
        free(t->parts[i].text);
    free(t->parts);
    t->parts = NULL;
    t->n_parts = 0;
}

bool out_template_is_literal(const OutTemplate *t)
{
    for (size_t i = 0; i < t->n_parts; i++)
        if (t->parts[i].var != OV_TEXT)
            return false;
    return true;
}

bool out_template_uses(const OutTemplate *t, OutVar var)
{
    for (size_t i = 0; i < t->n_parts; i++)
        if (t->parts[i].var == var)
            return true;
    return false;
}

static void out_utc(int64_t ms, struct tm *tm)
{
    int64_t s = ms / 1000 - (ms % 1000 < 0);   /* floor, for times before 1970 */
    time_t tt = (time_t)s;
    gmtime_r(&tt, tm);
}

/* A key's text, or "" when the rule has no key of that name. */
static const char *out_key_text(const AlertMeta *m, const char *name)
{
    for (size_t i = 0; i < m->n_key; i++)
        if (strcmp(m->key_names[i], name) == 0)
            return m->key_texts[i];
    return "";
}

void out_template_render(const OutTemplate *t, const AlertMeta *m, Buf *out)
{
    struct tm tm;
    for (size_t i = 0; i < t->n_parts; i++) {
        const OutTemplatePart *p = &t->parts[i];
        switch (p->var) {
        case OV_TEXT: buf_append(out, p->text, p->len); break;
        case OV_DATE:
            out_utc(m->time_ms, &tm);
            buf_printf(out, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
            break;
        case OV_HOUR:
            out_utc(m->time_ms, &tm);
            buf_printf(out, "%02d", tm.tm_hour);
            break;
        case OV_RULE: buf_puts(out, m->rule); break;
        case OV_KIND: buf_puts(out, m->kind); break;
        case OV_SEVERITY: buf_puts(out, m->severity); break;
        case OV_KEY: buf_puts(out, out_key_text(m, p->text)); break;
        }
    }
}
