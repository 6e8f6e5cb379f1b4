/* tests/rulesutil.h — compiling rule text inside a Check test. The front end reads
 * files, so the text goes to a temporary .cep file that is removed again; the unit
 * tests of the engine, checkpoints and limits share this instead of each carrying it. */
#ifndef VIGIL_TESTS_RULESUTIL_H
#define VIGIL_TESTS_RULESUTIL_H

#include "rules/ruleset.h"

/* Compiles text; with prev, as a hot reload of prev (fields keep their slots). Fails
 * the running test, with the diagnostics on stderr, if the text does not compile. */
CompiledRuleSet *test_rules_compile(const char *text, const CompiledRuleSet *prev);

/* test_rules_compile with compile options; opts NULL gives the defaults. */
CompiledRuleSet *test_rules_compile_with(const char *text, const CompiledRuleSet *prev,
                                         const RuleSetOptions *opts);

#endif
