# tests: values, events and compiled expressions (see tests/local.mk)
check_PROGRAMS += tests/test_value
TESTS += tests/test_value
tests_test_value_SOURCES = tests/test_value.c $(TEST_UTIL)
tests_test_value_CFLAGS = $(TEST_CFLAGS)
tests_test_value_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_expr
TESTS += tests/test_expr
tests_test_expr_SOURCES = tests/test_expr.c $(TEST_UTIL)
tests_test_expr_CFLAGS = $(TEST_CFLAGS)
tests_test_expr_LDADD = $(TEST_LIBS)
