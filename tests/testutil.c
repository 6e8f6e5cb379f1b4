/* tests/testutil.c — see testutil.h. */
#include "tests/testutil.h"

#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/parse.h"

char *test_read_stream(FILE *f, size_t *len)
{
    Buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    ck_assert_msg(!ferror(f), "read error: %s", strerror(errno));
    ck_assert_msg(!b.failed, "out of memory reading a stream");
    if (len)
        *len = b.len;
    char *text = buf_steal(&b);
    ck_assert_ptr_nonnull(text);
    return text;
}

int test_fd_capture(int fd, FILE **tmp)
{
    *tmp = tmpfile();
    ck_assert_ptr_nonnull(*tmp);
    int saved = dup(fd);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fileno(*tmp), fd), 0);
    return saved;
}

char *test_fd_release(int fd, int saved, FILE *tmp)
{
    ck_assert_int_ge(dup2(saved, fd), 0);
    close(saved);
    rewind(tmp);
    char *text = test_read_stream(tmp, NULL);
    fclose(tmp);
    return text;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = test_read_stream(f, len);
    fclose(f);
    return text;
}

int test_run_command(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    *out = test_read_stream(p, NULL);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *test_diags_text(const Diags *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_msg(f != NULL, "out of memory printing diagnostics");
    diags_print(d, f);
    ck_assert_msg(fclose(f) == 0, "out of memory printing diagnostics");
    return text;
}

RuleSet *test_parse_checked(const char *text)
{
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    Diags d;
    diags_init(&d);
    dsl_parse_text(rs, "t.cep", text, strlen(text), &d);
    dsl_check(rs, &d);
    if (d.errors > 0)
        ck_abort_msg("unexpected errors:\n%s", test_diags_text(&d));
    diags_free(&d);
    return rs;
}

Value test_str(const char *s)
{
    return value_str(s, strlen(s));
}

Value test_raw_num(double d, const char *raw)
{
    Value v = value_num(d);
    v.raw = raw;
    v.raw_len = (uint32_t)strlen(raw);
    return v;
}

Value test_raw_json(ValueType type, const char *raw)
{
    ck_assert(type == V_OBJ || type == V_ARR);
    Value v = value_null();
    v.type = type;
    v.raw = raw;
    v.raw_len = (uint32_t)strlen(raw);
    return v;
}

char *test_accept_lines(int listener, int want)
{
    struct timeval tv = {5, 0};
    setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int c = accept(listener, NULL, NULL);
    ck_assert_int_ge(c, 0);
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    Buf b = BUF_INIT;
    int lines = 0;
    char chunk[4096];
    ssize_t n;
    while (lines < want && (n = recv(c, chunk, sizeof chunk, 0)) > 0) {
        buf_append(&b, chunk, (size_t)n);
        for (ssize_t i = 0; i < n; i++)
            lines += chunk[i] == '\n';
    }
    close(c);
    ck_assert(!b.failed);
    char *text = b.data ? buf_steal(&b) : strdup("");
    ck_assert_ptr_nonnull(text);
    return text;
}

int test_listen_unix(const char *path)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(s, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(path), sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s, 4), 0);
    return s;
}
