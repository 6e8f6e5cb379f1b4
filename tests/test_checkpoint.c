/* tests/test_checkpoint.c — checkpoints of `vigil run --state`: the encoding
 * primitives, the checkpoint files (round trip, torn file, bad checksum, fallback to
 * the previous one, other version, the folder lock), input positions, file
 * truncation, and the engine's state: a run cut at any event and restored gives the
 * alerts an uninterrupted run gives, inline and with workers (also across a change of
 * the worker count), with rule changes starting empty; every rule counter (keys
 * refused by --max-memory too) carries on, and a version-1 checkpoint (without
 * keys_refused) is still restored. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/hash.h"
#include "dsl/diag.h"
#include "nfa/snapshot.h"
#include "rules/ruleset.h"
#include "runtime/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/input.h"
#include "tests/rulesutil.h"
#include "tests/checkmain.h"

/* ---- helpers ----------------------------------------------------------------- */

static char *make_dir(void)
{
    char tmpl[] = "/tmp/vigil-test-ckpt-XXXXXX";
    char *d = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(d);
    return strdup(d);
}

static void remove_dir(char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}

static char *path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

typedef struct Logged {
    char text[8][512];
    size_t n;
} Logged;

static void collect_log(void *user, const char *msg)
{
    Logged *l = user;
    if (l->n < 8)
        snprintf(l->text[l->n++], sizeof l->text[0], "%s", msg);
}

static bool logged(const Logged *l, const char *part)
{
    for (size_t i = 0; i < l->n; i++)
        if (strstr(l->text[i], part))
            return true;
    return false;
}

/* Flips one byte of a file at `offset` from its end. */
static void flip_byte(const char *path, off_t from_end)
{
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    off_t at = lseek(fd, -from_end, SEEK_END);
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, at), 1);
    c ^= 0x5a;
    ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes DIR/checkpoint.<seq & 1> by hand, as a vigil writing format `version` would
 * have (runtime/checkpoint.h): the header of every version so far is the same. */
static void write_slot_by_hand(const char *dir, uint32_t version, uint64_t seq,
                               const char *body, size_t len)
{
    unsigned char h[CKPT_HEADER_SIZE];
    memcpy(h, "VIGILCKP", 8);
    put_le(h + 8, version, 4);
    put_le(h + 12, 0, 4);
    put_le(h + 16, seq, 8);
    put_le(h + 24, 1767225600000, 8);
    put_le(h + 32, len, 8);
    put_le(h + 40, hash_bytes(hash_bytes(HASH_SEED, h, 40), body, len), 8);
    char name[32];
    snprintf(name, sizeof name, "checkpoint.%llu", (unsigned long long)(seq & 1));
    char *path = path_in(dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(h, 1, sizeof h, f), sizeof h);
    ck_assert_uint_eq(fwrite(body, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    free(path);
}

/* ---- encoding primitives ------------------------------------------------------- */

START_TEST(snap_numbers_round_trip)
{
    const int64_t ints[] = {0, 1, -1, 63, -64, 64, INT64_MAX, INT64_MIN, 1767225600000};
    Buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        snap_put_i64(&b, ints[i]);
        snap_put_u64(&b, (uint64_t)ints[i]);
    }
    snap_put_str(&b, "héllo");
    SnapReader r;
    snap_reader_init(&r, b.data, b.len);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ck_assert_int_eq(snap_get_i64(&r), ints[i]);
        ck_assert_uint_eq(snap_get_u64(&r), (uint64_t)ints[i]);
    }
    size_t len;
    const char *s = snap_get_bytes(&r, &len);
    ck_assert_uint_eq(len, strlen("héllo"));
    ck_assert_int_eq(memcmp(s, "héllo", len), 0);
    ck_assert(snap_at_end(&r));
    ck_assert(!r.bad);
    /* reading on past the end is flagged, never out of bounds */
    ck_assert_uint_eq(snap_get_u64(&r), 0);
    ck_assert(r.bad);
    buf_free(&b);
}
END_TEST

START_TEST(snap_rejects_lengths_and_counts_beyond_the_input)
{
    Buf b = BUF_INIT;
    snap_put_u64(&b, 1000);      /* a byte string claiming 1000 bytes */
    buf_append(&b, "abc", 3);
    SnapReader r;
    size_t len = 7;
    snap_reader_init(&r, b.data, b.len);
    ck_assert_ptr_null(snap_get_bytes(&r, &len));
    ck_assert_uint_eq(len, 0);
    ck_assert(r.bad);
    snap_reader_init(&r, b.data, b.len);
    ck_assert_uint_eq(snap_get_count(&r, 1), 0);   /* 1000 items cannot fit in 3 bytes */
    ck_assert(r.bad);
    buf_free(&b);
}
END_TEST

/* ---- checkpoint files ------------------------------------------------------------ */

static void write_body(CkptStore *s, const char *body)
{
    char *err = NULL;
    ck_assert_int_eq(ckpt_write(s, body, strlen(body), 1767225600000, &err), 0);
    ck_assert_ptr_null(err);
}

/* Loads with a fresh store (as a restart would), expecting `rc`. */
static int reload(const char *dir, CkptLoaded *out, Logged *log, char **err)
{
    CkptStore s;
    char *open_err = NULL;
    ck_assert_int_eq(ckpt_open(&s, dir, &open_err), 0);
    *err = NULL;
    int rc = ckpt_load(&s, out, collect_log, log, err);
    ckpt_close(&s);
    return rc;
}

START_TEST(file_round_trip_and_newest_wins)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(ckpt_load(&s, &l, collect_log, &log, &err), 0);   /* empty folder */
    write_body(&s, "first");
    write_body(&s, "second");
    write_body(&s, "third");
    ckpt_close(&s);
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.seq, 3);
    ck_assert_uint_eq(l.len, 5);
    ck_assert_int_eq(memcmp(l.body, "third", 5), 0);
    ck_assert_int_eq(l.written_ms, 1767225600000);
    ck_assert_uint_eq(l.version, CKPT_VERSION);
    ck_assert_uint_eq(log.n, 0);
    ckpt_loaded_free(&l);
    /* the two newest are kept, nothing else lingers */
    char *tmp = path_in(dir, "checkpoint.tmp");
    ck_assert_int_ne(access(tmp, F_OK), 0);
    free(tmp);
    remove_dir(dir);
}
END_TEST

START_TEST(bad_checksum_falls_back_to_the_previous_one)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    write_body(&s, "older state");
    write_body(&s, "newer state");   /* seq 2: checkpoint.0 */
    ckpt_close(&s);
    char *newest = path_in(dir, "checkpoint.0");
    flip_byte(newest, 3);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.seq, 1);
    ck_assert_int_eq(memcmp(l.body, "older state", 11), 0);
    ck_assert(logged(&log, "bad checksum"));
    ck_assert(logged(&log, "using the previous one"));
    ck_assert(logged(&log, newest));
    ckpt_loaded_free(&l);
    /* the next checkpoint replaces the corrupt one, not the good one */
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    ck_assert_int_eq(ckpt_load(&s, &l, NULL, NULL, &err), 1);
    ckpt_loaded_free(&l);
    write_body(&s, "after");
    ckpt_close(&s);
    log.n = 0;
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.seq, 2);
    ck_assert_uint_eq(log.n, 0);
    ckpt_loaded_free(&l);
    free(newest);
    remove_dir(dir);
}
END_TEST

START_TEST(torn_file_falls_back_to_the_previous_one)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    write_body(&s, "one");
    write_body(&s, "a longer second body");
    ckpt_close(&s);
    char *newest = path_in(dir, "checkpoint.0");
    ck_assert_int_eq(truncate(newest, CKPT_HEADER_SIZE + 4), 0);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_int_eq(memcmp(l.body, "one", 3), 0);
    ck_assert(logged(&log, "torn"));
    ckpt_loaded_free(&l);
    /* a header cut short too */
    ck_assert_int_eq(truncate(newest, 10), 0);
    log.n = 0;
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert(logged(&log, "torn: only 10 bytes"));
    ckpt_loaded_free(&l);
    free(newest);
    remove_dir(dir);
}
END_TEST

START_TEST(other_version_is_named_and_skipped)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    write_body(&s, "v1 a");
    write_body(&s, "v1 b");
    ckpt_close(&s);
    char *newest = path_in(dir, "checkpoint.0");
    int fd = open(newest, O_RDWR);
    unsigned char v9[4] = {9, 0, 0, 0};
    ck_assert_int_eq(pwrite(fd, v9, 4, 8), 4);
    close(fd);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert(logged(&log, "format version 9, but this vigil reads version 2"));
    ck_assert_int_eq(memcmp(l.body, "v1 a", 4), 0);
    ckpt_loaded_free(&l);
    free(newest);
    remove_dir(dir);
}
END_TEST

/* Versions around the ones read, each with a good checksum: only the version can be
 * why one is refused. */
START_TEST(versions_not_read_are_refused)
{
    const uint32_t refused[] = {0, CKPT_VERSION + 1, 0xffffffffu};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *dir = make_dir(), *err = NULL;
        write_slot_by_hand(dir, refused[i], 1, "state", 5);
        CkptLoaded l;
        Logged log = {0};
        ck_assert_int_eq(reload(dir, &l, &log, &err), -1);
        char want[96];
        snprintf(want, sizeof want, "format version %u, but this vigil reads version 2",
                 refused[i]);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strstr(err, want), "'%s' lacks '%s'", err, want);
        free(err);
        remove_dir(dir);
    }
}
END_TEST

/* A checkpoint of the previous format loads (newest first, as ever) and says which
 * format it is, so that the engine state is read accordingly. */
START_TEST(version_1_is_still_loaded)
{
    char *dir = make_dir(), *err = NULL;
    write_slot_by_hand(dir, 1, 1, "older", 5);
    write_slot_by_hand(dir, 1, 2, "newer", 5);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.version, 1);
    ck_assert_uint_eq(l.seq, 2);
    ck_assert_int_eq(memcmp(l.body, "newer", 5), 0);
    ck_assert_uint_eq(log.n, 0);
    ckpt_loaded_free(&l);
    /* the next checkpoint is written in the current format, over the older slot */
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    ck_assert_int_eq(ckpt_load(&s, &l, NULL, NULL, &err), 1);
    ckpt_loaded_free(&l);
    write_body(&s, "upgraded");
    ckpt_close(&s);
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.version, CKPT_VERSION);
    ck_assert_uint_eq(l.seq, 3);
    ckpt_loaded_free(&l);
    remove_dir(dir);
}
END_TEST

START_TEST(no_good_checkpoint_is_an_error)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore s;
    ck_assert_int_eq(ckpt_open(&s, dir, &err), 0);
    write_body(&s, "only one");
    ckpt_close(&s);
    char *only = path_in(dir, "checkpoint.1");
    flip_byte(only, 1);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), -1);
    ck_assert_ptr_nonnull(err);
    ck_assert_ptr_nonnull(strstr(err, "no good one to fall back to"));
    ck_assert_ptr_null(l.body);
    free(err);
    free(only);
    remove_dir(dir);
}
END_TEST

START_TEST(folder_is_locked_while_open)
{
    char *dir = make_dir(), *err = NULL;
    CkptStore a, b;
    ck_assert_int_eq(ckpt_open(&a, dir, &err), 0);
    ck_assert_int_eq(ckpt_open(&b, dir, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "in use by another vigil"));
    free(err);
    err = NULL;
    ckpt_close(&a);
    ck_assert_int_eq(ckpt_open(&b, dir, &err), 0);
    ckpt_close(&b);
    remove_dir(dir);
}
END_TEST

START_TEST(sections_are_found_by_tag)
{
    Buf body = BUF_INIT;
    ckpt_put_section(&body, 7, "seven", 5);
    ckpt_put_section(&body, CKPT_SEC_FILES, "", 0);
    ckpt_put_section(&body, CKPT_SEC_ENGINE, "engine", 6);
    const char *d;
    size_t n;
    ck_assert(ckpt_find_section(body.data, body.len, CKPT_SEC_ENGINE, &d, &n));
    ck_assert_uint_eq(n, 6);
    ck_assert_int_eq(memcmp(d, "engine", 6), 0);
    ck_assert(ckpt_find_section(body.data, body.len, CKPT_SEC_FILES, &d, &n));
    ck_assert_uint_eq(n, 0);
    ck_assert(!ckpt_find_section(body.data, body.len, CKPT_SEC_INPUTS, &d, &n));
    buf_free(&body);
}
END_TEST

/* ---- input positions and files ---------------------------------------------------- */

typedef struct Lines {
    char first[64];
    uint64_t first_no, count;
} Lines;

static void count_line(void *user, const InputLine *l)
{
    Lines *ls = user;
    if (ls->count++ == 0) {
        snprintf(ls->first, sizeof ls->first, "%.*s", (int)l->len, l->text);
        ls->first_no = l->line_no;
    }
}

START_TEST(file_input_resumes_at_its_offset)
{
    char *dir = make_dir();
    char *file = path_in(dir, "in.jsonl");
    FILE *f = fopen(file, "w");
    fputs("{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n", f);
    fclose(f);
    InputSet *in = input_set_new(0);
    char *err = NULL;
    ck_assert_int_eq(input_add(in, file, &err), 0);
    InputHandler h = {count_line, NULL, NULL};
    Lines ls = {0};
    h.user = &ls;
    while (input_poll(in, 100, &h) > 0) {
    }
    ck_assert_uint_eq(ls.count, 3);
    Buf body = BUF_INIT;
    ckpt_put_inputs(&body, in, NULL, 0);   /* a finished file keeps its end position */
    input_set_free(in);
    const char *sec;
    size_t len;
    ck_assert(ckpt_find_section(body.data, body.len, CKPT_SEC_INPUTS, &sec, &len));

    /* the file grows; a new run reads only the new line, numbered on */
    f = fopen(file, "a");
    fputs("{\"n\":4}\n", f);
    fclose(f);
    in = input_set_new(0);
    ck_assert_int_eq(input_add(in, file, &err), 0);
    Logged log = {0};
    ck_assert_int_eq(ckpt_resume_inputs(in, sec, len, collect_log, &log, &err), 0);
    ck_assert(logged(&log, "resumes at byte 24 (line 4)"));
    memset(&ls, 0, sizeof ls);
    while (input_poll(in, 100, &h) > 0) {
    }
    ck_assert_uint_eq(ls.count, 1);
    ck_assert_str_eq(ls.first, "{\"n\":4}");
    ck_assert_uint_eq(ls.first_no, 4);
    input_set_free(in);

    /* a checkpoint of a run on another input keeps this file's position */
    char *other = path_in(dir, "other.jsonl");
    f = fopen(other, "w");
    fputs("{\"n\":9}\n", f);
    fclose(f);
    in = input_set_new(0);
    ck_assert_int_eq(input_add(in, other, &err), 0);
    Buf body2 = BUF_INIT;
    ckpt_put_inputs(&body2, in, sec, len);
    input_set_free(in);
    const char *sec2;
    size_t len2;
    ck_assert(ckpt_find_section(body2.data, body2.len, CKPT_SEC_INPUTS, &sec2, &len2));
    in = input_set_new(0);
    ck_assert_int_eq(input_add(in, file, &err), 0);
    log.n = 0;
    ck_assert_int_eq(ckpt_resume_inputs(in, sec2, len2, collect_log, &log, &err), 0);
    ck_assert(logged(&log, "resumes at byte 24 (line 4)"));
    input_set_free(in);
    buf_free(&body2);
    free(other);

    /* a file now shorter than its offset cannot resume */
    ck_assert_int_eq(truncate(file, 5), 0);
    in = input_set_new(0);
    ck_assert_int_eq(input_add(in, file, &err), 0);
    ck_assert_int_eq(ckpt_resume_inputs(in, sec, len, collect_log, &log, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "fewer than the checkpointed offset 24"));
    free(err);
    input_set_free(in);
    buf_free(&body);
    free(file);
    remove_dir(dir);
}
END_TEST

START_TEST(files_are_cut_back_to_their_lengths)
{
    char *dir = make_dir();
    char *a = path_in(dir, "a.jsonl"), *b = path_in(dir, "b.jsonl"), *gone = path_in(dir, "x");
    FILE *f = fopen(a, "w");
    fputs("0123456789", f);
    fclose(f);
    f = fopen(b, "w");
    fputs("012", f);
    fclose(f);
    Buf sec = BUF_INIT;
    ckpt_files_add(&sec, a, 4);
    ckpt_files_add(&sec, b, 5);    /* shorter than its checkpoint: left alone */
    ckpt_files_add(&sec, gone, 1);
    Logged log = {0};
    char *err = NULL;
    ck_assert_int_eq(ckpt_truncate_files(sec.data, sec.len, collect_log, &log, &err), 0);
    struct stat st;
    ck_assert_int_eq(stat(a, &st), 0);
    ck_assert_int_eq(st.st_size, 4);
    ck_assert_int_eq(stat(b, &st), 0);
    ck_assert_int_eq(st.st_size, 3);
    ck_assert(logged(&log, "cut back from 10 to 4 bytes"));
    ck_assert(logged(&log, "fewer than the 5 of the checkpoint"));
    ck_assert(logged(&log, "is gone"));
    buf_free(&sec);
    free(a);
    free(b);
    free(gone);
    remove_dir(dir);
}
END_TEST

typedef struct Walked {
    Buf pairs;               /* "path=length;" per pair walked */
    size_t stop_after;       /* the walk stops after this many (0: never) */
    size_t n;
} Walked;

static bool note_pair(const char *path, size_t n, uint64_t length, void *user)
{
    Walked *w = user;
    buf_printf(&w->pairs, "%.*s=%llu;", (int)n, path, (unsigned long long)length);
    return ++w->n != w->stop_after;
}

static int walk(const char *sec, size_t len, size_t stop_after, Walked *w)
{
    *w = (Walked){BUF_INIT, stop_after, 0};
    int rc = ckpt_files_each(sec, len, note_pair, w);
    buf_append(&w->pairs, "", 1);
    return rc;
}

START_TEST(files_section_is_walked_pair_by_pair)
{
    Buf sec = BUF_INIT;
    ckpt_files_add(&sec, "/a", 4);
    ckpt_files_add(&sec, "/tmp/b c", 1234567890123);
    Walked w;
    ck_assert_int_eq(walk(sec.data, sec.len, 0, &w), 0);
    ck_assert_str_eq(w.pairs.data, "/a=4;/tmp/b c=1234567890123;");
    buf_free(&w.pairs);
    /* the callback stops it */
    ck_assert_int_eq(walk(sec.data, sec.len, 1, &w), 1);
    ck_assert_str_eq(w.pairs.data, "/a=4;");
    buf_free(&w.pairs);
    /* a torn last pair, as a crash leaves a journal: the whole pairs, then -1 */
    for (size_t cut = 1; cut < sec.len - 4; cut++) {
        int rc = walk(sec.data, sec.len - cut, 0, &w);
        ck_assert_msg(rc == -1, "cut %zu: %d", cut, rc);
        ck_assert_str_eq(w.pairs.data, "/a=4;");
        buf_free(&w.pairs);
    }
    ck_assert_int_eq(walk(sec.data, 4, 0, &w), 0);   /* "/a" and its length: whole */
    ck_assert_str_eq(w.pairs.data, "/a=4;");
    buf_free(&w.pairs);
    /* a path with a NUL ends the section, as its end does */
    Buf nul = BUF_INIT;
    ckpt_files_add(&nul, "/a", 1);
    snap_put_bytes(&nul, "/x\0y", 4);
    snap_put_u64(&nul, 2);
    ckpt_files_add(&nul, "/c", 3);
    ck_assert_int_eq(walk(nul.data, nul.len, 0, &w), 0);
    ck_assert_str_eq(w.pairs.data, "/a=1;");
    buf_free(&w.pairs);
    ck_assert_int_eq(walk("", 0, 0, &w), 0);
    ck_assert_str_eq(w.pairs.data, "");
    buf_free(&w.pairs);
    buf_free(&nul);
    buf_free(&sec);
}
END_TEST

/* ---- the engine's state ------------------------------------------------------------ */

typedef struct Seen {
    pthread_mutex_t lock;
    Buf lines;               /* "rule kind key time events" per alert, one per line */
    size_t n;
} Seen;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Seen *s = user;
    pthread_mutex_lock(&s->lock);
    buf_printf(&s->lines, "%zu %s %.*s %lld [", rule, r->kind == NFA_MATCH ? "m" : "t",
               n_key && key[0].type == V_STR ? (int)key[0].len : 1,
               n_key && key[0].type == V_STR ? key[0].s : "-", (long long)r->time_ms);
    for (const MatchNode *n = r->last; n; n = n->prev)
        buf_printf(&s->lines, " %u:%llu", n->step, (unsigned long long)n->event->id);
    buf_puts(&s->lines, " ]\n");
    s->n++;
    pthread_mutex_unlock(&s->lock);
}

static Engine *start_engine(const CompiledRuleSet *rs, Seen *seen, size_t workers)
{
    return test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, seen}, 0, workers);
}

/* A deterministic stream over 5 users: logins, transactions, logouts, out of order
 * within the lateness now and then. */
static char *event_line(size_t i)
{
    static const char *types[] = {"login", "tx", "tx", "tx", "logout", "tx", "ping"};
    char *s = malloc(160);
    long long ts = 1767225600000LL + (long long)i * 700 - (i % 5 == 2 ? 1500 : 0);
    snprintf(s, 160, "{\"ts\":%lld,\"user\":\"u%zu\",\"type\":\"%s\",\"amount\":%zu}", ts,
             i * 3 % 5, types[(i * 5 + i / 3) % 7], i * 37 % 500);
    return s;
}

static const char rules_text[] =
    "time ts epoch_ms lateness 2s;\n"
    "rule session { key user; begin a where type == \"login\";\n"
    "  followed_by b where type == \"logout\"; within 8s;\n"
    "  on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule big { key user; begin a where type == \"tx\" and amount > 300;\n"
    "  followed_by_any b where type == \"tx\"; followed_by c where type == \"tx\";\n"
    "  within 5s; skip past_last_event; on match alert \"big\"; }\n"
    "rule burst { key user; begin a where type == \"tx\"; next b where type == \"tx\";\n"
    "  suppress 20s; on match alert \"burst\"; }\n"
    "rule quiet { key user; begin a where type == \"login\";\n"
    "  not_followed_by b where type == \"tx\"; within 4s; on match alert \"q\"; }\n"
    "rule climb { key user; begin a where type == \"tx\" and amount > 250;\n"
    "  followed_by b where type == \"tx\" and amount > last(a.amount); within 40s;\n"
    "  skip past_last_event; on match alert \"climb\"; }\n";

#define N_EVENTS 400

static void feed_range(Engine *e, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char *line = event_line(i);
        ck_assert_int_eq(engine_line(e, line, strlen(line), "events.jsonl", i + 1, 0), 0);
        free(line);
    }
}

/* Alerts of the whole stream, run uninterrupted. */
static void run_whole(const CompiledRuleSet *rs, size_t workers, Seen *seen)
{
    Engine *e = start_engine(rs, seen, workers);
    feed_range(e, 0, N_EVENTS);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
}

/* Checkpoints e, frees it and returns a new engine (with `workers`) restored from the
 * checkpoint, delivering to seen. */
static Engine *restart_from_checkpoint(Engine *e, const CompiledRuleSet *rs, Seen *seen,
                                       size_t workers, EngineCheckpointInfo *info,
                                       EngineRestoreSummary *sum)
{
    Buf state = BUF_INIT;
    ck_assert_int_eq(engine_checkpoint(e, &state, NULL, NULL, info), 0);
    engine_free(e);
    e = start_engine(rs, seen, workers);
    char *err = NULL;
    int rc = engine_restore(e, state.data, state.len, sum, &err);
    if (rc < 0)
        fprintf(stderr, "restore: %s\n", err);
    ck_assert_int_eq(rc, 0);
    buf_free(&state);
    return e;
}

/* Alerts of the stream cut at `cut`: checkpoint, a new engine (maybe with another
 * worker count) restored from it, the rest. */
static void run_cut(const CompiledRuleSet *rs, size_t cut, size_t w1, size_t w2, Seen *seen,
                    EngineCheckpointInfo *info, EngineRestoreSummary *sum)
{
    Engine *e = start_engine(rs, seen, w1);
    feed_range(e, 0, cut);
    e = restart_from_checkpoint(e, rs, seen, w2, info, sum);
    feed_range(e, cut, N_EVENTS);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The alert lines sorted, for comparing runs whose key order may differ. */
static char *sorted(const Buf *b)
{
    char *copy = strdup(b->data ? b->data : "");
    size_t n = 0, cap = 64;
    char **v = malloc(cap * sizeof *v);
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[n++] = l;
    }
    qsort(v, n, sizeof *v, cmp_lines);
    Buf out = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_puts(&out, v[i]);
        buf_putc(&out, '\n');
    }
    free(v);
    free(copy);
    return buf_steal(&out);
}

/* Fails naming the first line that differs (whole texts are too long to print). */
static void same_text(const char *got, const char *want, size_t cut)
{
    size_t i = 0, line = 1;
    while (got[i] && got[i] == want[i])
        line += got[i++] == '\n';
    if (got[i] || want[i])
        ck_abort_msg("cut at %zu: alert line %zu differs: got '%.80s', want '%.80s'", cut, line,
                     got + i, want + i);
}

static void seen_init(Seen *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
}

static void seen_free(Seen *s)
{
    buf_free(&s->lines);
    pthread_mutex_destroy(&s->lock);
}

START_TEST(engine_restored_at_any_cut_gives_the_same_alerts)
{
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    Seen whole;
    seen_init(&whole);
    run_whole(rs, 1, &whole);
    ck_assert_uint_gt(whole.n, 20);
    bool saw_partials = false, saw_buffered = false;
    for (size_t cut = 0; cut <= N_EVENTS; cut += 7) {
        Seen part;
        seen_init(&part);
        EngineCheckpointInfo info;
        EngineRestoreSummary sum;
        run_cut(rs, cut, 1, 1, &part, &info, &sum);
        /* one worker: the very same alerts in the very same order */
        same_text(part.lines.data, whole.lines.data, cut);
        ck_assert_uint_eq(sum.rules_kept, 5);
        ck_assert_uint_eq(sum.keys, info.keys);
        ck_assert_uint_eq(sum.partials, info.partials);
        ck_assert_uint_eq(sum.buffered, info.buffered);
        saw_partials |= info.partials > 0;
        saw_buffered |= info.buffered > 0;
        seen_free(&part);
    }
    ck_assert(saw_partials);
    ck_assert(saw_buffered);
    seen_free(&whole);
    ruleset_free(rs);
}
END_TEST

/* Loops make long chains whose prefixes many partial matches share (more nodes per
 * key than the snapshot's inline tables hold). */
START_TEST(long_shared_chains_round_trip)
{
    CompiledRuleSet *rs = test_rules_compile(
        "time ts epoch_ms lateness 2s;\n"
        "rule loop { key user; begin a where type == \"login\";\n"
        "  followed_by b where type == \"tx\" one_or_more;\n"
        "  followed_by c where type == \"logout\" and count(b) > 3; within 120s;\n"
        "  on match alert \"loop\"; on timeout alert \"t\"; }\n", NULL);
    Seen whole;
    seen_init(&whole);
    run_whole(rs, 1, &whole);
    ck_assert_uint_gt(whole.n, 5);
    uint64_t most = 0;
    for (size_t cut = 50; cut < N_EVENTS; cut += 50) {
        Seen part;
        seen_init(&part);
        EngineCheckpointInfo info;
        EngineRestoreSummary sum;
        run_cut(rs, cut, 1, 1, &part, &info, &sum);
        same_text(part.lines.data, whole.lines.data, cut);
        if (info.partials > most)
            most = info.partials;
        seen_free(&part);
    }
    ck_assert_uint_gt(most, 40);   /* many partial matches over few keys: long, shared */
    seen_free(&whole);
    ruleset_free(rs);
}
END_TEST

START_TEST(engine_restores_across_worker_counts)
{
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    Seen whole;
    seen_init(&whole);
    run_whole(rs, 1, &whole);
    char *want = sorted(&whole.lines);
    const size_t counts[][2] = {{1, 3}, {3, 1}, {2, 2}, {4, 2}};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        for (size_t cut = 33; cut < N_EVENTS; cut += 120) {
            Seen part;
            seen_init(&part);
            EngineCheckpointInfo info;
            EngineRestoreSummary sum;
            run_cut(rs, cut, counts[c][0], counts[c][1], &part, &info, &sum);
            char *got = sorted(&part.lines);
            same_text(got, want, cut);
            free(got);
            seen_free(&part);
        }
    }
    free(want);
    seen_free(&whole);
    ruleset_free(rs);
}
END_TEST

START_TEST(changed_rule_starts_empty_and_others_keep_state)
{
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    Seen seen;
    seen_init(&seen);
    Engine *e = start_engine(rs, &seen, 1);
    feed_range(e, 0, 200);
    Buf state = BUF_INIT;
    EngineCheckpointInfo info;
    ck_assert_int_eq(engine_checkpoint(e, &state, NULL, NULL, &info), 0);
    engine_free(e);
    /* `session` changes (within), `quiet` and `climb` are gone, `fresh` is new, `big`
     * is renamed */
    char *changed = strdup(rules_text);
    char *w = strstr(changed, "within 8s");
    w[7] = '9';
    *strstr(changed, "rule quiet") = '\0';
    size_t n = strlen(changed);
    char *text = malloc(n + 200);
    snprintf(text, n + 200, "%srule fresh { key user; begin a where type == \"ping\"; }\n",
             changed);
    memcpy(strstr(text, "rule big"), "rule bog", 8);
    CompiledRuleSet *rs2 = test_rules_compile(text, NULL);
    e = start_engine(rs2, &seen, 1);
    EngineRestoreSummary sum;
    char *err = NULL;
    ck_assert_int_eq(engine_restore(e, state.data, state.len, &sum, &err), 0);
    ck_assert_uint_eq(sum.rules_kept, 2);      /* bog (renamed big) and burst */
    ck_assert_uint_eq(sum.rules_empty, 2);     /* session (changed) and fresh */
    ck_assert_uint_eq(sum.rules_dropped, 3);   /* the old session, quiet and climb */
    EngineRuleStats st;
    engine_rule_stats(e, 0, &st);              /* session */
    ck_assert_uint_eq(st.keys_live, 0);
    ck_assert_uint_eq(st.matches + st.timeouts, 0);
    engine_rule_stats(e, 2, &st);              /* burst keeps its counters */
    ck_assert_uint_gt(st.matches, 0);
    engine_free(e);
    free(text);
    free(changed);
    buf_free(&state);
    seen_free(&seen);
    ruleset_free(rs2);
    ruleset_free(rs);
}
END_TEST

/* The rules without `burst`'s suppression: the same fingerprint (a reload keeps the
 * rule's state), entries without the suppression field (runtime/partition.h). */
static char *rules_without_suppress(void)
{
    char *text = strdup(rules_text);
    char *at = strstr(text, "  suppress 20s;");
    memmove(at, at + strlen("  suppress 20s;"), strlen(at + strlen("  suppress 20s;")) + 1);
    return text;
}

/* A reload that gives a kept rule suppression, or takes it away, moves its keys to
 * entries with or without the field: their partial matches and timers go along. Going
 * there and back at once changes nothing, and the suppression works once added. */
START_TEST(suppression_added_or_removed_on_reload_moves_the_keys)
{
    char *plain_text = rules_without_suppress();
    CompiledRuleSet *plain = test_rules_compile(plain_text, NULL);
    CompiledRuleSet *with = test_rules_compile(rules_text, plain);
    CompiledRuleSet *plain2 = test_rules_compile(plain_text, with);
    Seen whole, there_and_back;
    seen_init(&whole);
    seen_init(&there_and_back);
    run_whole(plain, 1, &whole);
    Engine *e = start_engine(plain, &there_and_back, 1);
    feed_range(e, 0, N_EVENTS / 2);
    EngineRuleStats st;
    engine_rule_stats(e, 2, &st);                  /* burst */
    ck_assert_uint_gt(st.keys_live, 0);
    EngineReloadSummary sum;
    ck_assert_int_eq(engine_reload(e, with, NULL, NULL, &sum), 0);
    ck_assert_uint_eq(sum.kept, 5);
    ck_assert_int_eq(engine_reload(e, plain2, NULL, NULL, &sum), 0);
    ck_assert_uint_eq(sum.kept, 5);
    feed_range(e, N_EVENTS / 2, N_EVENTS);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_free(e);
    same_text(there_and_back.lines.data, whole.lines.data, N_EVENTS / 2);

    Seen added;
    seen_init(&added);
    CompiledRuleSet *with2 = test_rules_compile(rules_text, plain);
    e = start_engine(plain, &added, 1);
    feed_range(e, 0, N_EVENTS / 2);
    engine_rule_stats(e, 2, &st);
    ck_assert_uint_eq(st.suppressed, 0);
    ck_assert_int_eq(engine_reload(e, with2, NULL, NULL, &sum), 0);
    feed_range(e, N_EVENTS / 2, N_EVENTS);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_rule_stats(e, 2, &st);
    ck_assert_uint_gt(st.suppressed, 0);
    engine_free(e);
    seen_free(&added);
    seen_free(&whole);
    seen_free(&there_and_back);
    ruleset_free(with2);
    ruleset_free(plain2);
    ruleset_free(with);
    ruleset_free(plain);
    free(plain_text);
}
END_TEST

START_TEST(malformed_engine_state_is_refused)
{
    CompiledRuleSet *rs = test_rules_compile(rules_text, NULL);
    Seen seen;
    seen_init(&seen);
    Engine *e = start_engine(rs, &seen, 1);
    feed_range(e, 0, 100);
    Buf state = BUF_INIT;
    ck_assert_int_eq(engine_checkpoint(e, &state, NULL, NULL, NULL), 0);
    engine_free(e);
    /* every truncation is refused cleanly (no crash, no leak under the sanitizers) */
    for (size_t len = 0; len < state.len; len += state.len / 50 + 1) {
        e = start_engine(rs, &seen, 1);
        char *err = NULL;
        ck_assert_int_eq(engine_restore(e, state.data, len, NULL, &err), -1);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, "checkpoint state: "));
        free(err);
        engine_free(e);
    }
    buf_free(&state);
    seen_free(&seen);
    ruleset_free(rs);
}
END_TEST

/* A checkpoint taken while keys hold nothing but their suppression window (a one-step
 * rule that just alerted): the restored engine keeps suppressing each key until its own
 * window ends (not at it: the end is open), with the same alerts and counters as an
 * uninterrupted run. A focused, by-hand version of what the cut-anywhere comparison
 * above covers in bulk. */
static const char window_rules[] =
    "time ts epoch_ms lateness 0s;\n"
    "rule again { key user; begin a where type == \"buy\"; suppress 1h;\n"
    "  on match alert \"b\"; }\n";

#define BUY_T0 1767225600000LL
#define MIN_MS 60000LL

typedef struct Buy {
    const char *user;
    long long at_ms;   /* after BUY_T0 */
} Buy;

/* In event-time order (with lateness 0 an older event would be late). */
static const Buy buys[] = {
    {"u1", 0},                /* alert */
    {"u2", 5 * MIN_MS},       /* alert */
    /* the checkpoint goes here: both keys hold only their window */
    {"u1", 10 * MIN_MS},      /* suppressed */
    {"u1", 60 * MIN_MS + 1},  /* past u1's window: alert */
    {"u2", 64 * MIN_MS},      /* suppressed (u2's window ends at 65 min) */
    {"u2", 65 * MIN_MS},      /* at the end of u2's window: alert */
};
#define N_BUYS (sizeof buys / sizeof buys[0])
#define BUYS_CUT 2

static void feed_buys(Engine *e, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"buy\",\"user\":\"%s\"}",
                 BUY_T0 + buys[i].at_ms, buys[i].user);
        ck_assert_int_eq(engine_line(e, line, strlen(line), "buys.jsonl", i + 1, 0), 0);
    }
}

START_TEST(suppression_window_survives_a_checkpoint)
{
    CompiledRuleSet *rs = test_rules_compile(window_rules, NULL);
    /* uninterrupted */
    Seen whole;
    seen_init(&whole);
    Engine *e = start_engine(rs, &whole, 1);
    feed_buys(e, 0, N_BUYS);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats st_whole;
    engine_rule_stats(e, 0, &st_whole);
    engine_free(e);
    /* each alert is its buy alone (step 0, the event of the buy's line) */
    ck_assert_str_eq(whole.lines.data, "0 m u1 1767225600000 [ 0:1 ]\n"
                                       "0 m u2 1767225900000 [ 0:2 ]\n"
                                       "0 m u1 1767229200001 [ 0:4 ]\n"
                                       "0 m u2 1767229500000 [ 0:6 ]\n");
    ck_assert_uint_eq(st_whole.suppressed, 2);

    /* cut after BUYS_CUT buys */
    Seen cut;
    seen_init(&cut);
    e = start_engine(rs, &cut, 1);
    feed_buys(e, 0, BUYS_CUT);
    EngineRestoreSummary sum;
    e = restart_from_checkpoint(e, rs, &cut, 1, NULL, &sum);
    ck_assert_uint_eq(sum.rules_kept, 1);
    ck_assert_uint_eq(sum.keys, 2);
    ck_assert_uint_eq(sum.partials, 0);
    feed_buys(e, BUYS_CUT, N_BUYS);
    ck_assert_int_eq(engine_finish(e), 0);
    EngineRuleStats st_cut;
    engine_rule_stats(e, 0, &st_cut);
    engine_free(e);
    ck_assert_str_eq(cut.lines.data, whole.lines.data);
    ck_assert_uint_eq(st_cut.suppressed, st_whole.suppressed);
    ck_assert_uint_eq(st_cut.alerts, st_whole.alerts);
    seen_free(&whole);
    seen_free(&cut);
    ruleset_free(rs);
}
END_TEST

/* ---- rule counters ------------------------------------------------------------------ */

/* `pair` matches, times out and (past the budget) refuses keys; `again` suppresses;
 * lines without a user count as missing_key. */
static const char counted_rules[] =
    "time ts epoch_ms lateness 1s;\n"
    "rule pair { key user; begin a where type == \"login\";\n"
    "  followed_by b where type == \"buy\"; within 10s;\n"
    "  on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule again { key user; begin a where type == \"buy\"; suppress 1h;\n"
    "  on match alert \"b\"; }\n";

#define N_COUNTED_RULES 2

static void feed_counted(Engine *e, size_t *no, int64_t *ts, const char *type, int user)
{
    char line[128];
    if (user < 0)
        snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"%s\"}", (long long)*ts, type);
    else
        snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"%s\",\"user\":\"u%d\"}",
                 (long long)*ts, type, user);
    ck_assert_int_eq(engine_line(e, line, strlen(line), "events.jsonl", ++*no, 0), 0);
    *ts += 5;
}

/* A run under a 256 KiB --max-memory that refuses keys, checkpointed into state; its
 * counters (after the checkpoint: all delivered) into st. */
static void run_refusing(const CompiledRuleSet *rs, size_t workers, Buf *state,
                         EngineRuleStats st[N_COUNTED_RULES])
{
    Seen seen;
    seen_init(&seen);
    Engine *e = start_engine(rs, &seen, workers);
    engine_set_limits(e, &(EngineLimits){.max_memory = 256 << 10});
    size_t no = 0;
    int64_t ts = 1767225600000;
    for (int u = 0; u < 50; u++) {
        feed_counted(e, &no, &ts, "login", u);
        feed_counted(e, &no, &ts, "buy", u);          /* a match */
        feed_counted(e, &no, &ts, "buy", u);          /* suppressed */
        feed_counted(e, &no, &ts, "login", u);        /* times out */
        feed_counted(e, &no, &ts, "login", -1);       /* missing_key */
    }
    for (int u = 50; u < 8000; u++)
        feed_counted(e, &no, &ts, "login", u);        /* the budget runs out */
    ck_assert_int_eq(engine_checkpoint(e, state, NULL, NULL, NULL), 0);
    ck_assert_int_eq(engine_all_rule_stats(e, st), 0);
    engine_free(e);
    seen_free(&seen);
    ck_assert_uint_gt(st[0].keys_refused, 0);
    ck_assert_uint_gt(st[0].matches, 0);
    ck_assert_uint_gt(st[0].timeouts, 0);
    ck_assert_uint_gt(st[0].missing_key, 0);
    ck_assert_uint_gt(st[1].suppressed, 0);
}

/* Every counter a checkpoint carries, but keys_refused, which the caller checks. */
static void same_counters_but_refused(const EngineRuleStats *got, const EngineRuleStats *want)
{
    ck_assert_uint_eq(got->matches, want->matches);
    ck_assert_uint_eq(got->timeouts, want->timeouts);
    ck_assert_uint_eq(got->alerts, want->alerts);
    ck_assert_uint_eq(got->suppressed, want->suppressed);
    ck_assert_uint_eq(got->missing_key, want->missing_key);
    ck_assert_uint_eq(got->partials_dropped, want->partials_dropped);
    ck_assert_uint_eq(got->partials_refused, want->partials_refused);
    ck_assert_uint_eq(got->cap_hits, want->cap_hits);
    ck_assert_uint_eq(got->keys_live, want->keys_live);
    ck_assert_uint_eq(got->partials_live, want->partials_live);
}

START_TEST(keys_refused_carries_on_after_a_restore)
{
    CompiledRuleSet *rs = test_rules_compile(counted_rules, NULL);
    const size_t counts[][2] = {{1, 1}, {2, 3}};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        Buf state = BUF_INIT;
        EngineRuleStats want[N_COUNTED_RULES], got[N_COUNTED_RULES];
        run_refusing(rs, counts[c][0], &state, want);
        Seen seen;
        seen_init(&seen);
        Engine *e = start_engine(rs, &seen, counts[c][1]);
        char *err = NULL;
        ck_assert_int_eq(engine_restore(e, state.data, state.len, NULL, &err), 0);
        ck_assert_int_eq(engine_all_rule_stats(e, got), 0);
        for (size_t i = 0; i < N_COUNTED_RULES; i++) {
            same_counters_but_refused(&got[i], &want[i]);
            ck_assert_uint_eq(got[i].keys_refused, want[i].keys_refused);
        }
        engine_free(e);
        seen_free(&seen);
        buf_free(&state);
    }
    ruleset_free(rs);
}
END_TEST

/* Where needle first occurs in hay[0..n); fails the test if nowhere. */
static size_t offset_of(const char *hay, size_t n, const char *needle, size_t m)
{
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (!memcmp(hay + i, needle, m))
            return i;
    ck_abort_msg("the rule's entry is not in the engine state");
    return 0;
}

/* The engine state as version 1 wrote it: each rule's entry (fingerprint, name, then
 * its counters) without keys_refused, the last counter of version 2. */
static void drop_keys_refused(Buf *state, const CompiledRuleSet *rs,
                              const EngineRuleStats *st)
{
    for (size_t i = 0; i < rs->n_rules; i++) {
        Buf entry = BUF_INIT;
        snap_put_u64(&entry, rs->rules[i].fingerprint);
        snap_put_str(&entry, rs->rules[i].name);
        size_t counters = offset_of(state->data, state->len, entry.data, entry.len) +
                          entry.len;
        SnapReader r;
        snap_reader_init(&r, state->data + counters, state->len - counters);
        for (int k = 0; k < 8; k++)   /* the eight counters of version 1 */
            snap_get_u64(&r);
        size_t from = state->len - (size_t)(r.end - r.p);
        ck_assert_uint_eq(snap_get_u64(&r), st[i].keys_refused);
        ck_assert(!r.bad);
        size_t to = state->len - (size_t)(r.end - r.p);
        memmove(state->data + from, state->data + to, state->len - to);
        state->len -= to - from;
        buf_free(&entry);
    }
}

/* Written by the previous version, read through the checkpoint file as a restarting
 * vigil does: keys_refused starts at 0, every other counter and the keys carry on. */
START_TEST(version_1_state_restores_with_keys_refused_0)
{
    CompiledRuleSet *rs = test_rules_compile(counted_rules, NULL);
    Buf state = BUF_INIT;
    EngineRuleStats want[N_COUNTED_RULES], got[N_COUNTED_RULES];
    run_refusing(rs, 1, &state, want);
    drop_keys_refused(&state, rs, want);
    Buf body = BUF_INIT;
    ckpt_put_section(&body, CKPT_SEC_ENGINE, state.data, state.len);
    char *dir = make_dir(), *err = NULL;
    write_slot_by_hand(dir, 1, 1, body.data, body.len);
    CkptLoaded l;
    Logged log = {0};
    ck_assert_int_eq(reload(dir, &l, &log, &err), 1);
    ck_assert_uint_eq(l.version, 1);
    const char *sec;
    size_t len;
    ck_assert(ckpt_find_section(l.body, l.len, CKPT_SEC_ENGINE, &sec, &len));
    Seen seen;
    seen_init(&seen);
    Engine *e = start_engine(rs, &seen, 1);
    EngineRestoreSummary sum;
    int rc = engine_restore_version(e, sec, len, l.version, &sum, &err);
    ck_assert_msg(rc == 0, "restore: %s", err ? err : "?");
    ck_assert_uint_eq(sum.rules_kept, N_COUNTED_RULES);
    ck_assert_int_eq(engine_all_rule_stats(e, got), 0);
    for (size_t i = 0; i < N_COUNTED_RULES; i++) {
        same_counters_but_refused(&got[i], &want[i]);
        ck_assert_uint_eq(got[i].keys_refused, 0);
    }
    engine_free(e);
    /* read as the current format, the same bytes are malformed: the version matters */
    e = start_engine(rs, &seen, 1);
    ck_assert_int_eq(engine_restore_version(e, sec, len, CKPT_VERSION, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "checkpoint state: "));
    free(err);
    engine_free(e);
    ckpt_loaded_free(&l);
    seen_free(&seen);
    buf_free(&body);
    buf_free(&state);
    remove_dir(dir);
    ruleset_free(rs);
}
END_TEST

START_TEST(engine_refuses_state_of_a_version_it_does_not_read)
{
    CompiledRuleSet *rs = test_rules_compile(counted_rules, NULL);
    Buf state = BUF_INIT;
    EngineRuleStats st[N_COUNTED_RULES];
    run_refusing(rs, 1, &state, st);
    const uint32_t refused[] = {0, CKPT_VERSION + 1};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        Seen seen;
        seen_init(&seen);
        Engine *e = start_engine(rs, &seen, 1);
        char *err = NULL;
        ck_assert_int_eq(engine_restore_version(e, state.data, state.len, refused[i], NULL,
                                                &err), -1);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, "but this vigil reads version 2"));
        free(err);
        engine_free(e);
        seen_free(&seen);
    }
    buf_free(&state);
    ruleset_free(rs);
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *t = tcase_create("encoding");
    tcase_add_test(t, snap_numbers_round_trip);
    tcase_add_test(t, snap_rejects_lengths_and_counts_beyond_the_input);
    suite_add_tcase(s, t);
    t = tcase_create("files");
    tcase_add_test(t, file_round_trip_and_newest_wins);
    tcase_add_test(t, bad_checksum_falls_back_to_the_previous_one);
    tcase_add_test(t, torn_file_falls_back_to_the_previous_one);
    tcase_add_test(t, other_version_is_named_and_skipped);
    tcase_add_test(t, versions_not_read_are_refused);
    tcase_add_test(t, version_1_is_still_loaded);
    tcase_add_test(t, no_good_checkpoint_is_an_error);
    tcase_add_test(t, folder_is_locked_while_open);
    tcase_add_test(t, sections_are_found_by_tag);
    tcase_add_test(t, file_input_resumes_at_its_offset);
    tcase_add_test(t, files_are_cut_back_to_their_lengths);
    tcase_add_test(t, files_section_is_walked_pair_by_pair);
    suite_add_tcase(s, t);
    t = tcase_create("engine");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, engine_restored_at_any_cut_gives_the_same_alerts);
    tcase_add_test(t, long_shared_chains_round_trip);
    tcase_add_test(t, engine_restores_across_worker_counts);
    tcase_add_test(t, changed_rule_starts_empty_and_others_keep_state);
    tcase_add_test(t, suppression_added_or_removed_on_reload_moves_the_keys);
    tcase_add_test(t, suppression_window_survives_a_checkpoint);
    tcase_add_test(t, malformed_engine_state_is_refused);
    tcase_add_test(t, keys_refused_carries_on_after_a_restore);
    tcase_add_test(t, version_1_state_restores_with_keys_refused_0);
    tcase_add_test(t, engine_refuses_state_of_a_version_it_does_not_read);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return check_run_suite(checkpoint_suite());
}
