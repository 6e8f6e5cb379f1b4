/* tests/fuzz/fuzz_rules.c — libFuzzer target for the rule front end: bytes are
 * parsed, checked and formatted; when fmt succeeds its output must parse again
 * without errors and format to the same text (fmt is idempotent). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/check.h"
#include "dsl/fmt.h"
#include "dsl/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *format_once(const char *text, size_t len, size_t *errors)
{
    RuleSet *rs = ast_ruleset_new();
    if (rs == NULL)
        return NULL;
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
    char *out = NULL;
    if (parse_errors == 0 && rs->n_files == 1)
        out = dsl_fmt_file(rs, 0);
    for (size_t i = 0; i < rs->n_rules; i++)
        free(dsl_rule_matching_text(&rs->rules[i]));
    *errors = parse_errors;
    diags_free(&d);
    ast_ruleset_free(rs);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t errors = 0;
    char *once = format_once((const char *)data, size, &errors);
    if (once == NULL)
        return 0;
    size_t errors2 = 0;
    char *twice = format_once(once, strlen(once), &errors2);
    if (errors2 != 0 || twice == NULL || strcmp(once, twice) != 0) {
        fprintf(stderr, "fmt round trip failed\n--- once\n%s\n--- twice\n%s\n", once,
                twice ? twice : "(parse errors)");
        abort();
    }
    free(once);
    free(twice);
    return 0;
}
