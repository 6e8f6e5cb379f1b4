/* cli/json_tree.c — recursive-descent JSON parser into an arena tree, and subset
 * comparison. Strictness matches RFC 8259 closely enough for test files; the
 * decoder (runtime/decode.c) stays the authority for event input. */
#include "cli/json_tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define JSON_TREE_MAX_DEPTH 128

const char JSON_TREE_NO_MEMORY[] = "out of memory";

typedef struct Parser {
    Arena *arena;
    const char *p, *end, *start;
    const char *err;
    const char *err_pos;
} Parser;

static bool fail(Parser *ps, const char *why)
{
    if (!ps->err) {
        ps->err = why;
        ps->err_pos = ps->p;
    }
    return false;
}

static void skip_ws(Parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static bool literal(Parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
        return fail(ps, "invalid literal");
    ps->p += n;
    return true;
}



/* Reads the \uXXXX escape at ps->p (after the backslash-u), joining surrogate pairs. */
static bool unicode_escape(Parser *ps, uint32_t *cp)
{
    if (ps->end - ps->p < 4 || hex4_value(ps->p) < 0)
        return fail(ps, "invalid \\u escape");
    *cp = (uint32_t)hex4_value(ps->p);
    ps->p += 4;
    if (*cp >= 0xD800 && *cp <= 0xDBFF && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
        ps->p[1] == 'u' && hex4_value(ps->p + 2) >= 0xDC00 && hex4_value(ps->p + 2) <= 0xDFFF) {
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + ((uint32_t)hex4_value(ps->p + 2) - 0xDC00);
        ps->p += 6;
    } else if (*cp >= 0xD800 && *cp <= 0xDFFF) {
        *cp = 0xFFFD;   /* a lone surrogate has no UTF-8 form */
    }
    return true;
}

/* Decodes a string at ps->p (the opening quote); the result is NUL-terminated. */
static bool parse_string(Parser *ps, const char **out, size_t *out_len)
{
    ps->p++;
    /* decoded text is never longer than its source */
    char *buf = arena_alloc(ps->arena, (size_t)(ps->end - ps->p) + 1);
    if (!buf)
        return fail(ps, JSON_TREE_NO_MEMORY);
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20)
            return fail(ps, "control character in string");
        if (c != '\\') {
            buf[n++] = (char)c;
            continue;
        }
        if (ps->p >= ps->end)
            break;
        char esc = *ps->p++;
        uint32_t cp;
        switch (esc) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u':
            if (!unicode_escape(ps, &cp))
                return false;
            n += utf8_encode(cp, buf + n);
            break;
        default:
            return fail(ps, "invalid escape in string");
        }
    }
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    ps->p++;
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return true;
}

static bool parse_number(Parser *ps, JsonNode *node)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    size_t digits = 0;
    while (ps->p < ps->end && ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' ||
                               *ps->p == 'e' || *ps->p == 'E' || *ps->p == '+' || *ps->p == '-')) {
        ps->p++;
        digits++;
    }
    if (!digits)
        return fail(ps, "unexpected character");
    char tmp[64];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof tmp)
        return fail(ps, "number too long");
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *endp;
    node->num = strtod(tmp, &endp);
    if (*endp)
        return fail(ps, "invalid number");
    node->type = JT_NUM;
    return true;
}

static JsonNode *parse_value(Parser *ps, int depth);

static bool parse_array(Parser *ps, JsonNode *node, int depth)
{
    size_t cap = 0;
    node->type = JT_ARR;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return true;
    }
    for (;;) {
        JsonNode *item = parse_value(ps, depth + 1);
        if (!item)
            return false;
        if (node->n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            node->items = arena_grow(ps->arena, node->items, cap * sizeof *node->items,
                                     ncap * sizeof *node->items);
            if (!node->items)
                return fail(ps, JSON_TREE_NO_MEMORY);
            cap = ncap;
        }
        node->items[node->n++] = item;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return true;
        }
        return fail(ps, "expected ',' or ']'");
    }
}

/* Index of the member called name, or SIZE_MAX. */
static size_t find_member(const JsonNode *obj, const char *name, size_t len)
{
    for (size_t i = 0; i < obj->n; i++)
        if (obj->members[i].name_len == len && !memcmp(obj->members[i].name, name, len))
            return i;
    return SIZE_MAX;
}

static bool parse_object(Parser *ps, JsonNode *node, int depth)
{
    size_t cap = 0;
    node->type = JT_OBJ;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"')
            return fail(ps, "expected a member name");
        const char *name;
        size_t len;
        if (!parse_string(ps, &name, &len))
            return false;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail(ps, "expected ':' after member name");
        ps->p++;
        JsonNode *value = parse_value(ps, depth + 1);
        if (!value)
            return false;
        size_t seen = find_member(node, name, len);
        if (seen != SIZE_MAX) {
            node->members[seen].value = value;
        } else {
            if (node->n == cap) {
                size_t ncap = cap ? cap * 2 : 4;
                node->members = arena_grow(ps->arena, node->members, cap * sizeof *node->members,
                                           ncap * sizeof *node->members);
                if (!node->members)
                    return fail(ps, JSON_TREE_NO_MEMORY);
                cap = ncap;
            }
            node->members[node->n++] = (JsonMember){name, len, value};
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return true;
        }
        return fail(ps, "expected ',' or '}'");
    }
}

static JsonNode *parse_value(Parser *ps, int depth)
{
    if (depth > JSON_TREE_MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of text");
        return NULL;
    }
    JsonNode *node = arena_zalloc(ps->arena, sizeof *node);
    if (!node) {
        fail(ps, JSON_TREE_NO_MEMORY);
        return NULL;
    }
    bool ok;
    switch (*ps->p) {
    case '{': ok = parse_object(ps, node, depth); break;
    case '[': ok = parse_array(ps, node, depth); break;
    case '"':
        node->type = JT_STR;
        ok = parse_string(ps, &node->str, &node->len);
        break;
    case 't': node->type = JT_BOOL; node->boolean = true; ok = literal(ps, "true"); break;
    case 'f': node->type = JT_BOOL; ok = literal(ps, "false"); break;
    case 'n': node->type = JT_NULL; ok = literal(ps, "null"); break;
    default: ok = parse_number(ps, node); break;
    }
    return ok ? node : NULL;
}

bool json_tree_parse(JsonTree *t, const char *text, size_t len, const char **err,
                     size_t *err_at)
{
    arena_init(&t->arena, 4096);
    Parser ps = {&t->arena, text, text + len, text, NULL, NULL};
    t->root = parse_value(&ps, 0);
    if (t->root) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, "text after the JSON value");
            t->root = NULL;
        }
    }
    if (!t->root) {
        *err = ps.err;
        *err_at = (size_t)(ps.err_pos - text);
        return false;
    }
    return true;
}

void json_tree_free(JsonTree *t)
{
    arena_free(&t->arena);
    t->root = NULL;
}

const JsonNode *json_tree_get(const JsonNode *obj, const char *name)
{
    if (!obj || obj->type != JT_OBJ)
        return NULL;
    size_t i = find_member(obj, name, strlen(name));
    return i == SIZE_MAX ? NULL : obj->members[i].value;
}

bool json_tree_subset(const JsonNode *want, const JsonNode *got)
{
    if (want->type != got->type)
        return false;
    switch (want->type) {
    case JT_NULL: return true;
    case JT_BOOL: return want->boolean == got->boolean;
    case JT_NUM: return want->num == got->num;
    case JT_STR: return want->len == got->len && !memcmp(want->str, got->str, want->len);
    case JT_ARR:
        if (want->n != got->n)
            return false;
        for (size_t i = 0; i < want->n; i++)
            if (!json_tree_subset(want->items[i], got->items[i]))
                return false;
        return true;
    case JT_OBJ:
        for (size_t i = 0; i < want->n; i++) {
            const JsonMember *m = &want->members[i];
            size_t g = find_member(got, m->name, m->name_len);
            if (g == SIZE_MAX || !json_tree_subset(m->value, got->members[g].value))
                return false;
        }
        return true;
    }
    return false;
}
