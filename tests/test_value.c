/* tests/test_value.c — values (equality, order, JSON and text forms), the field
 * table, events and match-chain reference counting. */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/value.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

/* What write makes of v, in a static buffer for easy comparison (each call
 * overwrites the last). */
static const char *written(Value v, void (*write)(const Value *, Buf *))
{
    static char out[256];
    Buf b = BUF_INIT;
    write(&v, &b);
    ck_assert(!b.failed);
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    buf_free(&b);
    return out;
}

static const char *json_of(Value v) { return written(v, value_to_json); }

static const char *text_of(Value v) { return written(v, value_to_text); }

/* ---- equality and order --------------------------------------------------- */

START_TEST(equal_same_types)
{
    Value a = value_num(1.5), b = value_num(1.5), c = value_num(2);
    ck_assert(value_equal(&a, &b));
    ck_assert(!value_equal(&a, &c));
    Value one = test_raw_num(1, "1.0"), one2 = value_num(1);
    ck_assert(value_equal(&one, &one2)); /* numbers compare as doubles, not by text */
    Value s1 = test_str("abc"), s2 = test_str("abc"), s3 = test_str("abd"), s4 = test_str("ab");
    ck_assert(value_equal(&s1, &s2));
    ck_assert(!value_equal(&s1, &s3));
    ck_assert(!value_equal(&s1, &s4));
    Value n1 = value_str("a\0b", 3), n2 = value_str("a\0c", 3);
    ck_assert(!value_equal(&n1, &n2));
    Value t = value_bool(true), f = value_bool(false), t2 = value_bool(true);
    ck_assert(value_equal(&t, &t2));
    ck_assert(!value_equal(&t, &f));
    Value tm1 = value_time(1000), tm2 = value_time(1000), d1 = value_dur(1000);
    ck_assert(value_equal(&tm1, &tm2));
    ck_assert(!value_equal(&tm1, &d1));
    Value o1 = test_raw_json(V_OBJ, "{\"a\":1}"), o2 = test_raw_json(V_OBJ, "{\"a\":1}"),
          o3 = test_raw_json(V_OBJ, "{\"a\":2}");
    ck_assert(value_equal(&o1, &o2));
    ck_assert(!value_equal(&o1, &o3));
}
END_TEST

START_TEST(equal_null_and_mismatch)
{
    Value m = value_missing(), n = value_null(), zero = value_num(0), empty = test_str("");
    Value one = value_num(1), s1 = test_str("1"), f = value_bool(false);
    ck_assert(value_equal(&m, &n));
    ck_assert(value_equal(&n, &n));
    ck_assert(!value_equal(&n, &zero));
    ck_assert(!value_equal(&m, &empty));
    ck_assert(!value_equal(&one, &s1));
    ck_assert(!value_equal(&zero, &f));
}
END_TEST

START_TEST(compare_orders)
{
    Value a = value_num(1), b = value_num(2), nan = value_num(NAN);
    ck_assert_int_eq(value_compare(&a, &b), -1);
    ck_assert_int_eq(value_compare(&b, &a), 1);
    ck_assert_int_eq(value_compare(&a, &a), 0);
    ck_assert_int_eq(value_compare(&a, &nan), 2);
    Value s1 = test_str("a"), s2 = test_str("b"), s3 = test_str("ab"), hi = test_str("\xc3\xa9");
    ck_assert_int_eq(value_compare(&s1, &s2), -1);
    ck_assert_int_eq(value_compare(&s3, &s1), 1);
    ck_assert_int_eq(value_compare(&s1, &s3), -1);
    ck_assert_int_eq(value_compare(&hi, &s2), 1); /* bytewise: 0xc3 > 'b' */
    Value t1 = value_time(5), t2 = value_time(7), d1 = value_dur(5), d2 = value_dur(3);
    ck_assert_int_eq(value_compare(&t1, &t2), -1);
    ck_assert_int_eq(value_compare(&d1, &d2), 1);
    ck_assert_int_eq(value_compare(&t1, &d1), 2);
    Value n = value_null(), m = value_missing(), one_s = test_str("1");
    ck_assert_int_eq(value_compare(&n, &a), 2);
    ck_assert_int_eq(value_compare(&a, &m), 2);
    ck_assert_int_eq(value_compare(&n, &n), 2);
    ck_assert_int_eq(value_compare(&a, &one_s), 2);
    Value t = value_bool(true), f = value_bool(false);
    ck_assert_int_eq(value_compare(&t, &f), 2);
}
END_TEST

/* ---- text forms ----------------------------------------------------------- */

START_TEST(json_numbers)
{
    ck_assert_str_eq(json_of(value_num(1)), "1");
    ck_assert_str_eq(json_of(value_num(-42)), "-42");
    ck_assert_str_eq(json_of(value_num(1.5)), "1.5");
    ck_assert_str_eq(json_of(value_num(0.1)), "0.1");
    ck_assert_str_eq(json_of(value_num(0.1 + 0.2)), "0.30000000000000004");
    ck_assert_str_eq(json_of(value_num(1.0 / 3)), "0.3333333333333333");
    ck_assert_str_eq(json_of(value_num(1e21)), "1e+21");
    ck_assert_str_eq(json_of(value_num(1e-7)), "1e-7");
    ck_assert_str_eq(json_of(value_num(123456789012.0)), "123456789012");
    ck_assert_str_eq(json_of(value_num(-0.0)), "0");
    ck_assert_str_eq(json_of(value_num(NAN)), "null");
    ck_assert_str_eq(json_of(value_num(INFINITY)), "null");
    ck_assert_str_eq(json_of(value_num(-INFINITY)), "null");
    /* A 19-digit id keeps its digits through raw; the double alone would round it. */
    ck_assert_str_eq(json_of(test_raw_num(1234567890123456789.0, "1234567890123456789")),
                     "1234567890123456789");
    ck_assert_str_ne(json_of(value_num(1234567890123456789.0)), "1234567890123456789");
    ck_assert_str_eq(json_of(test_raw_num(1, "1.0e0")), "1.0e0");
}
END_TEST

START_TEST(json_other_types)
{
    ck_assert_str_eq(json_of(value_null()), "null");
    ck_assert_str_eq(json_of(value_missing()), "null");
    ck_assert_str_eq(json_of(value_bool(true)), "true");
    ck_assert_str_eq(json_of(value_bool(false)), "false");
    ck_assert_str_eq(json_of(test_str("a\"b\\c\n")), "\"a\\\"b\\\\c\\n\"");
    ck_assert_str_eq(json_of(value_str("a\0b", 3)), "\"a\\u0000b\"");
    ck_assert_str_eq(json_of(value_time(1767226140000)), "\"2026-01-01T00:09:00.000Z\"");
    ck_assert_str_eq(json_of(value_dur(300000)), "300000");
    ck_assert_str_eq(json_of(value_dur(-5)), "-5");
    ck_assert_str_eq(json_of(test_raw_json(V_OBJ, "{\"a\": [1, 2]}")), "{\"a\": [1, 2]}");
    ck_assert_str_eq(json_of(test_raw_json(V_ARR, "[1,\"x\"]")), "[1,\"x\"]");
}
END_TEST

START_TEST(text_forms)
{
    ck_assert_str_eq(text_of(test_str("hello \"you\"")), "hello \"you\"");
    ck_assert_str_eq(text_of(value_num(2.5)), "2.5");
    ck_assert_str_eq(text_of(value_num(1e6)), "1000000");
    ck_assert_str_eq(text_of(test_raw_num(9007199254740993.0, "9007199254740993")),
                     "9007199254740993");
    ck_assert_str_eq(text_of(value_null()), "null");
    ck_assert_str_eq(text_of(value_missing()), "null");
    ck_assert_str_eq(text_of(value_bool(true)), "true");
    ck_assert_str_eq(text_of(value_time(0)), "1970-01-01T00:00:00.000Z");
    ck_assert_str_eq(text_of(value_dur(1500)), "1500");
    ck_assert_str_eq(text_of(test_raw_json(V_ARR, "[]")), "[]");
}
END_TEST

START_TEST(format_num_lengths)
{
    char out[32];
    ck_assert_uint_eq(value_format_num(12, out), 2);
    ck_assert_str_eq(out, "12");
    ck_assert_uint_eq(value_format_num(-1.2345678901234567e-308, out), strlen(out));
    ck_assert(strtod(out, NULL) == -1.2345678901234567e-308);
    ck_assert_uint_eq(value_format_num(1e17, out), 5);
    ck_assert_str_eq(out, "1e+17");
    value_format_num(99999999999999984.0, out);
    ck_assert(strtod(out, NULL) == 99999999999999984.0);
    value_format_num(5e-324, out);
    ck_assert_str_eq(out, "5e-324");
}
END_TEST

START_TEST(iso_times)
{
    static const struct { int64_t ms; const char *iso; } cases[] = {
        {0, "1970-01-01T00:00:00.000Z"},
        {-1, "1969-12-31T23:59:59.999Z"},
        {1767226140000, "2026-01-01T00:09:00.000Z"},
        {1709210096789, "2024-02-29T12:34:56.789Z"},
        {951782400000, "2000-02-29T00:00:00.000Z"},
        {-2203891200000, "1900-03-01T00:00:00.000Z"},
        {-62135596800000, "0001-01-01T00:00:00.000Z"},
        {253402300799999, "9999-12-31T23:59:59.999Z"},
    };
    char out[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        time_format_iso(cases[i].ms, out);
        ck_assert_str_eq(out, cases[i].iso);
    }
    /* The extremes must not overflow the buffer. */
    time_format_iso(INT64_MAX, out);
    ck_assert(strlen(out) < 32);
    time_format_iso(INT64_MIN, out);
    ck_assert(strlen(out) < 32);
}
END_TEST

/* ---- field table ---------------------------------------------------------- */

START_TEST(field_table_interns)
{
    FieldTable ft;
    field_table_init(&ft);
    PathSeg amount[] = {{.name = "amount"}};
    PathSeg card[] = {{.name = "payload"}, {.name = "card"}, {.name = "bin"}};
    PathSeg item0[] = {{.name = "items"}, {.name = NULL, .index = 0}, {.name = "sku"}};
    PathSeg item1[] = {{.name = "items"}, {.name = NULL, .index = 1}, {.name = "sku"}};
    char name[] = "amount"; /* a different pointer with the same text */
    PathSeg amount2[] = {{.name = name}};

    ck_assert_int_eq(field_table_intern(&ft, amount, 1), 0);
    ck_assert_int_eq(field_table_intern(&ft, card, 3), 1);
    ck_assert_int_eq(field_table_intern(&ft, item0, 3), 2);
    ck_assert_int_eq(field_table_intern(&ft, item1, 3), 3);
    ck_assert_int_eq(field_table_intern(&ft, amount2, 1), 0);
    ck_assert_int_eq(field_table_intern(&ft, card, 2), 4); /* a prefix is another path */
    ck_assert_int_eq(field_table_intern(&ft, item0, 3), 2);
    ck_assert_uint_eq(ft.n, 5);
    ck_assert_str_eq(ft.paths[1].text, "payload.card.bin");
    ck_assert_str_eq(ft.paths[2].text, "items[0].sku");
    ck_assert_str_eq(ft.paths[4].text, "payload.card");
    ck_assert_ptr_null(ft.paths[2].segs[1].name);
    ck_assert_int_eq(ft.paths[3].segs[1].index, 1);
    /* The table owns copies: changing the caller's text does not change the slot. */
    name[0] = 'X';
    ck_assert_str_eq(ft.paths[0].segs[0].name, "amount");
    for (int i = 0; i < 100; i++) { /* growth keeps earlier slots */
        char buf[16];
        snprintf(buf, sizeof buf, "f%d", i);
        PathSeg p[] = {{.name = buf}};
        ck_assert_int_eq(field_table_intern(&ft, p, 1), 5 + i);
    }
    ck_assert_int_eq(field_table_intern(&ft, amount, 1), 0);
    field_table_free(&ft);
    ck_assert_uint_eq(ft.n, 0);
}
END_TEST

/* ---- events and match nodes ----------------------------------------------- */

START_TEST(value_is_small)
{
    /* Held events carry one Value per slot: 56 bytes before the union. */
    if (sizeof(void *) == 8)
        ck_assert_uint_eq(sizeof(Value), 32);
    ck_assert_uint_le(sizeof(Value), 32);
    /* The payload members share their bits: a constructor sets only its own. */
    Value n = value_num(2.5), t = value_time(1700000000123), s = test_str("abc");
    ck_assert(n.num == 2.5);
    ck_assert_int_eq(t.i, 1700000000123);
    ck_assert_uint_eq(s.len, 3);
    ck_assert_str_eq(s.s, "abc");
    ck_assert_ptr_null(s.raw);
}
END_TEST

START_TEST(value_str_too_long_is_null)
{
    static const char byte = 'x';
    /* Never read: a length over the 32-bit limit is refused before any use. */
    if (SIZE_MAX > VALUE_MAX_LEN)
        ck_assert_int_eq(value_str(&byte, (size_t)VALUE_MAX_LEN + 1).type, V_NULL);
    Value v = value_str(&byte, 1);
    ck_assert_int_eq(v.type, V_STR);
    ck_assert_uint_eq(v.len, 1);
}
END_TEST

START_TEST(value_rebase_moves_only_inner_pointers)
{
    char from[16] = "\"ab\" 12345", to[16] = "\"ab\" 12345";
    static const char outside[] = "\"zz\"";
    Value in_str = value_str(from + 1, 2);
    in_str.raw = from;
    in_str.raw_len = 4;
    Value out_str = value_str(outside + 1, 2);
    out_str.raw = outside;
    out_str.raw_len = 4;
    Value num = test_raw_num(12345, "12345");
    num.raw = from + 5;
    Value end_ptr = value_str(from + sizeof from, 0);   /* one past the range: stays */

    value_rebase(&in_str, from, sizeof from, to);
    value_rebase(&out_str, from, sizeof from, to);
    value_rebase(&num, from, sizeof from, to);
    value_rebase(&end_ptr, from, sizeof from, to);
    ck_assert_ptr_eq(in_str.s, to + 1);
    ck_assert_ptr_eq(in_str.raw, to);
    ck_assert_ptr_eq(out_str.s, outside + 1);
    ck_assert_ptr_eq(out_str.raw, outside);
    ck_assert_ptr_eq(num.raw, to + 5);
    ck_assert(num.num == 12345);          /* a number's payload is not a pointer */
    ck_assert_ptr_eq(end_ptr.s, from + sizeof from);
}
END_TEST

START_TEST(event_layout)
{
    const char *line = "{\"a\":1}";
    Event *ev = event_new(line, strlen(line), 3);
    ck_assert_ptr_nonnull(ev);
    ck_assert_uint_eq(ev->refs, 1);
    ck_assert_uint_eq(ev->n_slots, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ev->slots[i].type, V_MISSING);
    ck_assert_ptr_ne(ev->line, line);
    ck_assert_str_eq(ev->line, line);
    ck_assert_uint_eq(ev->line_len, strlen(line));
    /* No string room unless asked for; the line follows the slots. */
    ck_assert_uint_eq(event_room_len(ev), 0);
    ck_assert_ptr_eq(ev->line, (const char *)(ev->slots + 3));
    ck_assert_uint_eq(event_alloc_size(ev), offsetof(Event, slots) + 3 * sizeof(Value) + 8);
    ev->slots[2] = value_num(4);
    event_retain(ev);
    ck_assert_uint_eq(ev->refs, 2);
    event_release(ev);
    ck_assert_uint_eq(ev->refs, 1);
    event_release(ev);

    Event *roomy = event_new_room(line, strlen(line), 2, 5);
    ck_assert_ptr_nonnull(roomy);
    ck_assert_uint_eq(event_room_len(roomy), 5);
    ck_assert_uint_eq(event_alloc_size(roomy), offsetof(Event, slots) + 2 * sizeof(Value) + 5 + 8);
    memset(event_room(roomy), 'x', 5);    /* the room is usable and apart from the rest */
    ck_assert_str_eq(roomy->line, line);
    ck_assert_int_eq(roomy->slots[1].type, V_MISSING);
    event_release(roomy);

    Event *empty = event_new("", 0, 0);
    ck_assert_ptr_nonnull(empty);
    ck_assert_str_eq(empty->line, "");
    event_release(empty);
    event_release(NULL);
}
END_TEST

START_TEST(event_clone_owns_its_values)
{
    const char *line = "{\"s\":\"ab\",\"e\":\"x\\ny\",\"n\":1234567890123456789}";
    Event *ev = event_new_room(line, strlen(line), 6, 3);
    ck_assert_ptr_nonnull(ev);
    ev->id = 42;
    ev->time_ms = -7;
    ev->origin = "in.jsonl";
    ev->origin_line = 9;
    const char *l = ev->line;
    Value s = value_str(l + 6, 2);                       /* "ab", in the line */
    s.raw = l + 5;
    s.raw_len = 4;
    memcpy(event_room(ev), "x\ny", 3);                  /* "x\ny" decoded, in the room */
    Value e = value_str(event_room(ev), 3);
    e.raw = l + 14;
    e.raw_len = 6;
    Value n = value_num(1234567890123456789.0);
    n.raw = l + 25;
    n.raw_len = 19;
    static const char outside[] = "elsewhere";
    ev->slots[0] = s;
    ev->slots[1] = e;
    ev->slots[2] = n;
    ev->slots[3] = value_str(outside, 9);
    ev->slots[4] = value_time(1700000000000);
    /* slot 5 stays missing */

    Event *c = event_clone(ev);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->refs, 1);
    ck_assert_uint_eq(c->id, 42);
    ck_assert_int_eq(c->time_ms, -7);
    ck_assert_str_eq(c->origin, "in.jsonl");
    ck_assert_uint_eq(c->origin_line, 9);
    ck_assert_uint_eq(event_room_len(c), 3);
    ck_assert_ptr_ne(c->line, ev->line);
    ck_assert_ptr_eq(c->slots[0].s, c->line + 6);
    ck_assert_ptr_eq(c->slots[0].raw, c->line + 5);
    ck_assert_ptr_eq(c->slots[1].s, event_room(c));
    ck_assert_ptr_eq(c->slots[1].raw, c->line + 14);
    ck_assert_ptr_eq(c->slots[2].raw, c->line + 25);
    ck_assert_ptr_eq(c->slots[3].s, outside);
    event_release(ev);                                    /* the copy stands alone */
    ck_assert_uint_eq(c->slots[0].len, 2);
    ck_assert(memcmp(c->slots[0].s, "ab", 2) == 0);
    ck_assert_uint_eq(c->slots[1].len, 3);
    ck_assert(memcmp(c->slots[1].s, "x\ny", 3) == 0);
    ck_assert_str_eq(json_of(c->slots[2]), "1234567890123456789");
    ck_assert(c->slots[2].num == 1234567890123456789.0);
    ck_assert_int_eq(c->slots[4].i, 1700000000000);
    ck_assert_int_eq(c->slots[5].type, V_MISSING);
    event_release(c);
}
END_TEST

START_TEST(match_node_refcounts)
{
    Event *e1 = event_new("{}", 2, 1), *e2 = event_new("{}", 2, 1), *e3 = event_new("{}", 2, 1);
    ck_assert(e1 && e2 && e3);
    MatchNode *a = match_node_new(NULL, e1, 0);
    ck_assert_uint_eq(e1->refs, 2);
    /* Two partial matches share the prefix `a`. */
    MatchNode *b = match_node_new(a, e2, 1);
    MatchNode *c = match_node_new(a, e3, 1);
    ck_assert_uint_eq(a->refs, 3);
    match_node_release(a); /* the creator's reference */
    ck_assert_uint_eq(a->refs, 2);
    ck_assert_ptr_eq(b->prev, a);
    ck_assert_uint_eq(b->step, 1);
    match_node_release(b);
    ck_assert_uint_eq(e2->refs, 1);
    ck_assert_uint_eq(a->refs, 1);
    ck_assert_uint_eq(e1->refs, 2);
    match_node_retain(c);
    match_node_release(c);
    ck_assert_uint_eq(e3->refs, 2);
    match_node_release(c); /* frees c and then a */
    ck_assert_uint_eq(e1->refs, 1);
    ck_assert_uint_eq(e3->refs, 1);
    event_release(e1);
    event_release(e2);
    event_release(e3);
    match_node_release(NULL);
}
END_TEST

START_TEST(long_chain_release)
{
    /* 200k nodes: a recursive release would overflow the stack. */
    Event *ev = event_new("{\"x\":1}", 7, 1);
    ck_assert_ptr_nonnull(ev);
    MatchNode *head = NULL;
    for (int i = 0; i < 200000; i++) {
        MatchNode *n = match_node_new(head, ev, (uint16_t)(i % 3));
        ck_assert_ptr_nonnull(n);
        if (head)
            match_node_release(head); /* n holds it now */
        head = n;
    }
    ck_assert_uint_eq(ev->refs, 200001);
    match_node_release(head);
    ck_assert_uint_eq(ev->refs, 1);
    event_release(ev);
}
END_TEST

START_TEST(event_cache_reuses_freed_events)
{
    EventCache *c = event_cache_new(4096);
    ck_assert_ptr_nonnull(c);
    const char *line = "{\"user\":\"ann\",\"amount\":1200}";
    Event *a = event_cache_new_room(c, line, strlen(line), 4, 0);
    ck_assert_ptr_nonnull(a);
    a->id = 7;
    a->slots[0] = value_num(3);
    size_t bytes = event_alloc_size(a);
    event_retain(a);                      /* held elsewhere: not cached yet */
    event_cache_release(c, a);
    ck_assert_uint_eq(event_cache_bytes(c), 0);
    ck_assert_uint_eq(a->refs, 1);
    event_cache_release(c, a);            /* the last reference: kept */
    size_t held = event_cache_bytes(c);
    ck_assert_uint_ge(held, bytes);       /* rounded up to its class, as malloc does */
    ck_assert_uint_lt(held, bytes + 16);
    /* A line a few bytes shorter is of the same size class: the same memory, as new. */
    const char *shorter = "{\"user\":\"bo\",\"amount\":1200}";
    Event *b = event_cache_new_room(c, shorter, strlen(shorter), 4, 0);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(event_cache_bytes(c), 0);
    ck_assert_uint_eq(b->refs, 1);
    ck_assert_uint_eq(b->id, 0);
    ck_assert_int_eq(b->slots[0].type, V_MISSING);
    ck_assert_str_eq(b->line, shorter);
    /* A much larger event is of another class: not served from the cache. */
    event_cache_release(c, b);
    char big[600];
    memset(big, ' ', sizeof big - 1);
    big[0] = '{';
    big[sizeof big - 2] = '}';
    big[sizeof big - 1] = '\0';
    Event *d = event_cache_new_room(c, big, strlen(big), 4, 0);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(event_cache_bytes(c), held);
    ck_assert_ptr_ne(d, a);
    /* A copy from the cache takes the cached memory of its class. */
    Event *copy = event_clone_cached(c, d);
    ck_assert_ptr_nonnull(copy);
    ck_assert_str_eq(copy->line, big);
    event_release(copy);                  /* plain release: freed, never cached */
    ck_assert_uint_eq(event_cache_bytes(c), held);
    event_cache_release(c, d);
    ck_assert_uint_gt(event_cache_bytes(c), held + 600);
    event_cache_free(c);                  /* frees what it holds: leak checkers see it */
    /* Past max_bytes, releases go to free(). */
    EventCache *tiny = event_cache_new(bytes + 16);
    ck_assert_ptr_nonnull(tiny);
    Event *e1 = event_cache_new_room(tiny, line, strlen(line), 4, 0);
    Event *e2 = event_cache_new_room(tiny, line, strlen(line), 4, 0);
    ck_assert(e1 && e2);
    event_cache_release(tiny, e1);
    ck_assert_uint_eq(event_cache_bytes(tiny), held);
    event_cache_release(tiny, e2);
    ck_assert_uint_eq(event_cache_bytes(tiny), held);
    event_cache_free(tiny);
}
END_TEST

START_TEST(event_cache_null_is_malloc)
{
    Event *ev = event_cache_new_room(NULL, "{}", 2, 1, 3);
    ck_assert_ptr_nonnull(ev);
    ck_assert_uint_eq(event_room_len(ev), 3);
    ck_assert_str_eq(ev->line, "{}");
    Event *c = event_clone_cached(NULL, ev);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(event_room_len(c), 3);
    event_cache_release(NULL, ev);
    event_cache_release(NULL, c);
    event_cache_release(NULL, NULL);
    event_cache_free(NULL);
}
END_TEST

static Suite *value_suite(void)
{
    Suite *s = suite_create("value");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, equal_same_types);
    tcase_add_test(tc, equal_null_and_mismatch);
    tcase_add_test(tc, compare_orders);
    tcase_add_test(tc, json_numbers);
    tcase_add_test(tc, json_other_types);
    tcase_add_test(tc, text_forms);
    tcase_add_test(tc, format_num_lengths);
    tcase_add_test(tc, iso_times);
    tcase_add_test(tc, value_is_small);
    tcase_add_test(tc, value_str_too_long_is_null);
    tcase_add_test(tc, value_rebase_moves_only_inner_pointers);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("events");
    tcase_add_test(te, field_table_interns);
    tcase_add_test(te, event_layout);
    tcase_add_test(te, event_clone_owns_its_values);
    tcase_add_test(te, match_node_refcounts);
    tcase_add_test(te, long_chain_release);
    tcase_add_test(te, event_cache_reuses_freed_events);
    tcase_add_test(te, event_cache_null_is_malloc);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    return check_run_suite(value_suite());
}
