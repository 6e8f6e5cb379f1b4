/* tests/fuzz/fuzz_decode.c — libFuzzer target for the JSON-lines decoder.
 *
 * Each input is one line for decoder_decode (over a field table with plain, nested
 * and array-index paths) and one text for json_validate. Beyond "no crash", the two
 * must agree: a line the decoder accepts is valid JSON, a valid JSON object is
 * accepted, and every extracted slot's raw text and its JSON rendering are valid
 * JSON again (the engine echoes them into alert records verbatim). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct SegSpec {
    const char *name;   /* NULL: an index segment */
    long index;
} SegSpec;

/* Paths as the rules would name them: user, ts, payload.card.bin, items[0].sku,
 * items[2], a.b.c.d (deeper than most inputs), `` (an empty member name). */
static const SegSpec PATH_USER[] = {{"user", 0}};
static const SegSpec PATH_TS[] = {{"ts", 0}};
static const SegSpec PATH_BIN[] = {{"payload", 0}, {"card", 0}, {"bin", 0}};
static const SegSpec PATH_SKU[] = {{"items", 0}, {NULL, 0}, {"sku", 0}};
static const SegSpec PATH_ITEM2[] = {{"items", 0}, {NULL, 2}};
static const SegSpec PATH_DEEP[] = {{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}};
static const SegSpec PATH_EMPTY[] = {{"", 0}};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int intern(FieldTable *ft, const SegSpec *spec, size_t n)
{
    PathSeg segs[8];
    memset(segs, 0, sizeof(segs));
    for (size_t i = 0; i < n; i++) {
        segs[i].name = spec[i].name;
        segs[i].index = spec[i].index;
    }
    return field_table_intern(ft, segs, n);
}

static int build_fields(FieldTable *ft)
{
    field_table_init(ft);
    if (intern(ft, PATH_USER, N_OF(PATH_USER)) < 0 || intern(ft, PATH_TS, N_OF(PATH_TS)) < 0 ||
        intern(ft, PATH_BIN, N_OF(PATH_BIN)) < 0 || intern(ft, PATH_SKU, N_OF(PATH_SKU)) < 0 ||
        intern(ft, PATH_ITEM2, N_OF(PATH_ITEM2)) < 0 ||
        intern(ft, PATH_DEEP, N_OF(PATH_DEEP)) < 0 ||
        intern(ft, PATH_EMPTY, N_OF(PATH_EMPTY)) < 0)
        return -1;
    return 0;
}

static void die(const char *what, const uint8_t *data, size_t size)
{
    fprintf(stderr, "fuzz_decode: %s\ninput (%zu bytes): %.*s\n", what, size, (int)size,
            (const char *)data);
    abort();
}

static bool is_json_blank(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The input without leading and trailing JSON whitespace: what an event keeps. */
static void trim_blanks(const uint8_t *data, size_t size, size_t *lead, size_t *len)
{
    size_t start = 0, end = size;
    while (start < end && is_json_blank(data[start]))
        start++;
    while (end > start && is_json_blank(data[end - 1]))
        end--;
    *lead = start;
    *len = end - start;
}

static void check_slots(const Event *ev, const uint8_t *data, size_t size)
{
    Buf json = BUF_INIT;
    for (uint32_t i = 0; i < ev->n_slots; i++) {
        const Value *v = &ev->slots[i];
        DecodeError err;
        if (v->raw != NULL && !json_validate(v->raw, v->raw_len, DECODE_MAX_DEPTH, &err))
            die("a slot's raw text is not valid JSON", data, size);
        buf_clear(&json);
        value_to_json(v, &json);
        if (json.failed)
            continue;
        if (v->type != V_MISSING && !json_validate(json.data, json.len, DECODE_MAX_DEPTH, &err))
            die("a slot renders as invalid JSON", data, size);
    }
    buf_free(&json);
}

/* Decodes and validates the input with one nesting limit; both must agree. */
static void check_at_depth(const FieldTable *ft, size_t max_depth, const uint8_t *data,
                           size_t size)
{
    Decoder *dec = decoder_new(ft, max_depth);
    if (dec == NULL)
        return;
    const char *text = (const char *)data;
    DecodeError derr = {NULL, 0};
    Event *ev = decoder_decode(dec, text, size, &derr);
    DecodeError verr = {NULL, 0};
    bool valid = json_validate(text, size, max_depth, &verr);
    size_t lead, trimmed_len;
    trim_blanks(data, size, &lead, &trimmed_len);

    if (ev != NULL) {
        if (!valid)
            die("decoder accepted a line json_validate rejects", data, size);
        if (ev->line_len != trimmed_len || memcmp(ev->line, text + lead, trimmed_len) != 0 ||
            ev->line[ev->line_len] != '\0')
            die("event line is not the input text without surrounding blanks", data, size);
        check_slots(ev, data, size);
        event_release(ev);
    } else {
        if (derr.reason == NULL || derr.offset > size)
            die("decode error without a reason or past the end", data, size);
        if (valid && trimmed_len > 0 && data[lead] == '{' &&
            strcmp(derr.reason, "out of memory") != 0)
            die("decoder rejected a valid JSON object", data, size);
    }
    if (!valid && (verr.reason == NULL || verr.offset > size))
        die("validation error without a reason or past the end", data, size);
    decoder_free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FieldTable ft;
    if (build_fields(&ft) == 0) {
        /* The engine's limit, and a small one whose edge short inputs reach. */
        check_at_depth(&ft, DECODE_MAX_DEPTH, data, size);
        check_at_depth(&ft, 3, data, size);
    }
    field_table_free(&ft);
    return 0;
}
