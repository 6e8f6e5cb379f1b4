/* tests/test_alerts.c — alert records byte for byte (alerts/alerts.h), and delivery
 * from compiled rules to declared outputs. Rules come from rule text through
 * dsl_load and ruleset_compile; events through the real decoder. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alerts/alerts.h"
#include "dsl/load.h"
#include "rules/ruleset.h"
#include "runtime/decode.h"

#define T_2026 INT64_C(1767225600000)   /* 2026-01-01T00:00:00Z */
#define MIN_MS INT64_C(60000)

/* ---- fixture: a compiled rule set, a decoder and the events of one test ---- */

typedef struct Fixture {
    char dir[64];
    CompiledRuleSet *rs;
    Decoder *dec;
    EvalScratch *scratch;
    Event *events[16];
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

static void load_rules(const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/rules.cep", fx.dir);
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
    fx.rs = ruleset_compile(ast, &d);
    if (!fx.rs)
        diags_print(&d, stderr);
    ck_assert_ptr_nonnull(fx.rs);
    diags_free(&d);
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
    Event *e = event_new(line, sizeof line - 1, fx.rs->fields.n);
    ck_assert_ptr_nonnull(e);
    fx.events[fx.n_events++] = e;
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

/* ---- delivery ------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    Buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_steal(&b);
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
    snprintf(out_path, sizeof out_path, "%s/stdout.jsonl", fx.dir);
    AlertOptions opts = {.stdout_path = out_path};
    char *err = NULL;
    AlertRouter *ar = alerts_new(fx.rs, &opts, &err);
    ck_assert_msg(ar != NULL, "%s", err);

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

    char *std = slurp(out_path);
    ck_assert_int_eq(count_lines(std), 2);
    ck_assert_ptr_nonnull(strstr(std, "\"message\":\"m $(rm -rf /)\""));
    ck_assert_ptr_nonnull(strstr(std, "\"severity\":\"info\",\"key\":{\"user_id\":\"$(rm -rf /)\"}"));
    char archive[160];
    snprintf(archive, sizeof archive, "%s/archive/both/2026-01-01.jsonl", fx.dir);
    char *arch = slurp(archive);
    ck_assert_int_eq(count_lines(arch), 1);
    ck_assert_ptr_nonnull(strstr(std, arch));   /* the same record as on stdout */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "cat %s/capture.*.out", fx.dir);
    FILE *p = popen(cmd, "r");
    char got[4096] = "";
    size_t n = fread(got, 1, sizeof got - 1, p);
    got[n] = '\0';
    pclose(p);
    Buf want = BUF_INIT;
    buf_printf(&want, "argc=2\narg=both\narg=$(rm -rf /)\n%s", arch);
    ck_assert_str_eq(got, want.data);
    buf_free(&want);
    free(std);
    free(arch);
}
END_TEST

static void count_log(void *user, const char *msg)
{
    Buf *b = user;
    buf_puts(b, msg);
    buf_putc(b, '\n');
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
    char *err = NULL;
    AlertRouter *ar = alerts_new(fx.rs, &opts, &err);
    ck_assert_msg(ar != NULL, "%s", err);
    const CompiledRule *r = rule("r");
    Event *e = decode("{\"n\":1}", T_2026);
    take(r, "a", e);
    NfaResult res = {.kind = NFA_MATCH, .time_ms = e->time_ms, .last = fx.chain};
    for (int i = 0; i < 3; i++)
        alerts_deliver(ar, r, NULL, 0, &res, fx.scratch);
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
    char *ok = slurp(path);
    ck_assert_int_eq(count_lines(ok), 3);
    free(ok);
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
    suite_add_tcase(s, tr);
    TCase *td = tcase_create("deliver");
    tcase_add_checked_fixture(td, setup, teardown);
    tcase_set_timeout(td, 30);
    tcase_add_test(td, deliver_to_declared_outputs);
    tcase_add_test(td, failing_output_does_not_stop_the_others);
    suite_add_tcase(s, td);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(alerts_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
