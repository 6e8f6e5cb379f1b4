/* runtime/checkpoint.c — the state folder, checkpoint framing, input positions and
 * file lengths; see checkpoint.h. */
#include "runtime/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/hash.h"
#include "nfa/snapshot.h"

static const char ckpt_magic[8] = {'V', 'I', 'G', 'I', 'L', 'C', 'K', 'P'};

enum { INPUT_KIND_FILE = 0 };

static void logf_(CkptLog log, void *user, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(CkptLog log, void *user, const char *fmt, ...)
{
    Buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (log)
        log(user, b.failed ? "(out of memory while formatting a message)" : b.data);
    buf_free(&b);
}

/* ---- little-endian header fields --------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t checksum(const unsigned char *header, const char *body, size_t len)
{
    return hash_bytes(hash_bytes(HASH_SEED, header, 40), body, len);
}

/* ---- the folder ---------------------------------------------------------------------- */

static char *slot_path(const CkptStore *s, uint64_t seq)
{
    return buf_format("%s/checkpoint.%llu", s->dir, (unsigned long long)(seq & 1));
}

int ckpt_open(CkptStore *s, const char *dir, char **err)
{
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        *err = buf_format("cannot create the state folder %s: %s", dir, strerror(errno));
        return -1;
    }
    s->dir = buf_format("%s", dir);
    char *lock = buf_format("%s/lock", dir);
    if (!s->dir || !lock) {
        free(lock);
        ckpt_close(s);
        *err = buf_format("out of memory");
        return -1;
    }
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int open_errno = errno;
    free(lock);
    if (s->lock_fd < 0) {
        *err = buf_format("cannot open %s/lock: %s", dir, strerror(open_errno));
        ckpt_close(s);
        return -1;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        *err = errno == EWOULDBLOCK
                   ? buf_format("the state folder %s is in use by another vigil", dir)
                   : buf_format("cannot lock %s/lock: %s", dir, strerror(errno));
        ckpt_close(s);
        return -1;
    }
    return 0;
}

void ckpt_close(CkptStore *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd);   /* releases the flock */
    s->lock_fd = -1;
    free(s->dir);
    s->dir = NULL;
}

/* ---- reading a slot ----------------------------------------------------------------- */

/* SLOT_NOMEM: memory ran out while reading it, which says nothing about the slot. */
typedef enum { SLOT_OK, SLOT_ABSENT, SLOT_BAD, SLOT_NOMEM } SlotStatus;

static SlotStatus read_file(const char *path, char **data, size_t *len, char **why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return SLOT_ABSENT;
        *why = buf_format("cannot open it: %s", strerror(errno));
        return SLOT_BAD;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *why = buf_format("cannot read it: %s", strerror(errno));
        close(fd);
        return SLOT_BAD;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return SLOT_NOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        free(buf);
        *why = buf_format("cannot read it");
        return SLOT_BAD;
    }
    *data = buf;
    *len = got;
    return SLOT_OK;
}

/* Validates a slot's framing; on success the body is moved to the front of data. */
static SlotStatus check_slot(char *data, size_t len, CkptLoaded *out, char **why)
{
    const unsigned char *h = (const unsigned char *)data;
    if (len < CKPT_HEADER_SIZE) {
        *why = buf_format("torn: only %zu bytes", len);
        return SLOT_BAD;
    }
    if (memcmp(h, ckpt_magic, sizeof ckpt_magic) != 0) {
        *why = buf_format("not a vigil checkpoint");
        return SLOT_BAD;
    }
    uint64_t version = get_le(h + 8, 4);
    if (version < CKPT_OLDEST_VERSION || version > CKPT_VERSION) {
        *why = buf_format("format version %llu, but this vigil reads version %d",
                           (unsigned long long)version, CKPT_VERSION);
        return SLOT_BAD;
    }
    uint64_t body_len = get_le(h + 32, 8);
    if (body_len != len - CKPT_HEADER_SIZE) {
        *why = buf_format("torn: %zu bytes of body, the header says %llu",
                           len - CKPT_HEADER_SIZE, (unsigned long long)body_len);
        return SLOT_BAD;
    }
    if (checksum(h, data + CKPT_HEADER_SIZE, (size_t)body_len) != get_le(h + 40, 8)) {
        *why = buf_format("corrupt: bad checksum");
        return SLOT_BAD;
    }
    out->version = (uint32_t)version;
    out->seq = get_le(h + 16, 8);
    out->written_ms = (int64_t)get_le(h + 24, 8);
    memmove(data, data + CKPT_HEADER_SIZE, (size_t)body_len);
    out->body = data;
    out->len = (size_t)body_len;
    return SLOT_OK;
}

int ckpt_load(CkptStore *s, CkptLoaded *out, CkptLog log, void *user, char **err)
{
    memset(out, 0, sizeof *out);
    CkptLoaded cand[2] = {{0}};
    char *why[2] = {NULL, NULL};
    SlotStatus st[2];
    for (int i = 0; i < 2; i++) {
        cand[i].path = slot_path(s, (uint64_t)i);
        char *data = NULL;
        size_t len = 0;
        st[i] = !cand[i].path ? SLOT_NOMEM : read_file(cand[i].path, &data, &len, &why[i]);
        if (st[i] == SLOT_OK && (st[i] = check_slot(data, len, &cand[i], &why[i])) != SLOT_OK)
            free(data);
    }
    /* Out of memory: neither slot may be judged, nor an older one used in place of a
     * newer one that could not be read (the next checkpoint would go over it). */
    if (st[0] == SLOT_NOMEM || st[1] == SLOT_NOMEM) {
        for (int i = 0; i < 2; i++) {
            free(why[i]);
            free(cand[i].body);
            free(cand[i].path);
        }
        *err = buf_format("out of memory while reading the checkpoints in %s", s->dir);
        return -1;
    }
    int best = -1;
    for (int i = 0; i < 2; i++)
        if (st[i] == SLOT_OK && (best < 0 || cand[i].seq > cand[best].seq))
            best = i;
    int rc = best >= 0 ? 1 : (st[0] == SLOT_ABSENT && st[1] == SLOT_ABSENT) ? 0 : -1;
    for (int i = 0; i < 2; i++) {
        if (st[i] != SLOT_BAD)
            continue;
        if (best >= 0)
            logf_(log, user, "checkpoint %s is unusable (%s); using the previous one, %s",
                  cand[i].path ? cand[i].path : "?", why[i] ? why[i] : "out of memory",
                  cand[best].path);
        else if (!*err)
            *err = buf_format("checkpoint %s is unusable (%s) and there is no good one to "
                               "fall back to; move the folder %s away to start afresh",
                               cand[i].path ? cand[i].path : "?",
                               why[i] ? why[i] : "out of memory", s->dir);
    }
    for (int i = 0; i < 2; i++) {
        free(why[i]);
        if (i == best) {
            *out = cand[i];
        } else {
            free(cand[i].body);
            free(cand[i].path);
        }
    }
    /* the next checkpoint goes to the other slot, over anything unusable there */
    s->seq = best >= 0 ? out->seq : 0;
    return rc;
}

void ckpt_loaded_free(CkptLoaded *l)
{
    free(l->body);
    free(l->path);
    memset(l, 0, sizeof *l);
}

/* ---- writing -------------------------------------------------------------------------- */

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ckpt_write(CkptStore *s, const char *body, size_t len, int64_t now_ms, char **err)
{
    uint64_t seq = s->seq + 1;
    unsigned char h[CKPT_HEADER_SIZE];
    memcpy(h, ckpt_magic, sizeof ckpt_magic);
    put_le(h + 8, CKPT_VERSION, 4);
    put_le(h + 12, 0, 4);
    put_le(h + 16, seq, 8);
    put_le(h + 24, (uint64_t)now_ms, 8);
    put_le(h + 32, len, 8);
    put_le(h + 40, checksum(h, body, len), 8);
    char *tmp = buf_format("%s/checkpoint.tmp", s->dir);
    char *dest = slot_path(s, seq);
    int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    const char *step = !tmp || !dest ? "out of memory" : fd < 0 ? "create" : NULL;
    if (!step && (fd_write_all(fd, h, sizeof h) < 0 || fd_write_all(fd, body, len) < 0))
        step = "write";
    if (!step && fsync(fd) < 0)
        step = "fsync";
    if (fd >= 0 && close(fd) < 0 && !step)
        step = "close";
    if (!step && rename(tmp, dest) < 0)
        step = "rename";
    if (!step && fsync_dir(s->dir) < 0)
        step = "fsync the folder of";
    if (step) {
        int e = errno;
        *err = buf_format("cannot write the checkpoint %s: %s: %s", dest ? dest : "?", step,
                           strerror(e));
        if (tmp)
            unlink(tmp);
    } else {
        s->seq = seq;
    }
    free(tmp);
    free(dest);
    return step ? -1 : 0;
}

/* ---- sections ------------------------------------------------------------------------ */

void ckpt_put_section(Buf *body, uint64_t tag, const char *data, size_t len)
{
    snap_put_u64(body, tag);
    snap_put_bytes(body, data, len);
}

bool ckpt_find_section(const char *body, size_t len, uint64_t tag, const char **data,
                       size_t *dlen)
{
    SnapReader r;
    snap_reader_init(&r, body, len);
    while (!r.bad && !snap_at_end(&r)) {
        uint64_t t = snap_get_u64(&r);
        const char *d = snap_get_bytes(&r, dlen);
        if (!r.bad && t == tag) {
            *data = d;
            return true;
        }
    }
    return false;
}

/* ---- inputs --------------------------------------------------------------------------- */

static void put_position(void *user, const InputPosition *p)
{
    Buf *sec = user;
    if (!p->resumable)
        return;   /* stdin cannot be reopened where it was */
    snap_put_u64(sec, INPUT_KIND_FILE);
    snap_put_str(sec, p->origin);
    snap_put_u64(sec, 1);          /* one partition */
    snap_put_u64(sec, 0);          /* partition 0 */
    snap_put_u64(sec, p->offset);
    snap_put_u64(sec, p->line_no);
}

typedef struct NameQuery {
    const char *name;
    size_t len;
    bool found;
} NameQuery;

static void match_name(void *user, const InputPosition *p)
{
    NameQuery *q = user;
    q->found |= strlen(p->origin) == q->len && memcmp(p->origin, q->name, q->len) == 0;
}

/* Copies the entries of `prev` naming inputs that `in` does not have. */
static void carry_inputs(Buf *sec, const InputSet *in, const char *prev, size_t len)
{
    SnapReader r;
    snap_reader_init(&r, prev, len);
    while (!r.bad && !snap_at_end(&r)) {
        const unsigned char *start = r.p;
        (void)snap_get_u64(&r);
        NameQuery q = {NULL, 0, false};
        q.name = snap_get_bytes(&r, &q.len);
        size_t parts = snap_get_count(&r, 3);
        for (size_t i = 0; i < 3 * parts && !r.bad; i++)
            (void)snap_get_u64(&r);
        if (r.bad)
            return;
        input_each_position(in, match_name, &q);
        if (!q.found)
            buf_append(sec, (const char *)start, (size_t)(r.p - start));
    }
}

void ckpt_put_inputs(Buf *body, const InputSet *in, const char *prev, size_t prev_len)
{
    Buf sec = BUF_INIT;
    input_each_position(in, put_position, &sec);
    if (prev)
        carry_inputs(&sec, in, prev, prev_len);
    if (sec.failed)
        body->failed = true;
    else
        ckpt_put_section(body, CKPT_SEC_INPUTS, sec.data ? sec.data : "", sec.len);
    buf_free(&sec);
}

typedef struct ResumeCtx {
    InputSet *in;
    const char *data;
    size_t len;
    CkptLog log;
    void *user;
    char **err;
    int rc;
} ResumeCtx;

/* Finds origin's entry in the section: true with its offset and line. */
static bool saved_position(const ResumeCtx *c, const char *origin, uint64_t *offset,
                           uint64_t *line_no, bool *malformed)
{
    SnapReader r;
    snap_reader_init(&r, c->data, c->len);
    while (!r.bad && !snap_at_end(&r)) {
        uint64_t kind = snap_get_u64(&r);
        size_t nlen;
        const char *name = snap_get_bytes(&r, &nlen);
        size_t parts = snap_get_count(&r, 3);
        bool match = !r.bad && kind == INPUT_KIND_FILE && nlen == strlen(origin) &&
                     memcmp(name, origin, nlen) == 0;
        for (size_t i = 0; i < parts && !r.bad; i++) {
            uint64_t part = snap_get_u64(&r), off = snap_get_u64(&r), line = snap_get_u64(&r);
            if (match && part == 0) {
                *offset = off;
                *line_no = line;
            }
        }
        if (match && !r.bad && parts == 1)
            return true;
    }
    *malformed = r.bad;
    return false;
}

static void resume_one(void *user, const InputPosition *p)
{
    ResumeCtx *c = user;
    if (c->rc < 0)
        return;
    if (!p->resumable) {
        logf_(c->log, c->user, "input %s cannot resume (not a regular file): what it "
              "delivers now is new input", p->origin);
        return;
    }
    uint64_t offset = 0, line_no = 0;
    bool malformed = false;
    if (!saved_position(c, p->origin, &offset, &line_no, &malformed)) {
        if (malformed) {
            *c->err = buf_format("the inputs section of the checkpoint is malformed");
            c->rc = -1;
        } else {
            logf_(c->log, c->user, "input %s is not in the checkpoint: reading it from the "
                  "start", p->origin);
        }
        return;
    }
    if (input_resume(c->in, p->origin, offset, line_no, c->err) < 0) {
        c->rc = -1;
        return;
    }
    logf_(c->log, c->user, "input %s resumes at byte %llu (line %llu)", p->origin,
          (unsigned long long)offset, (unsigned long long)line_no + 1);
}

int ckpt_resume_inputs(InputSet *in, const char *data, size_t len, CkptLog log, void *user,
                       char **err)
{
    ResumeCtx c = {in, data, len, log, user, err, 0};
    input_each_position(in, resume_one, &c);
    return c.rc;
}

/* ---- files ------------------------------------------------------------------------------ */

void ckpt_files_add(Buf *sec, const char *path, uint64_t length)
{
    snap_put_str(sec, path);
    snap_put_u64(sec, length);
}

int ckpt_files_each(const char *sec, size_t len, CkptFileFn each, void *user)
{
    SnapReader r;
    snap_reader_init(&r, sec, len);
    while (!snap_at_end(&r)) {
        size_t n;
        const char *path = snap_get_bytes(&r, &n);
        uint64_t length = snap_get_u64(&r);
        if (r.bad)
            return -1;
        if (memchr(path, '\0', n))
            return 0;
        if (!each(path, n, length, user))
            return 1;
    }
    return 0;
}

typedef struct TruncateCtx {
    CkptLog log;
    void *user;
    char **err;
} TruncateCtx;

/* Cuts one file back to `length`, if it is longer; false (*err set) if it cannot. */
static bool truncate_one(const char *p, size_t plen, uint64_t length, void *user)
{
    TruncateCtx *c = user;
    char *path = buf_format("%.*s", (int)plen, p);
    struct stat st;
    if (!path) {
        *c->err = buf_format("out of memory");
        return false;
    }
    bool ok = true;
    if (stat(path, &st) < 0) {
        logf_(c->log, c->user, "%s is gone (the checkpoint had %llu bytes of it)", path,
              (unsigned long long)length);
    } else if ((uint64_t)st.st_size < length) {
        logf_(c->log, c->user, "%s has %llu bytes, fewer than the %llu of the checkpoint; "
              "left as it is", path, (unsigned long long)st.st_size,
              (unsigned long long)length);
    } else if ((uint64_t)st.st_size > length) {
        if (truncate(path, (off_t)length) < 0) {
            *c->err = buf_format("cannot cut %s back to %llu bytes: %s", path,
                                 (unsigned long long)length, strerror(errno));
            ok = false;
        } else {
            logf_(c->log, c->user, "%s cut back from %llu to %llu bytes (written after "
                  "the checkpoint)", path, (unsigned long long)st.st_size,
                  (unsigned long long)length);
        }
    }
    free(path);
    return ok;
}

int ckpt_truncate_files(const char *data, size_t len, CkptLog log, void *user, char **err)
{
    TruncateCtx c = {log, user, err};
    int rc = ckpt_files_each(data, len, truncate_one, &c);
    if (rc == 1)
        return -1;   /* truncate_one said why */
    if (rc < 0) {
        *err = buf_format("the files section of the checkpoint is malformed");
        return -1;
    }
    return 0;
}
