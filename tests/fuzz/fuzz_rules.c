/* tests/fuzz/fuzz_rules.c — libFuzzer target for the rule front end: bytes are
 * parsed, checked and formatted; when the input parses, fmt's output must parse
 * again without errors, format to the same text (fmt is idempotent) and keep
 * every rule's matching part (a structural proxy for parse(fmt(x)) == parse(x)). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/fmt.h"
#include "dsl/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Formatted {
    char *text;         /* fmt output, NULL if the input did not parse */
    char *matching;     /* the matching text of every rule, in order */
    size_t n_rules, n_outputs;
} Formatted;

static void formatted_free(Formatted *f)
{
    free(f->text);
    free(f->matching);
}

static Formatted format_once(const char *text, size_t len)
{
    Formatted out = {NULL, NULL, 0, 0};
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL)
        return out;
    Diags d;
    diags_init(&d);
    dsl_parse_text(rs, "fuzz.cep", text, len, &d);
    size_t parse_errors = d.errors;
    dsl_check(rs, &d);
    /* Printing exercises the caret code on whatever spans the input produced. */
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
        diags_print(&d, sink);
        fclose(sink);
    }
    Buf matching = BUF_INIT;
    for (size_t i = 0; i < rs->n_rules; i++) {
        char *m = dsl_rule_matching_text(&rs->rules[i]);
        if (m)
            buf_puts(&matching, m);
        free(m);
    }
    if (parse_errors == 0 && rs->n_files == 1)
        out.text = dsl_fmt_file(rs, 0);
    out.matching = buf_steal(&matching);
    out.n_rules = rs->n_rules;
    out.n_outputs = rs->n_outputs;
    diags_free(&d);
    ast_ruleset_free(rs);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Formatted once = format_once((const char *)data, size);
    if (once.text == NULL) {
        formatted_free(&once);
        return 0;
    }
    Formatted twice = format_once(once.text, strlen(once.text));
    bool same = twice.text && strcmp(once.text, twice.text) == 0 &&
                once.n_rules == twice.n_rules && once.n_outputs == twice.n_outputs &&
                once.matching && twice.matching && strcmp(once.matching, twice.matching) == 0;
    if (!same) {
        fprintf(stderr, "fmt round trip failed\n--- once\n%s\n--- twice\n%s\n", once.text,
                twice.text ? twice.text : "(parse errors)");
        abort();
    }
    formatted_free(&once);
    formatted_free(&twice);
    return 0;
}
