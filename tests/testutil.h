/* tests/testutil.h — what many Check tests need: a whole file, a stream, a shell
 * command's output or printed diagnostics as one string, rule text parsed and
 * checked, and values made as if read from an event. What is not the test's subject
 * (an allocation, a read error) fails the running test, so callers handle only the
 * cases they test, such as a file that does not exist. Call these from tests only. */
#ifndef VIGIL_TESTS_TESTUTIL_H
#define VIGIL_TESTS_TESTUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "dsl/ast.h"
#include "dsl/diag.h"
#include "nfa/value.h"

/* The rest of stream f as a NUL-terminated heap string (caller frees), "" when there
 * is none; its length without the NUL in *len when len is not NULL. f stays open. */
char *test_read_stream(FILE *f, size_t *len);

/* The whole file at path, as test_read_stream gives it; NULL when it cannot be
 * opened. */
char *test_read_file(const char *path, size_t *len);

/* Runs cmd through the shell; its standard output as a heap string in *out (caller
 * frees). Returns its exit status, -1 when it did not exit (killed by a signal). */
int test_run_command(const char *cmd, char **out);

/* Points descriptor fd (STDOUT_FILENO, STDERR_FILENO...) at a fresh temporary file,
 * *tmp, until test_fd_release; returns the descriptor it replaced. Flush the stdio
 * stream of fd first. */
int test_fd_capture(int fd, FILE **tmp);

/* Puts fd back (saved: test_fd_capture's result), closes tmp and returns what was
 * written to fd meanwhile, as a heap string (caller frees). */
char *test_fd_release(int fd, int saved, FILE *tmp);

/* A Unix stream socket listening at path (which must not exist yet). */
int test_listen_unix(const char *path);

/* Accepts one client on the listening socket and reads until it has sent `want`
 * lines, closed, or been silent for 5 s; what it sent as a heap string (caller
 * frees). */
char *test_accept_lines(int listener, int want);

/* d as diags_print writes it, as a heap string (caller frees). */
char *test_diags_text(const Diags *d);

/* text parsed as the file t.cep and checked (caller frees with ast_ruleset_free);
 * fails the test, quoting the diagnostics, when there is an error. */
RuleSet *test_parse_checked(const char *text);

/* The string value of the C string s (not copied: s must outlive the value). */
Value test_str(const char *s);

/* The number d as read from an event whose JSON text for it is raw (not copied), so
 * that the value keeps that text, as a decoded one does. */
Value test_raw_num(double d, const char *raw);

/* An object or array (type V_OBJ or V_ARR) as read from an event: its JSON text raw
 * (not copied). */
Value test_raw_json(ValueType type, const char *raw);

#endif
