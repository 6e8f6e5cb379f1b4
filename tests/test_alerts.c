/* tests/test_alerts.c — alert records byte for byte (alerts/alerts.h), and delivery
 * from compiled rules to declared outputs. Rules come from rule text through
 * dsl_load and ruleset_compile; events through the real decoder. The fast paths of
 * rendering (JSON strings scanned 8 bytes at a time, times without printf, records
 * built in place) are checked against plain byte-by-byte references. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alerts/alerts.h"
#include "alerts/render.h"
#include "base/isotime.h"
#include "base/utf8.h"
#include "dsl/load.h"
#include "rules/ruleset.h"
#include "runtime/decode.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

#define T_2026 INT64_C(1767225600000)   /* 2026-01-01T00:00:00Z */
#define MIN_MS INT64_C(60000)

/* ---- fixture: a compiled rule set, a decoder and the events of one test ---- */

typedef struct Fixture {
    char dir[64];
    CompiledRuleSet *rs;
    Decoder *dec;
    EvalScratch *scratch;
    Event *events[32];
    size_t n_events;
    MatchNode *chain;        /* newest first */
    Buf out;
} Fixture;

static Fixture fx;

static void setup(void)
{
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "/tmp/vigil-render-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(fx.dir));
    fx.scratch = expr_scratch_new();
    ck_assert_ptr_nonnull(fx.scratch);
}

static void teardown(void)
{
    if (fx.chain)
        match_node_release(fx.chain);
    for (size_t i = 0; i < fx.n_events; i++)
        event_release(fx.events[i]);
    decoder_free(fx.dec);
    ruleset_free(fx.rs);
    expr_scratch_free(fx.scratch);
    buf_free(&fx.out);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* text compiled from `file` in the fixture's folder. */
static CompiledRuleSet *compile_text(const char *file, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", fx.dir, file);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    Diags d;
    diags_init(&d);
    const char *paths[] = {path};
    RuleSet *ast = dsl_load(paths, 1, &d);
    ck_assert_ptr_nonnull(ast);
    if (d.errors)
        diags_print(&d, stderr);
    ck_assert_uint_eq(d.errors, 0);
    CompiledRuleSet *rs = ruleset_compile(ast, &d);
    if (!rs)
        diags_print(&d, stderr);
    ck_assert_ptr_nonnull(rs);
    diags_free(&d);
    return rs;
}

static void load_rules(const char *text)
{
    fx.rs = compile_text("rules.cep", text);
    fx.dec = decoder_new(&fx.rs->fields, DECODE_MAX_DEPTH);
    ck_assert_ptr_nonnull(fx.dec);
}

static const CompiledRule *rule(const char *name)
{
    int i = ruleset_find(fx.rs, name);
    ck_assert_int_ge(i, 0);
    return &fx.rs->rules[i];
}

static Event *decode(const char *line, int64_t time_ms)
{
    DecodeError err;
    Event *ev = decoder_decode(fx.dec, line, strlen(line), &err);
    ck_assert_msg(ev != NULL, "%s at %zu", err.reason, err.offset);
    ev->time_ms = time_ms;
    ev->id = fx.n_events;
    fx.events[fx.n_events++] = ev;
    return ev;
}

/* An event built by hand from line (not checked by the decoder), owned by the
 * fixture. */
static Event *hand_built(const char *line, size_t len)
{
    Event *e = event_new(line, len, fx.rs->fields.n);
    ck_assert_ptr_nonnull(e);
    fx.events[fx.n_events++] = e;
    return e;
}

/* Appends (step, ev) to the match chain. */
static void take(const CompiledRule *r, const char *step, Event *ev)
{
    int s = ast_step_index(r->ast, step);
    ck_assert_int_ge(s, 0);
    MatchNode *n = match_node_new(fx.chain, ev, (uint16_t)s);
    ck_assert_ptr_nonnull(n);
    if (fx.chain)
        match_node_release(fx.chain);   /* the new node holds it now */
    fx.chain = n;
}

/* Loads `text` and starts the match chain of its rule `name` at step a with the
 * event {} at T_2026. */
static const CompiledRule *rule_with_empty_event(const char *text, const char *name)
{
    load_rules(text);
    const CompiledRule *r = rule(name);
    take(r, "a", decode("{}", T_2026));
    return r;
}

/* Key values of the partition, as the engine computes them from an event. */
static void eval_key(const CompiledRule *r, const Event *ev, Value *key)
{
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    for (size_t i = 0; i < r->n_keys; i++)
        key[i] = expr_eval(r->keys[i], &ctx, fx.scratch);
}

static const char *render(const CompiledRule *r, const CompiledAction *a, const Value *key,
                          NfaResultKind kind, int64_t time_ms)
{
    NfaResult res = {.kind = kind, .time_ms = time_ms, .last = fx.chain};
    buf_clear(&fx.out);
    ck_assert_int_eq(alert_render(r, a, key, r->n_keys, &res, fx.scratch, &fx.out), 0);
    DecodeError derr;
    ck_assert_msg(json_validate(fx.out.data, fx.out.len, DECODE_MAX_DEPTH, &derr),
                  "invalid JSON (%s at %zu): %s", derr.reason, derr.offset, fx.out.data);
    return fx.out.data;
}

/* ---- records -------------------------------------------------------------- */

static const char *burst_rules =
    "rule large_tx_burst {\n"
    "  filter type == \"tx\";\n"
    "  key user_id;\n"
    "  begin first where amount > 1000;\n"
    "  next second where amount > 1000;\n"
    "  followed_by third where amount > 1000 one_or_more;\n"
    "  within 10m;\n"
    "  on match alert high \"user {user_id}: {count(first) + count(third)} of them, "
    "{{literal}} last at {third.ts}\"\n"
    "           fields { total: sum(first.amount) + sum(second.amount) + sum(third.amount),\n"
    "                    id: third.id, biggest: max(third.amount) };\n"
    "  on timeout alert low \"user {key.user_id} went quiet\";\n"
    "}\n";

#define E1 "{\"type\":\"tx\",\"user_id\":\"u7\",\"amount\":2000,\"ts\":\"2026-01-01T00:00:00Z\"}"
#define E2 "{\"type\":\"tx\",\"user_id\":\"u7\",\"amount\":1500.5,\"ts\":\"2026-01-01T00:05:00Z\"}"
#define E3 "{\"type\":\"tx\", \"user_id\":\"u7\",\"amount\":1100,\"ts\":\"2026-01-01T00:07:00Z\"}"
#define E4 "{\"type\":\"tx\",\"user_id\":\"u7\",\"amount\":1900,\"ts\":\"2026-01-01T00:09:00Z\"," \
           "\"id\":12345678901234567890}"

START_TEST(match_record_byte_exact)
{
    load_rules(burst_rules);
    const CompiledRule *r = rule("large_tx_burst");
    Event *e1 = decode(E1, T_2026);
    Event *e2 = decode(E2, T_2026 + 5 * MIN_MS);
    Event *e3 = decode(E3, T_2026 + 7 * MIN_MS);
    Event *e4 = decode("  " E4 "\r", T_2026 + 9 * MIN_MS);   /* blanks and CR are trimmed */
    take(r, "first", e1);
    take(r, "second", e2);
    take(r, "third", e3);
    take(r, "third", e4);
    Value key[1];
    eval_key(r, e1, key);
    ck_assert_uint_eq(r->n_on_match, 1);
    const char *got = render(r, &r->on_match[0], key, NFA_MATCH, e4->time_ms);
    ck_assert_str_eq(got,
        "{\"rule\":\"large_tx_burst\",\"kind\":\"match\",\"severity\":\"high\","
        "\"key\":{\"user_id\":\"u7\"},\"time\":\"2026-01-01T00:09:00.000Z\","
        "\"message\":\"user u7: 3 of them, {literal} last at 2026-01-01T00:09:00Z\","
        "\"fields\":{\"total\":6500.5,\"id\":12345678901234567890,\"biggest\":1900},"
        "\"events\":{\"first\":[" E1 "],\"second\":[" E2 "],\"third\":[" E3 "," E4 "]}}");
}
END_TEST

START_TEST(timeout_record_carries_steps_so_far)
{
    load_rules(burst_rules);
    const CompiledRule *r = rule("large_tx_burst");
    Event *e1 = decode(E1, T_2026);
    Event *e2 = decode(E2, T_2026 + 5 * MIN_MS);
    take(r, "first", e1);
    take(r, "second", e2);
    Value key[1];
    eval_key(r, e1, key);
    ck_assert_uint_eq(r->n_on_timeout, 1);
    const char *got = render(r, &r->on_timeout[0], key, NFA_TIMEOUT, T_2026 + 10 * MIN_MS);
    ck_assert_str_eq(got,
        "{\"rule\":\"large_tx_burst\",\"kind\":\"timeout\",\"severity\":\"low\","
        "\"key\":{\"user_id\":\"u7\"},\"time\":\"2026-01-01T00:10:00.000Z\","
        "\"message\":\"user u7 went quiet\",\"fields\":{},"
        "\"events\":{\"first\":[" E1 "],\"second\":[" E2 "]}}");
}
END_TEST

START_TEST(default_action_and_no_key)
{
    load_rules("rule plain { begin a where n > 1; followed_by b; }\n");
    const CompiledRule *r = rule("plain");
    Event *e1 = decode("{\"n\":2}", T_2026);
    Event *e2 = decode("{\"n\":0,\"s\":\"x\"}", T_2026 + 1500);
    take(r, "a", e1);
    take(r, "b", e2);
    const char *got = render(r, NULL, NULL, NFA_MATCH, e2->time_ms);
    ck_assert_str_eq(got,
        "{\"rule\":\"plain\",\"kind\":\"match\",\"severity\":\"medium\",\"key\":{},"
        "\"time\":\"2026-01-01T00:00:01.500Z\",\"message\":\"plain\",\"fields\":{},"
        "\"events\":{\"a\":[{\"n\":2}],\"b\":[{\"n\":0,\"s\":\"x\"}]}}");
}
END_TEST

START_TEST(nineteen_digit_key_kept_exact)
{
    load_rules("rule acct { key account; begin a where x > 0;\n"
               "  on match alert \"acct {key.account} / {account}\" fields { a: key.account }; }\n");
    const CompiledRule *r = rule("acct");
    Event *e = decode("{\"account\":1234567890123456789,\"x\":1}", T_2026);
    take(r, "a", e);
    Value key[1];
    eval_key(r, e, key);
    const char *got = render(r, &r->on_match[0], key, NFA_MATCH, e->time_ms);
    ck_assert_str_eq(got,
        "{\"rule\":\"acct\",\"kind\":\"match\",\"severity\":\"medium\","
        "\"key\":{\"account\":1234567890123456789},\"time\":\"2026-01-01T00:00:00.000Z\","
        "\"message\":\"acct 1234567890123456789 / 1234567890123456789\","
        "\"fields\":{\"a\":1234567890123456789},"
        "\"events\":{\"a\":[{\"account\":1234567890123456789,\"x\":1}]}}");
}
END_TEST

START_TEST(escapes_in_message_and_fields)
{
    load_rules("rule q { key who; begin a;\n"
               "  on match alert critical \"{who} said {{{text}}}\" fields { t: text, n: null,"
               " o: obj, miss: nothing }; }\n");
    const CompiledRule *r = rule("q");
    Event *e = decode("{\"who\":\"\\\"bob\\\"\",\"text\":\"tab\\there\\u00e9\\n\","
                      "\"obj\":{\"k\":[1,2]}}", T_2026);
    take(r, "a", e);
    Value key[1];
    eval_key(r, e, key);
    const char *got = render(r, &r->on_match[0], key, NFA_MATCH, e->time_ms);
    ck_assert_str_eq(got,
        "{\"rule\":\"q\",\"kind\":\"match\",\"severity\":\"critical\","
        "\"key\":{\"who\":\"\\\"bob\\\"\"},\"time\":\"2026-01-01T00:00:00.000Z\","
        "\"message\":\"\\\"bob\\\" said {tab\\there\xC3\xA9\\n}\","
        "\"fields\":{\"t\":\"tab\\there\\u00e9\\n\",\"n\":null,\"o\":{\"k\":[1,2]},\"miss\":null},"
        "\"events\":{\"a\":[{\"who\":\"\\\"bob\\\"\",\"text\":\"tab\\there\\u00e9\\n\","
        "\"obj\":{\"k\":[1,2]}}]}}");
}
END_TEST

/* The index of a field's slot, to build an event by hand. */
static int slot_of(const char *path)
{
    for (size_t i = 0; i < fx.rs->fields.n; i++)
        if (strcmp(fx.rs->fields.paths[i].text, path) == 0)
            return (int)i;
    ck_abort_msg("no slot for %s", path);
    return -1;
}

START_TEST(invalid_utf8_never_reaches_the_output)
{
    load_rules("rule u { key user; begin a; on match alert \"hi {user}\" fields { u: user }; }\n");
    const CompiledRule *r = rule("u");
    /* The decoder refuses such lines; an event built by hand must still render safely. */
    static const char line[] = "{\"user\":\"a\xff\xc3\"}";
    Event *e = hand_built(line, sizeof line - 1);
    Value v = value_str(e->line + 9, 3);
    v.raw = e->line + 8;
    v.raw_len = 5;
    e->slots[slot_of("user")] = v;
    take(r, "a", e);
    Value key[1];
    eval_key(r, e, key);
    const char *got = render(r, &r->on_match[0], key, NFA_MATCH, T_2026);
    ck_assert_str_eq(got,
        "{\"rule\":\"u\",\"kind\":\"match\",\"severity\":\"medium\","
        "\"key\":{\"user\":\"a\xEF\xBF\xBD\xEF\xBF\xBD\"},\"time\":\"2026-01-01T00:00:00.000Z\","
        "\"message\":\"hi a\xEF\xBF\xBD\xEF\xBF\xBD\","
        "\"fields\":{\"u\":\"a\xEF\xBF\xBD\xEF\xBF\xBD\"},"
        "\"events\":{\"a\":[\"{\\\"user\\\":\\\"a\xEF\xBF\xBD\xEF\xBF\xBD\\\"}\"]}}");
}
END_TEST

/* ---- fast paths against plain references ---------------------------------- */

/* A JSON string the obvious way, byte by byte: the reference for buf_json_string. */
static void ref_json_string(Buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        switch (c) {
        case '"':  buf_puts(b, "\\\""); i++; continue;
        case '\\': buf_puts(b, "\\\\"); i++; continue;
        case '\n': buf_puts(b, "\\n"); i++; continue;
        case '\r': buf_puts(b, "\\r"); i++; continue;
        case '\t': buf_puts(b, "\\t"); i++; continue;
        case '\b': buf_puts(b, "\\b"); i++; continue;
        case '\f': buf_puts(b, "\\f"); i++; continue;
        default: break;
        }
        if (c < 0x20) {
            buf_printf(b, "\\u%04x", c);
            i++;
            continue;
        }
        size_t seq = utf8_valid_len(p + i, n - i);
        if (seq == 0) {
            buf_puts(b, "\xEF\xBF\xBD");
            seq = 1;
        } else {
            buf_append(b, s + i, seq);
        }
        i += seq;
    }
    buf_putc(b, '"');
}

/* Length of the prefix the reference copies unchanged. */
static size_t ref_verbatim_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20) {
        size_t seq = utf8_valid_len(p + i, n - i);
        if (seq == 0)
            break;
        i += seq;
    }
    return i;
}

/* buf_json_string after `prefix` in the buffer equals the reference, and
 * buf_json_verbatim_len agrees; `what` names the case in a failure. */
static void check_json_string(const char *s, size_t n, const char *what)
{
    Buf got = BUF_INIT, want = BUF_INIT;
    buf_puts(&got, "x");
    buf_puts(&want, "x");
    buf_json_string(&got, s, n);
    ref_json_string(&want, s, n);
    ck_assert(!got.failed && !want.failed);
    ck_assert_msg(got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
                  "%s: got %s want %s", what, got.data, want.data);
    ck_assert_msg(got.data[got.len] == '\0', "%s: not NUL-terminated", what);
    ck_assert_msg(buf_json_verbatim_len(s, n) == ref_verbatim_len(s, n),
                  "%s: verbatim %zu want %zu", what, buf_json_verbatim_len(s, n),
                  ref_verbatim_len(s, n));
    buf_free(&got);
    buf_free(&want);
}

/* Every byte that stops the 8-byte scan, and some that must not. */
static const char *const specials[] = {
    "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x01", "\x1f", "\x7f", " ", "/",
    "\x80", "\xbf", "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80",
    "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e",
};
#define N_SPECIALS (sizeof specials / sizeof specials[0])

START_TEST(json_string_special_at_every_word_position)
{
    char s[40], what[64];
    for (size_t len = 1; len <= 26; len++) {
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t k = 0; k < N_SPECIALS; k++) {
                size_t sl = strlen(specials[k]);
                if (pos + sl > len)
                    continue;
                memset(s, 'a', len);
                memcpy(s + pos, specials[k], sl);
                snprintf(what, sizeof what, "len %zu, special %zu at %zu", len, k, pos);
                check_json_string(s, len, what);
            }
        }
    }
    /* NUL is a control byte like the others. */
    check_json_string("abcdefgh\0ijk", 12, "NUL at 8");
    check_json_string("\0", 1, "NUL alone");
    check_json_string("", 0, "empty");
}
END_TEST

START_TEST(json_string_two_specials_around_the_last_word)
{
    /* The scan reads the last 8 bytes as one word when fewer remain: a UTF-8 sequence
     * or an escape among the bytes it has seen must not hide one after it. */
    char s[40], what[64];
    for (size_t len = 8; len <= 20; len++)
        for (size_t p1 = 0; p1 < len; p1++)
            for (size_t p2 = p1; p2 < len; p2++)
                for (size_t k1 = 0; k1 < N_SPECIALS; k1++)
                    for (size_t k2 = 0; k2 < N_SPECIALS; k2 += 3) {
                        size_t l1 = strlen(specials[k1]), l2 = strlen(specials[k2]);
                        if (p1 + l1 > p2 || p2 + l2 > len)
                            continue;
                        memset(s, 'b', len);
                        memcpy(s + p1, specials[k1], l1);
                        memcpy(s + p2, specials[k2], l2);
                        snprintf(what, sizeof what, "len %zu, %zu at %zu, %zu at %zu", len,
                                 k1, p1, k2, p2);
                        check_json_string(s, len, what);
                    }
}
END_TEST

START_TEST(json_string_random_texts)
{
    static const char *const pieces[] = {"a", "Z", "0", " ", "~", "\"", "\\", "\n", "\x02",
                                         "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                         "\xc3", "\xa9", "\xff", "\xed\xbf\xbf", "abcdefgh"};
    uint64_t x = 0x9E3779B97F4A7C15u;
    char s[256], what[32];
    for (int round = 0; round < 20000; round++) {
        size_t n = 0;
        x = x * 6364136223846793005u + 1442695040888963407u;
        size_t parts = (size_t)(x >> 59);
        for (size_t i = 0; i < parts; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            /* Mostly plain text, as real strings are. */
            const char *p = (x >> 60) < 10 ? "plain" : pieces[(x >> 33) % (sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(p);
            memcpy(s + n, p, pl);
            n += pl;
        }
        snprintf(what, sizeof what, "round %d", round);
        check_json_string(s, n, what);
    }
}
END_TEST

START_TEST(json_string_on_a_failed_buffer_adds_nothing)
{
    Buf b = BUF_INIT;
    buf_puts(&b, "ab");
    b.failed = true;
    buf_json_string(&b, "cd", 2);
    ck_assert_uint_eq(b.len, 2);
    buf_free(&b);
}
END_TEST

START_TEST(buf_inline_appends_and_truncate)
{
    Buf b = BUF_INIT;
    for (int i = 0; i < 300; i++) {   /* from no storage, across several growths */
        buf_putc_inline(&b, (char)('a' + i % 26));
        buf_append_inline(&b, "12", 2);
    }
    ck_assert_uint_eq(b.len, 900);
    ck_assert_uint_eq(strlen(b.data), 900);
    ck_assert(memcmp(b.data, "a12b12c12", 9) == 0);
    buf_truncate(&b, 4);
    ck_assert_str_eq(b.data, "a12b");
    buf_truncate(&b, 10);              /* beyond the end: nothing happens */
    ck_assert_str_eq(b.data, "a12b");
    b.failed = true;
    buf_append_inline(&b, "zz", 2);
    buf_putc_inline(&b, 'z');
    ck_assert_str_eq(b.data, "a12b");
    buf_free(&b);
}
END_TEST

/* The straightforward formatter time_format_iso replaced: civil date from days
 * (proleptic Gregorian, 400-year eras, March-based years) and snprintf. The fast one
 * must write exactly its bytes. */
#define DAY_MS_REF INT64_C(86400000)

static void reference_time_iso(int64_t ms, char out[32])
{
    int64_t days = ms / DAY_MS_REF, rem = ms % DAY_MS_REF;
    if (rem < 0) {
        rem += DAY_MS_REF;
        days--;
    }
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned day = doy - (153 * mp + 2) / 5 + 1;
    unsigned month = mp < 10 ? mp + 3 : mp - 9;
    int64_t year = (int64_t)yoe + era * 400 + (month <= 2);
    unsigned secs = (unsigned)(rem / 1000), msec = (unsigned)(rem % 1000);
    /* The % bounds tell the compiler each field's width (no truncation warning). */
    snprintf(out, 32, "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ", (int)year, month % 100u,
             day % 100u, (secs / 3600) % 100u, (secs / 60) % 60u, secs % 60u, msec % 1000u);
}

static void check_time(int64_t ms)
{
    char want[32], got[32];
    memset(got, 'X', sizeof got);
    reference_time_iso(ms, want);
    size_t n = time_format_iso(ms, got);
    ck_assert_msg(strcmp(got, want) == 0, "%lld: got %s want %s", (long long)ms, got, want);
    ck_assert_uint_eq(n, strlen(want));
}

#define DAY_MS INT64_C(86400000)

START_TEST(times_match_reference_formatter)
{
    static const int64_t bases[] = {
        0, T_2026, INT64_C(951782400000) /* 2000-02-29 */, INT64_C(4107542400000) /* 2100-03-01 */,
        INT64_C(-2203891200000) /* 1900-03-01 */, INT64_C(-62135596800000) /* 0001-01-01 */,
        INT64_C(-62167219200000) /* 0000-01-01 */, INT64_C(-62198755200000) /* -0001-01-01 */,
        INT64_C(253402300800000) /* 10000-01-01: past the four-digit years */,
        INT64_C(-12219292800000) /* 1582-10-15 */, INT64_C(-30610224000000) /* 1000-01-01 */,
        INT64_C(-377705116800000) /* -9999-01-01 */, INT64_C(32503680000000) /* 3000-01-01 */,
    };
    static const int64_t offsets[] = {
        0, 1, -1, 999, -999, 1000, -1000, 59999, 60000, -60000, 3599999, 3600000, -3600000,
        DAY_MS - 1, DAY_MS, -DAY_MS, -DAY_MS - 1, 28 * DAY_MS, 59 * DAY_MS, 365 * DAY_MS,
        366 * DAY_MS, -366 * DAY_MS,
    };
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++)
        for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
            check_time(bases[b] + offsets[o]);
    /* Every hour (and a few ms off it) over 1969..1972, a leap year included. */
    for (int64_t ms = -366 * DAY_MS; ms < 3 * 366 * DAY_MS; ms += 3600000) {
        check_time(ms);
        check_time(ms + 59999);
        check_time(ms - 1);
    }
    /* Every day of 400 years around the epoch, at an odd time of day. */
    for (int64_t d = -200 * 366; d < 200 * 366; d++)
        check_time(d * DAY_MS + 45296789);
    check_time(INT64_MAX);
    check_time(INT64_MAX - 1);
    check_time(INT64_MIN);
    check_time(INT64_MIN + 1);
    uint64_t x = 12345;
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        check_time((int64_t)x);                           /* anywhere */
        check_time((int64_t)x >> 20);                     /* within +-280,000 years */
    }
}
END_TEST

/* ---- records built in place ---------------------------------------------- */

START_TEST(decoded_lines_echoed_unchecked_others_checked)
{
    load_rules("rule plain { begin a; }\n");
    const CompiledRule *r = rule("plain");
    static const char bad[] = "{\"n\":1,}";
    Event *e = hand_built(bad, sizeof bad - 1);
    take(r, "a", e);
    NfaResult res = {.kind = NFA_MATCH, .time_ms = T_2026, .last = fx.chain};
    static const char head[] =
        "{\"rule\":\"plain\",\"kind\":\"match\",\"severity\":\"medium\",\"key\":{},"
        "\"time\":\"2026-01-01T00:00:00.000Z\",\"message\":\"plain\",\"fields\":{},";
    /* What alerts_deliver asks for: the decoder's word is not doubted. */
    ck_assert_int_eq(alert_render_echo(r, NULL, NULL, 0, &res, fx.scratch, ECHO_DECODED,
                                       &fx.out), 0);
    Buf want = BUF_INIT;
    buf_printf(&want, "%s\"events\":{\"a\":[{\"n\":1,}]}}", head);
    ck_assert_str_eq(fx.out.data, want.data);
    /* alert_render checks: the line becomes a string. */
    buf_clear(&fx.out);
    ck_assert_int_eq(alert_render(r, NULL, NULL, 0, &res, fx.scratch, &fx.out), 0);
    buf_clear(&want);
    buf_printf(&want, "%s\"events\":{\"a\":[\"{\\\"n\\\":1,}\"]}}", head);
    ck_assert_str_eq(fx.out.data, want.data);
    buf_free(&want);
}
END_TEST

/* A hand-built event whose slot `path` holds v. */
static Event *event_with(const char *path, Value v)
{
    Event *e = hand_built("{}", 2);
    e->slots[slot_of(path)] = v;
    return e;
}

static Value raw_value(ValueType type, const char *raw)
{
    Value v = {0};
    v.type = type;
    v.raw = raw;
    v.raw_len = strlen(raw);
    if (type == V_STR) {
        v.s = raw;
        v.len = strlen(raw);
    } else if (type == V_NUM) {
        v.num = strtod(raw, NULL);
    }
    return v;
}

START_TEST(raw_key_texts_plain_or_checked)
{
    load_rules("rule k { key id; begin a; on match alert \"m\"; }\n");
    const CompiledRule *r = rule("k");
    static const struct { ValueType type; const char *raw; const char *json; } cases[] = {
        {V_NUM, "0", "0"},
        {V_NUM, "-0", "-0"},
        {V_NUM, "-12", "-12"},
        {V_NUM, "123456789012345678901234567890", "123456789012345678901234567890"},
        {V_NUM, "1.5e3", "1.5e3"},          /* valid, through the full check */
        {V_NUM, "01", "\"01\""},            /* not JSON: written as a string */
        {V_NUM, "-", "\"-\""},
        {V_NUM, "1-", "\"1-\""},
        {V_STR, "\"u7\"", "\"u7\""},
        {V_STR, "\"a\\\"b\"", "\"a\\\"b\""},  /* escapes: valid, through the full check */
        {V_STR, "\"\xc3\xa9t\xc3\xa9\"", "\"\xc3\xa9t\xc3\xa9\""},
        {V_STR, "\"a\"b\"", "\"\\\"a\\\"b\\\"\""},
        {V_STR, "\"", "\"\\\"\""},
        {V_STR, "\"tab\there\"", "\"\\\"tab\\there\\\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Value key[1] = {raw_value(cases[i].type, cases[i].raw)};
        Event *e = event_with("id", key[0]);
        if (fx.chain)
            match_node_release(fx.chain);
        fx.chain = NULL;
        take(r, "a", e);
        const char *got = render(r, &r->on_match[0], key, NFA_MATCH, T_2026);
        Buf want = BUF_INIT;
        buf_printf(&want, "{\"rule\":\"k\",\"kind\":\"match\",\"severity\":\"medium\","
                          "\"key\":{\"id\":%s},", cases[i].json);
        ck_assert_msg(strncmp(got, want.data, want.len) == 0, "%s: %s", cases[i].raw, got);
        buf_free(&want);
    }
}
END_TEST

START_TEST(message_escaped_after_being_built_in_place)
{
    load_rules("rule m { begin a; on match alert \"<{x}{y}>\"; }\n");
    const CompiledRule *r = rule("m");
    static const struct { const char *x, *y, *message; } cases[] = {
        {"plain", "text", "<plaintext>"},
        /* a UTF-8 sequence split over two values is whole in the text */
        {"\xc3", "\xa9", "<\xc3\xa9>"},
        {"\xc3", "|", "<\xEF\xBF\xBD|>"},
        {"quote\"d", "back\\slash", "<quote\\\"dback\\\\slash>"},
        {"ctl\x01", "nl\n", "<ctl\\u0001nl\\n>"},
        {"bad\xff", "ok", "<bad\xEF\xBF\xBDok>"},
        {"0123456789abcdef\"", "", "<0123456789abcdef\\\">"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Event *e = hand_built("{}", 2);
        e->slots[slot_of("x")] = value_str(cases[i].x, strlen(cases[i].x));
        e->slots[slot_of("y")] = value_str(cases[i].y, strlen(cases[i].y));
        if (fx.chain)
            match_node_release(fx.chain);
        fx.chain = NULL;
        take(r, "a", e);
        /* After other text in the buffer, as outputs may batch records. */
        NfaResult res = {.kind = NFA_MATCH, .time_ms = T_2026, .last = fx.chain};
        buf_clear(&fx.out);
        buf_puts(&fx.out, "previous record\n");
        ck_assert_int_eq(alert_render(r, &r->on_match[0], NULL, 0, &res, fx.scratch, &fx.out), 0);
        Buf want = BUF_INIT;
        buf_printf(&want, "previous record\n{\"rule\":\"m\",\"kind\":\"match\",\"severity\":\"medium\","
                          "\"key\":{},\"time\":\"2026-01-01T00:00:00.000Z\",\"message\":\"%s\","
                          "\"fields\":{},\"events\":{\"a\":[{}]}}", cases[i].message);
        ck_assert_str_eq(fx.out.data, want.data);
        ck_assert_uint_eq(fx.out.len, want.len);
        buf_free(&want);
    }
}
END_TEST

/* Key values and message pieces of every length from 0 to past 16 bytes are copied
 * whole, however their length has them copied (render.c's copy_short). */
START_TEST(pieces_of_every_short_length)
{
    load_rules("rule c { key k; begin a; on match alert \"{x}|{n}\"; }\n");
    const CompiledRule *r = rule("c");
    for (size_t len = 0; len <= 20; len++) {
        char x[32], n[32], line[128], want[512];
        for (size_t i = 0; i < len; i++) {
            x[i] = (char)('a' + i);
            n[i + 1] = (char)('0' + i % 10);
        }
        x[len] = '\0';
        n[0] = '1';
        n[len + 1] = '\0';
        snprintf(line, sizeof line, "{\"k\":\"%s\",\"x\":\"%s\",\"n\":%s}", x + len / 2, x, n);
        if (fx.chain)
            match_node_release(fx.chain);
        fx.chain = NULL;
        Event *e = decode(line, T_2026);
        take(r, "a", e);
        Value key[1];
        eval_key(r, e, key);
        snprintf(want, sizeof want,
                 "{\"rule\":\"c\",\"kind\":\"match\",\"severity\":\"medium\","
                 "\"key\":{\"k\":\"%s\"},\"time\":\"2026-01-01T00:00:00.000Z\","
                 "\"message\":\"%s|%s\",\"fields\":{},\"events\":{\"a\":[%s]}}",
                 x + len / 2, x, n, line);
        ck_assert_str_eq(render(r, &r->on_match[0], key, NFA_MATCH, T_2026), want);
    }
}
END_TEST

START_TEST(kinds_and_severities)
{
    const CompiledRule *r = rule_with_empty_event("rule s { begin a; on match alert \"m\"; }\n", "s");
    static const char *const names[] = {"info", "low", "medium", "high", "critical"};
    for (int kind = 0; kind < 2; kind++) {
        for (int sev = 0; sev <= 5; sev++) {
            CompiledAction a = r->on_match[0];
            a.severity = (Severity)(sev == 5 ? 99 : sev);   /* unknown: medium */
            const char *got = render(r, &a, NULL, kind ? NFA_TIMEOUT : NFA_MATCH, T_2026);
            char want[128];
            snprintf(want, sizeof want,
                     "{\"rule\":\"s\",\"kind\":\"%s\",\"severity\":\"%s\",\"key\":{},\"time\"",
                     kind ? "timeout" : "match", names[sev == 5 ? 2 : sev]);
            ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "%s", got);
            ck_assert_str_eq(alert_severity_name(a.severity), names[sev == 5 ? 2 : sev]);
        }
    }
}
END_TEST

START_TEST(long_chains_and_far_times)
{
    load_rules("rule l { begin a; followed_by b one_or_more; }\n");
    const CompiledRule *r = rule("l");
    Buf want = BUF_INIT;
    buf_puts(&want, "\"events\":{\"a\":[{\"i\":0}],\"b\":[");
    char line[32];
    for (int i = 0; i < 16; i++) {   /* 16 nodes still fit on the stack */
        snprintf(line, sizeof line, "{\"i\":%d}", i);
        take(r, i ? "b" : "a", decode(line, T_2026 + i));
        if (i > 1)
            buf_putc(&want, ',');
        if (i)
            buf_puts(&want, line);
    }
    buf_puts(&want, "]}}");
    static const int64_t times[] = {-1, INT64_C(-62198755200001), INT64_C(253402300800000),
                                    INT64_MAX, INT64_MIN};
    for (int extra = 0; extra < 2; extra++) {
        if (extra) {   /* 17 nodes: more than fit on the stack */
            take(r, "b", decode("{\"i\":16}", T_2026 + 16));
            buf_truncate(&want, want.len - 3);
            buf_puts(&want, ",{\"i\":16}]}}");
        }
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++) {
            const char *got = render(r, NULL, NULL, NFA_MATCH, times[t]);
            char iso[32], field[48];
            time_format_iso(times[t], iso);
            snprintf(field, sizeof field, "\"time\":\"%s\",", iso);
            ck_assert_msg(strstr(got, field) != NULL, "%s in %s", field, got);
            ck_assert_msg(strstr(got, want.data) != NULL, "%s", got);
        }
    }
    buf_free(&want);
}
END_TEST

/* Key texts whose quoted body has a special byte (or none) at every position, over
 * lengths on both sides of the 8-byte words the plain check reads: the key is its
 * raw text when that is valid JSON, else that text as a JSON string. */
START_TEST(key_strings_checked_at_every_length)
{
    const CompiledRule *r = rule_with_empty_event("rule k { key id; begin a; on match alert \"m\"; }\n", "k");
    static const char *const marks[] = {"", "\"", "\\", "\\n", "\x01", "\x7f", "#", "\xc3\xa9",
                                        "\xff", "\xe2\x82"};
    char raw[64];
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++)
        for (size_t len = 0; len <= 26; len++)
            for (size_t at = 0; at <= len; at++) {
                size_t n = 0;
                raw[n++] = '"';
                for (size_t i = 0; i < len; i++) {
                    if (i == at)
                        for (const char *c = marks[m]; *c; c++)
                            raw[n++] = *c;
                    raw[n++] = (char)('a' + i % 26);
                }
                raw[n++] = '"';
                raw[n] = '\0';
                Value key[1] = {raw_value(V_STR, raw)};
                Buf want = BUF_INIT;
                buf_puts(&want, "\"key\":{\"id\":");
                DecodeError derr;
                if (json_validate(raw, n, DECODE_MAX_DEPTH, &derr))
                    buf_append(&want, raw, n);
                else
                    buf_json_string(&want, raw, n);
                buf_puts(&want, "},");
                const char *got = render(r, &r->on_match[0], key, NFA_MATCH, T_2026);
                ck_assert_msg(strstr(got, want.data) != NULL, "%s in %s", want.data, got);
                buf_free(&want);
            }
}
END_TEST

/* Events are grouped by step in pattern order, each step's oldest first, whatever
 * the order of the chain: one pass when its steps come in order, a pass per step
 * otherwise (where a node of a step the rule does not have is left out). */
START_TEST(events_grouped_by_step_in_pattern_order)
{
    load_rules("rule g { begin a; followed_by b one_or_more; followed_by c; }\n");
    const CompiledRule *r = rule("g");
    static const struct { const char *steps; const char *events; } cases[] = {
        {"abbc", "\"a\":[{\"i\":0}],\"b\":[{\"i\":1},{\"i\":2}],\"c\":[{\"i\":3}]"},
        {"ac", "\"a\":[{\"i\":0}],\"c\":[{\"i\":1}]"},
        {"bab", "\"a\":[{\"i\":1}],\"b\":[{\"i\":0},{\"i\":2}]"},
        {"cba", "\"a\":[{\"i\":2}],\"b\":[{\"i\":1}],\"c\":[{\"i\":0}]"},
        {"azb", "\"a\":[{\"i\":0}],\"b\":[{\"i\":2}]"},   /* z: no such step */
        {"z", ""},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (fx.chain)
            match_node_release(fx.chain);
        fx.chain = NULL;
        for (size_t i = 0; cases[c].steps[i]; i++) {
            char line[16];
            snprintf(line, sizeof line, "{\"i\":%zu}", i);
            Event *e = decode(line, T_2026 + (int64_t)i);
            char step[2] = {cases[c].steps[i], '\0'};
            int s = step[0] == 'z' ? 99 : ast_step_index(r->ast, step);
            MatchNode *n = match_node_new(fx.chain, e, (uint16_t)s);
            ck_assert_ptr_nonnull(n);
            if (fx.chain)
                match_node_release(fx.chain);
            fx.chain = n;
        }
        char want[160];
        snprintf(want, sizeof want, ",\"events\":{%s}}", cases[c].events);
        const char *got = render(r, NULL, NULL, NFA_MATCH, T_2026);
        size_t got_len = strlen(got), want_len = strlen(want);
        ck_assert_msg(got_len >= want_len && strcmp(got + got_len - want_len, want) == 0,
                      "%s: %s", cases[c].steps, got);
    }
}
END_TEST

/* The record's time field is the formatter's text, within a second, across seconds,
 * days and years, before 1970 and past year 9999; the same through a cache of times
 * (TimeCache), which the times visit in an order that has it hold a second whose
 * milliseconds differ, another second, a second gone back to, and a time it must
 * not keep. */
START_TEST(record_time_is_the_formatters)
{
    const CompiledRule *r = rule_with_empty_event("rule t { begin a; }\n", "t");
    RecordNames names;
    ck_assert_int_eq(record_names_build(&names, r), 0);
    static const int64_t times[] = {
        T_2026, T_2026 + 1, T_2026 + 999, T_2026 + 1000, T_2026 + 1999, T_2026 + 7,
        T_2026 + DAY_MS, T_2026 - 1, 0, 999, 1, -1, -1000, -1001, -999,
        INT64_C(253402300799999), INT64_C(253402300799001), INT64_C(253402300800000),
        INT64_C(253402300800001), INT64_MAX, INT64_MIN, T_2026 + 50, T_2026 + 1049,
    };
    TimeCache cache;
    time_cache_init(&cache);
    for (int cached = 0; cached < 2; cached++)
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
            NfaResult res = {.kind = NFA_MATCH, .time_ms = times[i], .last = fx.chain};
            RenderAids aids = {&names, names.heads, cached ? &cache : NULL};
            buf_clear(&fx.out);
            ck_assert_int_eq(alert_render_named(r, &aids, NULL, NULL, 0, &res, fx.scratch,
                                                ECHO_DECODED, &fx.out), 0);
            char iso[32], field[64];
            time_format_iso(times[i], iso);
            snprintf(field, sizeof field, ",\"time\":\"%s\",\"message\":", iso);
            ck_assert_msg(strstr(fx.out.data, field) != NULL, "%s in %s", field, fx.out.data);
        }
    /* it held the last usual second */
    ck_assert_int_eq(atomic_load(&cache.second), (T_2026 + 1049) / 1000);
    record_names_free(&names);
}
END_TEST

/* ---- delivery ------------------------------------------------------------- */

/* An alert router for the loaded rules whose `stdout` output is the file
 * <fixture dir>/stdout.jsonl, whose path goes to out_path. */
static AlertRouter *router_with_stdout_file(char *out_path, size_t cap)
{
    snprintf(out_path, cap, "%s/stdout.jsonl", fx.dir);
    AlertOptions opts = {.stdout_path = out_path};
    char *err = NULL;
    AlertRouter *ar = alerts_new(fx.rs, &opts, &err);
    ck_assert_msg(ar != NULL, "%s", err);
    return ar;
}

/* load_rules(text), then router_with_stdout_file. */
static AlertRouter *rules_with_router(const char *text, char *out_path, size_t cap)
{
    load_rules(text);
    return router_with_stdout_file(out_path, cap);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(deliver_to_declared_outputs)
{
    const char *top = getenv("top_srcdir");
    char script_rel[PATH_MAX];
    snprintf(script_rel, sizeof script_rel, "%s/tests/data/alerts/capture.sh", top ? top : ".");
    char *script = realpath(script_rel, NULL);
    ck_assert_msg(script != NULL, "missing %s", script_rel);
    Buf text = BUF_INIT;
    buf_printf(&text,
        "output archive file \"%s/archive/{rule}/{date}.jsonl\";\n"
        "output hook exec [\"%s\", \"%s\", \"{rule}\", \"{key.user_id}\"] timeout 5s;\n"
        "rule both { key user_id; begin a where n > 0;\n"
        "  on match alert high \"m {user_id}\" to archive, hook, stdout\n"
        "           alert info \"second action\";\n"
        "  on timeout alert \"never\"; within 1m; }\n"
        "rule only_timeout { begin a; followed_by b; within 1m;\n"
        "  on timeout alert \"t\" to archive; }\n",
        fx.dir, script, fx.dir);
    free(script);
    load_rules(text.data);
    buf_free(&text);

    char out_path[128];
    AlertRouter *ar = router_with_stdout_file(out_path, sizeof out_path);

    const CompiledRule *both = rule("both");
    Event *e = decode("{\"user_id\":\"$(rm -rf /)\",\"n\":1}", T_2026);
    take(both, "a", e);
    Value key[1];
    eval_key(both, e, key);
    NfaResult res = {.kind = NFA_MATCH, .time_ms = e->time_ms, .last = fx.chain};
    alerts_deliver(ar, both, key, 1, &res, fx.scratch);

    /* A rule whose `on` clauses do not cover matches emits nothing for them. */
    const CompiledRule *ot = rule("only_timeout");
    alerts_deliver(ar, ot, NULL, 0, &res, fx.scratch);
    ck_assert_int_eq(alerts_flush(ar), 0);

    Buf stats = BUF_INIT;
    alerts_stats(ar, &stats);
    ck_assert_str_eq(stats.data,
        "{\"stdout\":{\"kind\":\"stdout\",\"sent\":2,\"failed\":0,\"dropped\":0,\"buffered\":0,"
        "\"healthy\":true,\"state\":\"ok\"},"
        "\"archive\":{\"kind\":\"file\",\"sent\":1,\"failed\":0,\"dropped\":0,\"buffered\":0,"
        "\"healthy\":true,\"state\":\"ok\"},"
        "\"hook\":{\"kind\":\"exec\",\"sent\":1,\"failed\":0,\"dropped\":0,\"buffered\":0,"
        "\"healthy\":true,\"state\":\"ok\"}}");
    buf_free(&stats);
    alerts_free(ar);

    char *std = test_read_file(out_path, NULL);
    ck_assert_int_eq(count_lines(std), 2);
    ck_assert_ptr_nonnull(strstr(std, "\"message\":\"m $(rm -rf /)\""));
    ck_assert_ptr_nonnull(strstr(std, "\"severity\":\"info\",\"key\":{\"user_id\":\"$(rm -rf /)\"}"));
    char archive[160];
    snprintf(archive, sizeof archive, "%s/archive/both/2026-01-01.jsonl", fx.dir);
    char *arch = test_read_file(archive, NULL);
    ck_assert_int_eq(count_lines(arch), 1);
    ck_assert_ptr_nonnull(strstr(std, arch));   /* the same record as on stdout */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "cat %s/capture.*.out", fx.dir);
    char *got;
    test_run_command(cmd, &got);
    Buf want = BUF_INIT;
    buf_printf(&want, "argc=2\narg=both\narg=$(rm -rf /)\n%s", arch);
    ck_assert_str_eq(got, want.data);
    buf_free(&want);
    free(got);
    free(std);
    free(arch);
}
END_TEST

/* alerts_deliver renders with the rule's names escaped once (RecordNames) and the
 * key texts in the record's buffer: each delivered line must be byte for byte what
 * alert_render gives for the same action, with more keys than fit on the stack, two
 * actions per result and a step without events between steps with events. */
START_TEST(delivered_records_equal_rendered_ones)
{
    char out_path[128];
    AlertRouter *ar = rules_with_router(
        "rule wide { key k1, k2, k3, k4, k5, k6, k7, k8, k9, k10;\n"
        "  begin a where n > 0; followed_by gap; followed_by b; within 1m;\n"
        "  on timeout alert \"t {k10} {a.n}\" alert high \"again {k1}\"; }\n"
        "rule plain { key k1; begin a where n > 0; }\n", out_path, sizeof out_path);

    const CompiledRule *wide = rule("wide");
    Event *e = decode("{\"k1\":\"u\\\"1\",\"k2\":2,\"k3\":null,\"k4\":true,\"k5\":\"\",\"k6\":[1],"
                      "\"k7\":{\"x\":1},\"k8\":12345678901234567890,\"k9\":\"nine\","
                      "\"k10\":\"ten\",\"n\":3}", T_2026);
    take(wide, "a", e);
    /* step `gap` takes nothing: the record's events skip it */
    Event *e2 = decode("{\"k1\":\"u\\\"1\",\"n\":4}", T_2026 + 1000);
    int b = ast_step_index(wide->ast, "b");
    ck_assert_int_ge(b, 0);
    Value key[10];
    eval_key(wide, e, key);
    NfaResult res = {.kind = NFA_TIMEOUT, .time_ms = T_2026 + MIN_MS, .last = fx.chain};
    alerts_deliver(ar, wide, key, 10, &res, fx.scratch);
    MatchNode *with_b = match_node_new(fx.chain, e2, (uint16_t)b);
    ck_assert_ptr_nonnull(with_b);
    NfaResult res_b = {.kind = NFA_TIMEOUT, .time_ms = T_2026 + MIN_MS, .last = with_b};
    alerts_deliver(ar, wide, key, 10, &res_b, fx.scratch);
    const CompiledRule *plain = rule("plain");
    Value pkey[1];
    eval_key(plain, e, pkey);
    NfaResult res_p = {.kind = NFA_MATCH, .time_ms = T_2026, .last = fx.chain};
    alerts_deliver(ar, plain, pkey, 1, &res_p, fx.scratch);
    ck_assert_int_eq(alerts_flush(ar), 0);
    alerts_free(ar);

    Buf want = BUF_INIT;
    const NfaResult *results[] = {&res, &res_b};
    for (size_t r = 0; r < 2; r++)
        for (size_t a = 0; a < wide->n_on_timeout; a++) {
            buf_clear(&fx.out);
            ck_assert_int_eq(alert_render(wide, &wide->on_timeout[a], key, 10, results[r],
                                          fx.scratch, &fx.out), 0);
            buf_append(&want, fx.out.data, fx.out.len);
            buf_putc(&want, '\n');
        }
    buf_clear(&fx.out);
    ck_assert_int_eq(alert_render(plain, NULL, pkey, 1, &res_p, fx.scratch, &fx.out), 0);
    buf_append(&want, fx.out.data, fx.out.len);
    buf_putc(&want, '\n');
    char *got = test_read_file(out_path, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want.data);
    ck_assert_ptr_nonnull(strstr(got, "\"events\":{\"a\":[{\"k1\""));
    ck_assert_ptr_nonnull(strstr(got, "}],\"b\":[{\"k1\":\"u\\\"1\",\"n\":4}]}"));
    free(got);
    buf_free(&want);
    match_node_release(with_b);
}
END_TEST

/* Message values go in unscanned only when they are known plain: numbers and strings
 * without escapes read from decoded lines, and values whose text is plain ASCII by
 * type. Strings with escapes, objects, literal text with a quote and key values
 * whose raw text is not in a line are scanned (and escaped). Delivered records equal
 * what alert_render (which trusts nothing) gives; the message is checked outright. */
static const char *value_kinds_rules =
    "rule v { key k; begin a; followed_by b;\n"
    "  on match alert \"{a.s}/{s}/{u}/{n}/{big}/{o}/{key.k}/{count(b)}/{f}/{nothing}/"
    "{time(a)}\"\n"
    "           alert \"q\\\"{a.s}\\\" {n}\"; }\n";

START_TEST(message_values_trusted_only_from_decoded_lines)
{
    char out_path[128];
    AlertRouter *ar = rules_with_router(value_kinds_rules, out_path, sizeof out_path);
    const CompiledRule *r = rule("v");
    Event *a = decode("{\"s\":\"from a\"}", T_2026);
    Event *b = decode("  {\"s\":\"tab\\there\",\"u\":\"\\u00e9t\\u00e9\",\"n\":-1.5e3,"
                      "\"big\":12345678901234567890,\"o\":{\"x\":\"y\"},\"f\":true}\r\n",
                      T_2026 + 1500);
    take(r, "a", a);
    take(r, "b", b);
    /* a key string that looks plain (its bytes are its raw text's between the quotes)
     * but whose text is in no line: a control byte */
    static const char key_raw[] = "\"k\x01\"";
    Value key[1] = {value_str(key_raw + 1, 2)};
    key[0].raw = key_raw;
    key[0].raw_len = sizeof key_raw - 1;
    NfaResult res = {.kind = NFA_MATCH, .time_ms = b->time_ms, .last = fx.chain};
    Buf want = BUF_INIT;
    for (int i = 0; i < 3; i++) {   /* the thread's buffer reused from one alert to the next */
        alerts_deliver(ar, r, key, 1, &res, fx.scratch);
        for (size_t j = 0; j < r->n_on_match; j++) {
            buf_clear(&fx.out);
            ck_assert_int_eq(alert_render(r, &r->on_match[j], key, 1, &res, fx.scratch,
                                          &fx.out), 0);
            buf_append(&want, fx.out.data, fx.out.len);
            buf_putc(&want, '\n');
        }
        res.time_ms += 400;
    }
    ck_assert_int_eq(alerts_flush(ar), 0);
    alerts_free(ar);
    char *got = test_read_file(out_path, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want.data);
    ck_assert_ptr_nonnull(strstr(got,
        "\"message\":\"from a/tab\\there/\xc3\xa9t\xc3\xa9/-1.5e3/12345678901234567890/"
        "{\\\"x\\\":\\\"y\\\"}/k\\u0001/1/true/null/2026-01-01T00:00:00.000Z\""));
    ck_assert_ptr_nonnull(strstr(got, "\"message\":\"q\\\"from a\\\" -1.5e3\""));
    ck_assert_ptr_nonnull(strstr(got, "\"time\":\"2026-01-01T00:00:02.300Z\""));
    free(got);
    buf_free(&want);
}
END_TEST

static void count_log(void *user, const char *msg)
{
    Buf *b = user;
    buf_puts(b, msg);
    buf_putc(b, '\n');
}

/* A router for fx.rs with opts that was given n alerts of its rule `name`, each the
 * match in *res (the event {"n":1} at step a). */
static AlertRouter *router_after_alerts(const AlertOptions *opts, const char *name, int n,
                                        NfaResult *res)
{
    char *err = NULL;
    AlertRouter *ar = alerts_new(fx.rs, opts, &err);
    ck_assert_msg(ar != NULL, "%s", err);
    const CompiledRule *r = rule(name);
    Event *e = decode("{\"n\":1}", T_2026);
    take(r, "a", e);
    *res = (NfaResult){.kind = NFA_MATCH, .time_ms = e->time_ms, .last = fx.chain};
    for (int i = 0; i < n; i++)
        alerts_deliver(ar, r, NULL, 0, res, fx.scratch);
    return ar;
}

START_TEST(failing_output_does_not_stop_the_others)
{
    Buf text = BUF_INIT;
    buf_printf(&text,
        "output full file \"/dev/full\";\n"
        "output ok file \"%s/ok.jsonl\";\n"
        "rule r { begin a; on match alert \"x\" to full, ok; }\n", fx.dir);
    load_rules(text.data);
    buf_free(&text);
    Buf log = BUF_INIT;
    AlertOptions opts = {.stdout_path = "/dev/full", .log = count_log, .log_user = &log};
    NfaResult res;
    AlertRouter *ar = router_after_alerts(&opts, "r", 3, &res);
    ck_assert_int_eq(alerts_flush(ar), -1);
    Buf stats = BUF_INIT;
    alerts_stats(ar, &stats);
    ck_assert_ptr_nonnull(strstr(stats.data, "\"full\":{\"kind\":\"file\",\"sent\":0,\"failed\":3,"
                                             "\"dropped\":0,\"buffered\":0,\"healthy\":false"));
    ck_assert_ptr_nonnull(strstr(stats.data, "\"ok\":{\"kind\":\"file\",\"sent\":3,\"failed\":0"));
    buf_free(&stats);
    alerts_free(ar);
    ck_assert_str_eq(log.data, "output full: cannot write to /dev/full: No space left on device "
                               "(alerts are lost and counted until it works again)\n");
    buf_free(&log);
    char path[128];
    snprintf(path, sizeof path, "%s/ok.jsonl", fx.dir);
    char *ok = test_read_file(path, NULL);
    ck_assert_int_eq(count_lines(ok), 3);
    free(ok);
}
END_TEST

/* A reload hands an output declared the same way to the new router with the alerts it
 * holds (here: buffered while its listener is down); a changed one is the old router's,
 * flushed and freed with it. */
START_TEST(reload_keeps_unchanged_outputs)
{
    static const char v1[] =
        "output siem unix \"%s/siem.sock\";\n"
        "output arch file \"%s/a1.jsonl\";\n"
        "rule r { begin a; on match alert \"v1\" to siem, arch; }\n";
    static const char v2[] =
        "output siem unix \"%s/siem.sock\";\n"
        "output arch file \"%s/a2.jsonl\";\n"
        "rule r { begin a; on match alert \"v2\" to siem, arch; }\n";
    Buf text = BUF_INIT;
    buf_printf(&text, v1, fx.dir, fx.dir);
    load_rules(text.data);
    Buf log = BUF_INIT;
    AlertOptions opts = {.stdout_path = "/dev/null", .log = count_log, .log_user = &log};
    NfaResult res;
    AlertRouter *old = router_after_alerts(&opts, "r", 3, &res);
    char *err = NULL;

    buf_clear(&text);
    buf_printf(&text, v2, fx.dir, fx.dir);
    CompiledRuleSet *rs2 = compile_text("rules2.cep", text.data);
    AlertRouter *next = alerts_new_after(rs2, &opts, old, &err);
    ck_assert_msg(next != NULL, "%s", err);
    alerts_adopt(next, old);
    Buf stats = BUF_INIT;
    alerts_stats(old, &stats);
    ck_assert_ptr_null(strstr(stats.data, "\"siem\""));   /* it went to the next router */
    ck_assert_ptr_nonnull(strstr(stats.data, "\"arch\":{\"kind\":\"file\""));   /* changed: kept */
    ck_assert_int_eq(alerts_flush(old), 0);
    alerts_free(old);
    ck_assert_ptr_null(log.data ? strstr(log.data, "not delivered") : NULL);

    const CompiledRule *r2 = &rs2->rules[ruleset_find(rs2, "r")];
    alerts_deliver(next, r2, NULL, 0, &res, fx.scratch);
    buf_clear(&stats);
    alerts_stats(next, &stats);
    ck_assert_msg(strstr(stats.data, "\"siem\":{\"kind\":\"unix\",\"sent\":0,\"failed\":0,"
                                     "\"dropped\":0,\"buffered\":4"), "%s", stats.data);
    char path[128];
    snprintf(path, sizeof path, "%s/siem.sock", fx.dir);
    int listener = test_listen_unix(path);
    ck_assert_int_eq(alerts_flush(next), 0);
    char *got = test_accept_lines(listener, 4);
    ck_assert_int_eq(count_lines(got), 4);
    free(got);
    close(listener);
    alerts_free(next);
    ruleset_free(rs2);
    buf_free(&stats);
    buf_free(&text);
    buf_free(&log);
}
END_TEST

/* At exit the stats come after alerts_finish: what a down listener's output still
 * holds is counted as dropped there, not after the summary is printed. */
START_TEST(finish_counts_what_is_left_before_the_stats)
{
    Buf text = BUF_INIT;
    buf_printf(&text, "output siem unix \"%s/none.sock\";\n"
                      "rule r { begin a; on match alert \"x\" to siem; }\n", fx.dir);
    load_rules(text.data);
    Buf log = BUF_INIT;
    AlertOptions opts = {.stdout_path = "/dev/null", .log = count_log, .log_user = &log,
                         .flush_timeout_ms = 50};
    NfaResult res;
    AlertRouter *ar = router_after_alerts(&opts, "r", 2, &res);
    ck_assert_int_eq(alerts_flush(ar), -1);
    alerts_finish(ar);
    Buf stats = BUF_INIT;
    alerts_stats(ar, &stats);
    ck_assert_msg(strstr(stats.data, "\"siem\":{\"kind\":\"unix\",\"sent\":0,\"failed\":0,"
                                     "\"dropped\":2,\"buffered\":0"), "%s", stats.data);
    ck_assert_ptr_nonnull(strstr(log.data, "not delivered before shutdown"));
    alerts_free(ar);
    buf_free(&stats);
    buf_free(&text);
    buf_free(&log);
}
END_TEST

/* ---- coverage: paths no other test reaches ------------------------------------- */

/* A hand-built line with blanks around valid JSON is echoed trimmed, as JSON. */
START_TEST(checked_line_trimmed_before_echo)
{
    load_rules("rule plain { begin a; }\n");
    const CompiledRule *r = rule("plain");
    static const char line[] = " \t{\"n\":1} \r\n";
    Event *e = hand_built(line, sizeof line - 1);
    take(r, "a", e);
    const char *out = render(r, NULL, NULL, NFA_MATCH, T_2026);
    ck_assert_str_eq(out,
        "{\"rule\":\"plain\",\"kind\":\"match\",\"severity\":\"medium\",\"key\":{},"
        "\"time\":\"2026-01-01T00:00:00.000Z\",\"message\":\"plain\",\"fields\":{},"
        "\"events\":{\"a\":[{\"n\":1}]}}");
}
END_TEST

/* An action that is a copy of the rule's own (not found in the rule's arrays) renders
 * exactly as the original, kind and severity included. */
START_TEST(copied_action_renders_as_the_original)
{
    load_rules(burst_rules);
    const CompiledRule *r = rule("large_tx_burst");
    take(r, "first", decode(E1, T_2026));
    take(r, "second", decode(E2, T_2026 + 5 * MIN_MS));
    Value key[1];
    eval_key(r, fx.events[0], key);
    for (int kind = 0; kind < 2; kind++) {
        const CompiledAction *own = kind ? &r->on_timeout[0] : &r->on_match[0];
        NfaResultKind k = kind ? NFA_TIMEOUT : NFA_MATCH;
        char *want = strdup(render(r, own, key, k, T_2026 + 6 * MIN_MS));
        ck_assert_ptr_nonnull(want);
        CompiledAction copy = *own;
        ck_assert_str_eq(render(r, &copy, key, k, T_2026 + 6 * MIN_MS), want);
        free(want);
    }
}
END_TEST

/* Key values that carry no JSON text of their own (computed, or a raw text that is
 * not JSON) are written from the value. */
START_TEST(key_values_without_json_text)
{
    load_rules("rule k { key a, b, c; begin s; }\n");
    const CompiledRule *r = rule("k");
    take(r, "s", decode("{}", T_2026));
    Value key[3] = {{0}, {0}, {0}};
    key[0].type = V_NUM;
    key[0].num = 2.5;
    key[1].type = V_STR;
    key[1].s = "q\"x";
    key[1].len = 3;
    key[1].raw = "q\"x";   /* not JSON: ignored */
    key[1].raw_len = 3;
    key[2].type = V_BOOL;
    key[2].b = true;
    const char *out = render(r, NULL, key, NFA_MATCH, T_2026);
    ck_assert_msg(strstr(out, "\"key\":{\"a\":2.5,\"b\":\"q\\\"x\",\"c\":true}") != NULL,
                  "%s", out);
}
END_TEST

/* Literal message text that needs escaping (a quote, a backslash, a tab), alone and
 * around a value: written escaped, both through the rule's own action and a copy. */
START_TEST(literal_message_text_escaped)
{
    load_rules("rule lit { key who; begin a;\n"
               "  on match alert \"say \\\"hi\\\"\\t\\\\ ok\";\n"
               "  on timeout alert \"\\\"{who}\\\" \\\\ gone\"; within 1m; }\n");
    const CompiledRule *r = rule("lit");
    Event *e = decode("{\"who\":\"ann\"}", T_2026);
    take(r, "a", e);
    Value key[1];
    eval_key(r, e, key);
    const char *got = render(r, &r->on_match[0], key, NFA_MATCH, T_2026);
    ck_assert_msg(strstr(got, ",\"message\":\"say \\\"hi\\\"\\t\\\\ ok\",") != NULL, "%s", got);
    CompiledAction copy = r->on_timeout[0];
    got = render(r, &copy, key, NFA_TIMEOUT, T_2026 + MIN_MS);
    ck_assert_msg(strstr(got, ",\"message\":\"\\\"ann\\\" \\\\ gone\",") != NULL, "%s", got);
    got = render(r, &r->on_timeout[0], key, NFA_TIMEOUT, T_2026 + MIN_MS);
    ck_assert_msg(strstr(got, ",\"message\":\"\\\"ann\\\" \\\\ gone\",") != NULL, "%s", got);
}
END_TEST

/* A record's head and its first key's name are copied together: with fewer key values
 * than keys (none, one, all) the key object holds just those, through the rule's own
 * action (the head escaped once) and a copy of it (escaped per record) alike. */
START_TEST(fewer_key_values_than_keys)
{
    load_rules("rule two { key a, b; begin s; on match alert info \"m\"; }\n");
    const CompiledRule *r = rule("two");
    Event *e = decode("{\"a\":1,\"b\":\"x\"}", T_2026);
    take(r, "s", e);
    Value key[2];
    eval_key(r, e, key);
    static const char *const objects[] = {"{}", "{\"a\":1}", "{\"a\":1,\"b\":\"x\"}"};
    NfaResult res = {.kind = NFA_MATCH, .time_ms = T_2026, .last = fx.chain};
    CompiledAction copy = r->on_match[0];
    const CompiledAction *actions[] = {&r->on_match[0], &copy};
    for (size_t n = 0; n <= 2; n++)
        for (size_t a = 0; a < 2; a++) {
            char want[256];
            snprintf(want, sizeof want,
                     "{\"rule\":\"two\",\"kind\":\"match\",\"severity\":\"info\","
                     "\"key\":%s,\"time\":\"2026-01-01T00:00:00.000Z\",\"message\":\"m\","
                     "\"fields\":{},\"events\":{\"s\":[{\"a\":1,\"b\":\"x\"}]}}", objects[n]);
            buf_clear(&fx.out);
            ck_assert_int_eq(alert_render(r, actions[a], key, n, &res, fx.scratch, &fx.out), 0);
            ck_assert_str_eq(fx.out.data, want);
        }
}
END_TEST

static Suite *alerts_suite(void)
{
    Suite *s = suite_create("alerts");
    TCase *tr = tcase_create("render");
    tcase_add_checked_fixture(tr, setup, teardown);
    tcase_add_test(tr, match_record_byte_exact);
    tcase_add_test(tr, timeout_record_carries_steps_so_far);
    tcase_add_test(tr, default_action_and_no_key);
    tcase_add_test(tr, nineteen_digit_key_kept_exact);
    tcase_add_test(tr, escapes_in_message_and_fields);
    tcase_add_test(tr, invalid_utf8_never_reaches_the_output);
    tcase_add_test(tr, decoded_lines_echoed_unchecked_others_checked);
    tcase_add_test(tr, raw_key_texts_plain_or_checked);
    tcase_add_test(tr, message_escaped_after_being_built_in_place);
    tcase_add_test(tr, pieces_of_every_short_length);
    tcase_add_test(tr, kinds_and_severities);
    tcase_add_test(tr, long_chains_and_far_times);
    tcase_add_test(tr, key_strings_checked_at_every_length);
    tcase_add_test(tr, record_time_is_the_formatters);
    tcase_add_test(tr, events_grouped_by_step_in_pattern_order);
    tcase_add_test(tr, checked_line_trimmed_before_echo);
    tcase_add_test(tr, copied_action_renders_as_the_original);
    tcase_add_test(tr, key_values_without_json_text);
    tcase_add_test(tr, literal_message_text_escaped);
    tcase_add_test(tr, fewer_key_values_than_keys);
    suite_add_tcase(s, tr);
    TCase *tf = tcase_create("fast paths");
    tcase_set_timeout(tf, 60);
    tcase_add_test(tf, json_string_special_at_every_word_position);
    tcase_add_test(tf, json_string_two_specials_around_the_last_word);
    tcase_add_test(tf, json_string_random_texts);
    tcase_add_test(tf, json_string_on_a_failed_buffer_adds_nothing);
    tcase_add_test(tf, buf_inline_appends_and_truncate);
    tcase_add_test(tf, times_match_reference_formatter);
    suite_add_tcase(s, tf);
    TCase *td = tcase_create("deliver");
    tcase_add_checked_fixture(td, setup, teardown);
    tcase_set_timeout(td, 30);
    tcase_add_test(td, deliver_to_declared_outputs);
    tcase_add_test(td, delivered_records_equal_rendered_ones);
    tcase_add_test(td, failing_output_does_not_stop_the_others);
    tcase_add_test(td, reload_keeps_unchanged_outputs);
    tcase_add_test(td, finish_counts_what_is_left_before_the_stats);
    tcase_add_test(td, message_values_trusted_only_from_decoded_lines);
    suite_add_tcase(s, td);
    return s;
}

int main(void)
{
    return check_run_suite(alerts_suite());
}
