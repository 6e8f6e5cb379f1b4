/* nfa/explain.c — a compiled Nfa as readable text or as Graphviz dot.
 *
 * Owns only the rendering: states with their kind and step, edges with their
 * action and condition (step conditions printed in the rule language's canonical
 * text). The text form is stable so tests and users can diff it. */
#include "nfa/nfa.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "nfa/nfa_internal.h"

static void cond_text(const Nfa *nfa, uint32_t c, Buf *out, bool nested)
{
    const NfaCond *cd = &nfa->conds[c];
    switch ((NfaCondKind)cd->kind) {
    case NFA_C_TRUE:
        buf_puts(out, "true");
        break;
    case NFA_C_WHERE:
    case NFA_C_UNTIL: {
        const NfaStep *s = &nfa->steps[cd->step];
        const char *t = cd->kind == NFA_C_WHERE ? s->where_text : s->until_text;
        buf_printf(out, "%s(%s: %s)", cd->kind == NFA_C_WHERE ? "where" : "until", s->name,
                   t ? t : "?");
        break;
    }
    case NFA_C_NOT:
        buf_puts(out, "not ");
        cond_text(nfa, cd->a, out, true);
        break;
    case NFA_C_AND:
        if (nested)
            buf_putc(out, '(');
        cond_text(nfa, cd->a, out, true);
        buf_puts(out, " and ");
        cond_text(nfa, cd->b, out, true);
        if (nested)
            buf_putc(out, ')');
        break;
    }
}

/* The largest unit that divides the duration, as the rule language writes it. */
static void duration_text(int64_t ms, Buf *out)
{
    static const struct { int64_t ms; const char *unit; } units[] = {
        {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ms % units[i].ms == 0) {
            buf_printf(out, "%" PRId64 "%s", ms / units[i].ms, units[i].unit);
            return;
        }
    buf_printf(out, "%" PRId64 "ms", ms);
}

static const char *skip_name(SkipKind k)
{
    switch (k) {
    case SKIP_NO_SKIP: return "no_skip";
    case SKIP_TO_NEXT: return "to_next";
    case SKIP_TO_FIRST: return "to_first";
    case SKIP_TO_LAST: return "to_last";
    case SKIP_PAST_LAST_EVENT: break;
    }
    return "past_last_event";
}

static void header_text(const Nfa *nfa, Buf *out)
{
    buf_printf(out, "rule %s: %zu states, %zu edges, start %s", nfa->rule_name, nfa->n_states,
               nfa->n_edges, nfa->states[nfa->start].label);
    if (nfa->within_ms > 0) {
        buf_puts(out, ", within ");
        duration_text(nfa->within_ms, out);
    }
    buf_printf(out, ", skip %s", skip_name(nfa->skip));
    if (nfa->skip == SKIP_TO_FIRST || nfa->skip == SKIP_TO_LAST)
        buf_printf(out, " %s", nfa->steps[nfa->skip_step].name);
}

static void state_text(const Nfa *nfa, uint32_t i, Buf *out)
{
    const NfaState *s = &nfa->states[i];
    buf_printf(out, "  %s [%s%s]", s->label, i == nfa->start ? "start, " : "",
               nfa_state_kind_name((NfaStateKind)s->kind));
    if (s->within_ms > 0) {
        buf_puts(out, " within ");
        duration_text(s->within_ms, out);
    }
    buf_putc(out, '\n');
    for (uint32_t j = 0; j < s->n_edges; j++) {
        const NfaEdge *e = &nfa->edges[s->first_edge + j];
        buf_printf(out, "    %-7s -> %s if ", nfa_action_name((NfaAction)e->action),
                   nfa->states[e->target].label);
        cond_text(nfa, e->cond, out, false);
        buf_putc(out, '\n');
    }
}

static void dot_escaped(const char *s, Buf *out)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            buf_putc(out, '\\');
        if (*s == '\n')
            buf_puts(out, "\\n");
        else
            buf_putc(out, *s);
    }
}

static void dot_graph(const Nfa *nfa, Buf *out)
{
    Buf tmp = BUF_INIT;
    buf_puts(out, "digraph \"");
    dot_escaped(nfa->rule_name, out);
    buf_puts(out, "\" {\n  rankdir=LR;\n  node [shape=circle, fontname=\"Helvetica\"];\n"
                  "  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (uint32_t i = 0; i < nfa->n_states; i++) {
        const NfaState *s = &nfa->states[i];
        const char *shape = s->kind == NFA_ST_FINAL   ? "doublecircle"
                            : s->kind == NFA_ST_STOP  ? "octagon"
                            : s->kind == NFA_ST_PENDING ? "doubleoctagon"
                                                        : "circle";
        buf_printf(out, "  s%" PRIu32 " [label=\"", i);
        dot_escaped(s->label, out);
        buf_printf(out, "\", shape=%s%s];\n", shape, i == nfa->start ? ", style=bold" : "");
    }
    for (size_t i = 0; i < nfa->n_edges; i++) {
        const NfaEdge *e = &nfa->edges[i];
        buf_clear(&tmp);
        buf_printf(&tmp, "%s: ", nfa_action_name((NfaAction)e->action));
        cond_text(nfa, e->cond, &tmp, false);
        if (tmp.failed)   /* before buf_clear forgets it: an edge without its label */
            out->failed = true;
        buf_printf(out, "  s%" PRIu32 " -> s%" PRIu32 " [label=\"", e->source, e->target);
        dot_escaped(tmp.data ? tmp.data : "", out);
        buf_printf(out, "\"%s];\n", e->action == NFA_PROCEED ? ", style=dashed"
                                    : e->action == NFA_IGNORE ? ", style=dotted" : "");
    }
    buf_puts(out, "}\n");
    buf_free(&tmp);
}

int nfa_explain(const Nfa *nfa, FILE *out, bool dot)
{
    Buf b = BUF_INIT;
    if (dot) {
        dot_graph(nfa, &b);
    } else {
        header_text(nfa, &b);
        buf_putc(&b, '\n');
        uint32_t *order = malloc(nfa->n_states * sizeof *order);
        if (!order) {
            b.failed = true;
        } else {
            nfa_state_order(nfa, order);
            for (size_t i = 0; i < nfa->n_states; i++)
                state_text(nfa, order[i], &b);
        }
        free(order);
    }
    /* the caller reports the failure: a half-rendered automaton or a note in the
     * output would read as the rule's explanation */
    int rc = b.failed ? -1 : 0;
    if (!b.failed && b.data)
        fwrite(b.data, 1, b.len, out);
    buf_free(&b);
    return rc;
}
