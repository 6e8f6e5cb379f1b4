/* tests/rulesutil.h — compiling rule text inside a Check test, and starting an engine
 * on it. The front end reads files, so the text goes to a temporary .cep file that is
 * removed again; the unit tests of the engine, checkpoints, limits and relevance share
 * this instead of each carrying it. */
#ifndef VIGIL_TESTS_RULESUTIL_H
#define VIGIL_TESTS_RULESUTIL_H

#include "nfa/expr.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/route.h"

/* Compiles text; with prev, as a hot reload of prev (fields keep their slots). Fails
 * the running test, with the diagnostics on stderr, if the text does not compile. */
CompiledRuleSet *test_rules_compile(const char *text, const CompiledRuleSet *prev);

/* test_rules_compile with compile options; opts NULL gives the defaults. */
CompiledRuleSet *test_rules_compile_with(const char *text, const CompiledRuleSet *prev,
                                         const RuleSetOptions *opts);

/* engine_new with these options (max_partials 0: the default); fails the running test,
 * with engine_new's message, if it returns NULL. The sink is copied. */
Engine *test_engine_new(const CompiledRuleSet *rs, EngineSink sink, size_t max_partials,
                        size_t workers);

/* A rule set with two routers over it (one for router_route_all, one asked rule by
 * rule) and their scratch; all owned. */
typedef struct TestRouters {
    CompiledRuleSet *rs;
    Router *all, *one;
    EvalScratch *scratch;
} TestRouters;

/* Compiles rules and makes both routers; fails the running test if any step fails. */
TestRouters test_routers_new(const char *rules);
void test_routers_free(TestRouters *t);

#endif
