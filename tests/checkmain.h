/* tests/checkmain.h — the end of every Check test program: run its suite and turn the
 * result into main's exit status. Header-only, so that a test program uses it without
 * another source file in its build fragment. */
#ifndef VIGIL_TESTS_CHECKMAIN_H
#define VIGIL_TESTS_CHECKMAIN_H

#include <check.h>
#include <stdlib.h>

/* Runs every test of s, which the runner takes over and frees, printing Check's
 * summary; EXIT_SUCCESS when no test failed, else EXIT_FAILURE. */
static inline int check_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
