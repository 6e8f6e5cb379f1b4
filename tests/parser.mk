# tests: parser (see tests/local.mk) — scanner and parser of the rule language.
check_PROGRAMS += tests/test_lexer tests/test_parser
TESTS += tests/test_lexer tests/test_parser
tests_test_lexer_SOURCES = tests/test_lexer.c
tests_test_lexer_CFLAGS = $(TEST_CFLAGS)
tests_test_lexer_LDADD = $(TEST_LIBS)
tests_test_parser_SOURCES = tests/test_parser.c
tests_test_parser_CFLAGS = $(TEST_CFLAGS)
tests_test_parser_LDADD = $(TEST_LIBS)
