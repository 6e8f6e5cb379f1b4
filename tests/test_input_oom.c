/* tests/test_input_oom.c — the input layer never loses lines silently when memory runs
 * out: with each allocation of reading a file failing in turn, every line is handed
 * over, or the input says it lost lines (input_lost_lines, or input_poll's -1), which
 * `vigil run` turns into exit 3. The handler keeps every buffer (as a decoding batch
 * does), so that the source must take a new buffer for each read. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/input.h"
#include "tests/checkmain.h"
#include "tests/oomwrap.h"

#define N_LINES 20000
#define MAX_KEPT 64

/* The callbacks run while allocations fail: no Check assertion there (each one
 * allocates), only counts asserted afterwards. */
typedef struct Reader {
    size_t lines, rejected;
    InputText *kept[MAX_KEPT];   /* a reference to each buffer a line lay in */
    size_t n_kept;
    bool kept_too_many;
} Reader;

static void keep(Reader *r, InputText *t)
{
    if (!t || (r->n_kept && r->kept[r->n_kept - 1] == t))
        return;
    if (r->n_kept == MAX_KEPT) {
        r->kept_too_many = true;
        return;
    }
    input_text_retain(t);
    r->kept[r->n_kept++] = t;
}

static void on_line(void *user, const InputLine *l)
{
    Reader *r = user;
    r->lines++;
    keep(r, l->keep);
}

static void on_reject(void *user, const InputLine *l, const char *reason)
{
    (void)l;
    (void)reason;
    ((Reader *)user)->rejected++;
}

static char *write_lines(void)
{
    char *path = strdup("/tmp/vigil-input-oom-XXXXXX");
    ck_assert_ptr_nonnull(path);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < N_LINES; i++)
        fprintf(f, "{\"n\":%zu,\"pad\":\"%.*s\"}\n", i, (int)(i % 17), "abcdefghijklmnopq");
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Reads the file with allocation `fail` failing (0: none), counting the allocations
 * in *allocs; false if the set itself could not be made. */
static bool read_all(const char *path, size_t fail, Reader *r, bool *lost, size_t *allocs)
{
    memset(r, 0, sizeof *r);
    oom_count_begin(fail);
    InputSet *in = input_set_new(1u << 20);
    char *err = NULL;
    bool made = in && input_add(in, path, &err) == 0;
    if (made) {
        InputHandler h = {on_line, on_reject, r};
        int rc;
        while ((rc = input_poll(in, 100, &h)) == 1)
            ;
        /* input_poll's -1 (its own memory ran out) fails `vigil run` as loudly */
        *lost = rc < 0 || input_lost_lines(in);
    }
    *allocs = oom_count_end();
    free(err);
    input_set_free(in);
    for (size_t i = 0; i < r->n_kept; i++)
        input_text_release(r->kept[i]);
    return made;
}

START_TEST(no_line_is_lost_silently)
{
    char *path = write_lines();
    Reader r;
    bool lost = false;
    size_t allocs, n;
    ck_assert(read_all(path, 0, &r, &lost, &allocs));
    ck_assert_uint_eq(r.lines, N_LINES);
    ck_assert(!lost);
    ck_assert(!r.kept_too_many);
    ck_assert_uint_gt(r.n_kept, 2);   /* several reads, each into a new buffer */
    size_t losses = 0;
    for (size_t fail = 1; fail <= allocs + 2; fail++) {
        if (!read_all(path, fail, &r, &lost, &n))
            continue;
        ck_assert(!r.kept_too_many);
        bool whole = r.lines == N_LINES && r.rejected == 0;
        ck_assert_msg(whole || lost, "allocation %zu of %zu: %zu lines and %zu rejected "
                      "of %d, and the input does not say it lost any", fail, allocs,
                      r.lines, r.rejected, N_LINES);
        losses += lost;
    }
    ck_assert_uint_gt(losses, 0);
    unlink(path);
    free(path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("input out of memory");
    TCase *t = tcase_create("files");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, no_line_is_lost_silently);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return check_run_suite(suite());
}
