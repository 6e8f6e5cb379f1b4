/* tests/fuzz/replay.c — runs a fuzz target over its seed corpus in the normal build.
 *
 * Linked with one fuzz target (fuzz_decode.c or fuzz_pipeline.c) and built without
 * libFuzzer, so every corpus file, including the inputs that once crashed a target
 * (named regress-*), is checked by `make check` with the target's own assertions;
 * a failing assertion aborts, which Check reports as an error of that file's test.
 * FUZZ_CORPUS names the corpus folder under tests/fuzz/corpus/. */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/checkmain.h"
#include "tests/testutil.h"

#ifndef FUZZ_CORPUS
#error "define FUZZ_CORPUS to the corpus folder name"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Corpus {
    char **paths;   /* heap strings, sorted; heap array */
    size_t n;
} Corpus;

/* A test program has nothing sensible to do without memory. */
static void *must(void *p)
{
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    return p;
}

static char *corpus_dir(void)
{
    const char *top = getenv("top_srcdir");
    if (top == NULL)
        top = ".";
    size_t len = strlen(top) + sizeof("/tests/fuzz/corpus/") + sizeof(FUZZ_CORPUS);
    char *dir = must(malloc(len));
    snprintf(dir, len, "%s/tests/fuzz/corpus/%s", top, FUZZ_CORPUS);
    return dir;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Empty when the folder cannot be read (test_corpus_present then fails). Called
 * from main() too, outside any test, so it reports nothing itself. */
static Corpus corpus_list(void)
{
    Corpus c = {NULL, 0};
    char *dir = corpus_dir();
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "cannot open %s (is top_srcdir set?)\n", dir);
        free(dir);
        return c;
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (c.n == cap) {
            cap = cap ? cap * 2 : 64;
            c.paths = must(realloc(c.paths, cap * sizeof(char *)));
        }
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        c.paths[c.n] = must(malloc(len));
        snprintf(c.paths[c.n], len, "%s/%s", dir, de->d_name);
        c.n++;
    }
    closedir(d);
    free(dir);
    if (c.n > 1)
        qsort(c.paths, c.n, sizeof(char *), compare_paths);
    return c;
}

static void corpus_free(Corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->paths[i]);
    free(c->paths);
}

/* One loop iteration per corpus file, so a crash names the file's index. */
START_TEST(test_corpus_file)
{
    Corpus c = corpus_list();
    ck_assert_msg((size_t)_i < c.n, "corpus shrank to %zu files", c.n);
    size_t size = 0;
    char *data = test_read_file(c.paths[_i], &size);
    ck_assert_msg(data != NULL, "cannot open %s", c.paths[_i]);
    fprintf(stderr, "replay %s\n", c.paths[_i]);
    ck_assert_int_eq(LLVMFuzzerTestOneInput((const uint8_t *)data, size), 0);
    free(data);
    corpus_free(&c);
}
END_TEST

/* The corpus must not be empty: a missing folder would otherwise pass silently. */
START_TEST(test_corpus_present)
{
    Corpus c = corpus_list();
    ck_assert_uint_ge(c.n, 10);
    corpus_free(&c);
}
END_TEST

int main(void)
{
    Corpus c = corpus_list();
    size_t n = c.n;
    corpus_free(&c);
    Suite *s = suite_create("fuzz replay " FUZZ_CORPUS);
    TCase *tc = tcase_create("corpus");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_corpus_present);
    tcase_add_loop_test(tc, test_corpus_file, 0, (int)n);
    suite_add_tcase(s, tc);
    return check_run_suite(s);
}
