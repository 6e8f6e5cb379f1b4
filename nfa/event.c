/* nfa/event.c — the field table, reference-counted events and match-chain nodes;
 * see event.h. */
#include "nfa/event.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* ---- field table ---------------------------------------------------------- */

void field_table_init(FieldTable *ft)
{
    ft->paths = NULL;
    ft->n = 0;
    ft->cap = 0;
}

static void field_path_free(FieldPath *p)
{
    for (size_t i = 0; i < p->n_segs; i++)
        free((char *)p->segs[i].name);
    free(p->segs);
    free(p->text);
}

void field_table_free(FieldTable *ft)
{
    for (size_t i = 0; i < ft->n; i++)
        field_path_free(&ft->paths[i]);
    free(ft->paths);
    field_table_init(ft);
}

static bool seg_equal(const PathSeg *a, const PathSeg *b)
{
    if (!a->name || !b->name)
        return !a->name && !b->name && a->index == b->index;
    return strcmp(a->name, b->name) == 0;
}

static bool path_equal(const FieldPath *p, const PathSeg *segs, size_t n_segs)
{
    if (p->n_segs != n_segs)
        return false;
    for (size_t i = 0; i < n_segs; i++)
        if (!seg_equal(&p->segs[i], &segs[i]))
            return false;
    return true;
}

/* "payload.card.bin", "items[0].sku"; NULL on allocation failure. */
static char *path_text(const PathSeg *segs, size_t n_segs)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < n_segs; i++) {
        if (segs[i].name) {
            if (i > 0)
                buf_putc(&b, '.');
            buf_puts(&b, segs[i].name);
        } else {
            buf_printf(&b, "[%ld]", segs[i].index);
        }
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* Heap copy of a path (names duplicated); false on allocation failure. */
static bool field_path_copy(FieldPath *dst, const PathSeg *segs, size_t n_segs)
{
    memset(dst, 0, sizeof *dst);
    dst->segs = calloc(n_segs ? n_segs : 1, sizeof *dst->segs);
    dst->text = path_text(segs, n_segs);
    if (!dst->segs || !dst->text) {
        field_path_free(dst);
        return false;
    }
    for (size_t i = 0; i < n_segs; i++) {
        dst->segs[i] = segs[i];
        dst->segs[i].name = NULL;
        dst->n_segs = i + 1;
        if (segs[i].name && !(dst->segs[i].name = strdup(segs[i].name))) {
            field_path_free(dst);
            return false;
        }
    }
    return true;
}

int field_table_intern(FieldTable *ft, const PathSeg *segs, size_t n_segs)
{
    for (size_t i = 0; i < ft->n; i++)
        if (path_equal(&ft->paths[i], segs, n_segs))
            return (int)i;
    if (ft->n >= (size_t)INT32_MAX)
        return -1;
    if (ft->n == ft->cap) {
        size_t cap = ft->cap ? ft->cap * 2 : 16;
        FieldPath *paths = realloc(ft->paths, cap * sizeof *paths);
        if (!paths)
            return -1;
        ft->paths = paths;
        ft->cap = cap;
    }
    if (!field_path_copy(&ft->paths[ft->n], segs, n_segs))
        return -1;
    return (int)ft->n++;
}

/* ---- events --------------------------------------------------------------- */

Event *event_new_room(const char *line, size_t line_len, size_t n_slots, size_t room)
{
    /* Layout: Event | slots | string room | line + NUL. */
    size_t room_off = offsetof(Event, slots);
    if (n_slots > UINT32_MAX || n_slots > (SIZE_MAX - room_off) / sizeof(Value))
        return NULL;
    room_off += n_slots * sizeof(Value);
    if (room > SIZE_MAX - room_off - 1 || line_len > SIZE_MAX - room_off - 1 - room)
        return NULL;
    Event *ev = malloc(room_off + room + line_len + 1);
    if (!ev)
        return NULL;
    memset(ev, 0, sizeof *ev);
    ev->refs = 1;
    ev->n_slots = (uint32_t)n_slots;
    for (size_t i = 0; i < n_slots; i++)
        ev->slots[i] = value_missing();
    char *text = (char *)ev + room_off + room;
    if (line_len)
        memcpy(text, line, line_len);
    text[line_len] = '\0';
    ev->line = text;
    ev->line_len = line_len;
    return ev;
}

Event *event_new(const char *line, size_t line_len, size_t n_slots)
{
    return event_new_room(line, line_len, n_slots, 0);
}

Event *event_clone(const Event *ev)
{
    size_t room = event_room_len(ev);
    Event *c = event_new_room(ev->line, ev->line_len, ev->n_slots, room);
    if (!c)
        return NULL;
    c->id = ev->id;
    c->time_ms = ev->time_ms;
    c->origin = ev->origin;
    c->origin_line = ev->origin_line;
    const char *text = (const char *)(ev->slots + ev->n_slots);
    if (room)
        memcpy(event_room(c), text, room);
    /* Room and line are contiguous in both, so one shift moves every pointer. */
    for (size_t i = 0; i < ev->n_slots; i++) {
        c->slots[i] = ev->slots[i];
        value_rebase(&c->slots[i], text, room + ev->line_len + 1, event_room(c));
    }
    return c;
}

void event_release(Event *ev)
{
    if (ev && --ev->refs == 0)
        free(ev);
}

/* ---- match chains --------------------------------------------------------- */

MatchNode *match_node_new(MatchNode *prev, Event *event, uint16_t step)
{
    return match_node_new_acc(prev, event, step, 0);
}

MatchNode *match_node_new_acc(MatchNode *prev, Event *event, uint16_t step, uint16_t n_acc)
{
    MatchNode *n = malloc(sizeof *n + n_acc * sizeof(AggAcc));
    if (!n)
        return NULL;
    n->prev = prev;
    n->event = event;
    n->refs = 1;
    n->step = step;
    n->n_acc = n_acc;
    if (n_acc && prev && prev->n_acc == n_acc)
        memcpy(n->acc, prev->acc, n_acc * sizeof(AggAcc));
    else if (n_acc)
        memset(n->acc, 0, n_acc * sizeof(AggAcc));
    if (prev)
        match_node_retain(prev);
    if (event)
        event_retain(event);
    return n;
}

void match_node_release(MatchNode *n)
{
    /* A loop, not recursion: one release can free a chain of any length. */
    while (n && --n->refs == 0) {
        MatchNode *prev = n->prev;
        event_release(n->event);
        free(n);
        n = prev;
    }
}
