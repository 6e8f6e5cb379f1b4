/* runtime/input.c — line-framed event sources over one poll loop.
 *
 * Owns every descriptor it opens (files, listening sockets, client connections), each
 * source's partial-line buffer, and the origin strings.
 *
 * Decisions:
 * - Buffers: a source's buffer holds at most one partial line plus what one read()
 *   brings; it grows only while a single line needs it, up to max_line + 1 bytes, so
 *   memory is bounded by (sources x max_line). An over-long line is rejected as soon as
 *   it is known to be too long and the rest of it is discarded as it arrives, never
 *   buffered. The rejected text is an excerpt (its first INPUT_OVERLONG_EXCERPT bytes).
 *   That rule is input.h's framer, which the workers reading a file use too.
 * - Lent buffers: the line handler may keep the lines of a read where they lie (with
 *   workers the engine decodes them there rather than copying each line). A source
 *   whose buffer is held once its lines are framed moves its partial line into another
 *   buffer, one the handler let go of (up to SPARE_TEXTS are kept for that, so reads
 *   go into memory already mapped) or a new one; a held buffer is never written.
 *   Memory then also holds the buffers the handler keeps (the engine: one per decoding
 *   batch out) and the spares, each at most max_line + 1 bytes like any buffer.
 * - Origins: events borrow their origin string, and may outlive the connection they
 *   came from (in partial matches), so origin strings live in an arena until
 *   input_set_free: about 40 bytes per connection ever accepted.
 * - Fairness: one read() per ready source per poll round, so one fast client cannot
 *   starve the others.
 * - Backpressure: a pause asked for by the line handler takes effect at the next
 *   line: the rest of the read stays in the source's buffer (`held`), so no line goes
 *   out while paused and memory stays within the buffer bound above.
 * - Connections beyond MAX_CONNECTIONS are accepted and closed at once, with a log
 *   line, rather than left to pile up in the kernel backlog unseen.
 * - A Unix socket path is only unlinked if it is a socket nobody answers on; it is
 *   created under umask 0177 (so it is 0600 from the start; umask is per process, so
 *   this briefly affects other threads creating files) and chmod-ed 0600 again. */
#define _GNU_SOURCE   /* accept4 */
#include "runtime/input.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/hostport.h"

/* Reads for files and stdin: a few decoding batches' worth, so that the buffers the
 * engine holds (lent buffers, below) come back for reuse while still in the cache
 * (1 MiB: the reading thread about 8 % more perf samples on scenario 1). */
#define FILE_BUFFER_INITIAL (1u << 17)
#define SOCKET_BUFFER_INITIAL (16u << 10)
#define MAX_CONNECTIONS 4096
#define ACCEPTS_PER_ROUND 64
#define LISTEN_BACKLOG 128
/* Buffers let go by sources while the line handler held them, kept for reuse: the
 * engine holds at most a few reads' worth of lines (its batches out for decoding). */
#define SPARE_TEXTS 4
/* Good lines handed over at a time by input_poll_runs. */
#define RUN_LINES 256

typedef enum {
    SRC_STREAM,       /* stdin or a file: at EOF a final unterminated line is still a line */
    SRC_CONNECTION,   /* a client: at EOF an unterminated fragment is rejected */
    SRC_LISTENER,
} SourceKind;

typedef struct Source {
    SourceKind kind;
    int fd;
    bool owns_fd;           /* false for stdin */
    bool finished;          /* to be removed at the end of this round */
    const char *origin;     /* in the set's arena */
    char *unix_path;        /* heap: socket file to unlink on close (unix listeners) */
    int port;               /* bound port (tcp listeners), else -1 */
    unsigned long clients;  /* connections accepted so far (listeners), for "#N" */
    bool is_unix;           /* listener family, for naming its clients */
    bool out_of_fds;        /* listener: accept hit EMFILE/ENFILE; not polled until an fd frees */
    /* framing */
    InputText *text;        /* one reference; buf is its bytes, cap its size */
    char *buf;
    size_t len, cap;
    size_t scanned;         /* buf[0..scanned) is known to hold no newline */
    InputFramer frame;      /* the set's max_line; whether an over-long line is being skipped */
    bool held;              /* buf holds complete lines not yet delivered (paused mid-read) */
    uint64_t line_no;       /* lines started so far */
    uint64_t offset;        /* origin offset of buf[0] */
    uint64_t size;          /* regular files: size at open, else 0 */
    bool regular;
} Source;

struct InputSet {
    size_t max_line;
    bool paused;
    Source **sources;       /* heap array of heap sources, owned */
    size_t n_sources, cap_sources;
    size_t n_connections;
    struct pollfd *pfds;    /* heap, reused every round */
    Source **polled;        /* source of each pfds entry; heap, reused */
    size_t cap_pfds;
    uint64_t done_bytes, total_bytes;   /* regular files, for progress */
    bool lost_lines;        /* input_lost_lines */
    int last_port;
    Arena strings;          /* origin strings */
    InputPosition *ended;   /* stream inputs that reached their end (checkpoints); heap */
    size_t n_ended, cap_ended;
    InputText *spare[SPARE_TEXTS];   /* one reference each; reusable once it is the only one */
    size_t n_spare;
    InputLinesFn runs;      /* during input_poll_runs: takes the good lines in runs */
};

struct InputText {
    size_t refs;
    size_t cap;
    char data[];
};

static void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("vigil: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A heap copy of the formatted text, for the *err of input_add; NULL on failure. */
static char *format_heap(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

InputSet *input_set_new(size_t max_line)
{
    InputSet *in = calloc(1, sizeof *in);
    if (in == NULL)
        return NULL;
    in->max_line = max_line > 0 ? max_line : 1u << 20;
    in->last_port = -1;
    arena_init(&in->strings, 4096);
    return in;
}

/* ---- read buffers ------------------------------------------------------------ */

void input_text_retain(InputText *t)
{
    t->refs++;
}

void input_text_release(InputText *t)
{
    if (t != NULL && --t->refs == 0)
        free(t);
}

static void source_use_text(Source *s, InputText *t)
{
    s->text = t;
    s->buf = t->data;
    s->cap = t->cap;
}

/* A buffer of cap bytes no one else holds: a spare the handler let go of, or a new
 * one. NULL on allocation failure. */
static InputText *text_take(InputSet *in, size_t cap)
{
    for (size_t i = 0; i < in->n_spare; i++) {
        InputText *t = in->spare[i];
        if (t->refs == 1 && t->cap == cap) {
            in->spare[i] = in->spare[--in->n_spare];
            return t;
        }
    }
    InputText *t = malloc(sizeof *t + cap);
    if (t != NULL) {
        t->refs = 1;
        t->cap = cap;
    }
    return t;
}

/* A source's buffer that the handler still holds, kept as a spare if there is room
 * (making room by dropping a spare no one holds any more). */
static void text_retire(InputSet *in, InputText *t)
{
    for (size_t i = 0; in->n_spare == SPARE_TEXTS && i < SPARE_TEXTS; i++)
        if (in->spare[i]->refs == 1) {
            input_text_release(in->spare[i]);
            in->spare[i] = in->spare[--in->n_spare];
        }
    if (in->n_spare < SPARE_TEXTS)
        in->spare[in->n_spare++] = t;
    else
        input_text_release(t);
}

static void source_close(Source *s)
{
    if (s->owns_fd && s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    if (s->unix_path != NULL)
        unlink(s->unix_path);
    free(s->unix_path);
    s->unix_path = NULL;
    input_text_release(s->text);
    s->text = NULL;
    s->buf = NULL;
}

void input_set_free(InputSet *in)
{
    if (in == NULL)
        return;
    for (size_t i = 0; i < in->n_sources; i++) {
        source_close(in->sources[i]);
        free(in->sources[i]);
    }
    free(in->sources);
    free(in->pfds);
    free(in->polled);
    free(in->ended);
    for (size_t i = 0; i < in->n_spare; i++)
        input_text_release(in->spare[i]);
    arena_free(&in->strings);
    free(in);
}

/* A new source appended to the set (fd not yet owned); NULL on allocation failure. */
static Source *source_add(InputSet *in, SourceKind kind, int fd, const char *origin)
{
    if (in->n_sources == in->cap_sources) {
        size_t cap = in->cap_sources ? in->cap_sources * 2 : 8;
        Source **grown = realloc(in->sources, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        in->sources = grown;
        in->cap_sources = cap;
    }
    Source *s = calloc(1, sizeof *s);
    const char *name = arena_strdup(&in->strings, origin);
    if (s == NULL || name == NULL) {
        free(s);
        return NULL;
    }
    s->kind = kind;
    s->fd = fd;
    s->origin = name;
    s->port = -1;
    s->frame.max_line = in->max_line;
    in->sources[in->n_sources++] = s;
    if (kind == SRC_CONNECTION)
        in->n_connections++;
    return s;
}

/* ---- framing ----------------------------------------------------------------- */

static void deliver(const InputHandler *h, const Source *s, const char *text, size_t len)
{
    InputLine line = { text, len, s->origin, s->line_no, s->offset, s->text };
    h->line(h->user, &line);
}

static void reject(const InputHandler *h, const Source *s, const char *text, size_t len,
                   uint64_t offset, const char *reason)
{
    if (h->reject == NULL)
        return;
    InputLine line = { text, len, s->origin, s->line_no, offset, NULL };
    h->reject(h->user, &line, reason);
}

void input_overlong_reason(char *reason, size_t size, size_t max_line)
{
    snprintf(reason, size, "line longer than %zu bytes", max_line);
}

static void reject_overlong(InputSet *in, const InputHandler *h, const Source *s,
                            const char *text, size_t len)
{
    char reason[64];
    input_overlong_reason(reason, sizeof reason, in->max_line);
    reject(h, s, text, len < INPUT_OVERLONG_EXCERPT ? len : INPUT_OVERLONG_EXCERPT, s->offset,
           reason);
}

/* A stdin, file or FIFO closed before its end: the lines after that point are never
 * read (input_lost_lines). A client's connection is not counted: clients come and go. */
static void note_lost_lines(InputSet *in, const Source *s)
{
    if (s->kind != SRC_CONNECTION)
        in->lost_lines = true;
}

/* Puts the bytes [p, p + rest) of the source's buffer at the front of a buffer the
 * handler does not hold: the same one, or another if it keeps lines of this one. False
 * (the source is closed, the bytes rejected) when there is no memory for another. */
static bool keep_rest(InputSet *in, Source *s, const InputHandler *h, const char *p,
                      size_t rest)
{
    if (s->text->refs > 1) {
        InputText *t = text_take(in, s->cap);
        if (t == NULL) {
            log_error("input %s: out of memory; closing it", s->origin);
            reject(h, s, p, rest, s->offset, "out of memory");
            s->len = 0;
            s->finished = true;
            note_lost_lines(in, s);
            return false;
        }
        memcpy(t->data, p, rest);
        text_retire(in, s->text);
        source_use_text(s, t);
    } else if (p != s->buf && rest > 0) {
        memmove(s->buf, p, rest);
    }
    s->len = rest;
    return true;
}

/* Good lines gathered for input_poll_runs. */
typedef struct LineRun {
    const char *start;      /* the first line's text */
    uint64_t line_no, offset;   /* of the first line */
    size_t n;
    uint32_t ends[RUN_LINES];
} LineRun;

/* Hands the run gathered to in->runs. NULL if it took every line; else (it paused the
 * set) where the first line it did not take starts, the source's line count and
 * offset set back to that line. */
static char *run_flush(InputSet *in, Source *s, const InputHandler *h, LineRun *r)
{
    size_t n = r->n;
    if (n == 0)
        return NULL;
    r->n = 0;
    InputLines lines = { r->start, r->ends, n, s->origin, r->line_no, r->offset, s->text };
    size_t took = in->runs(h->user, &lines);
    if (took >= n)
        return NULL;
    size_t from = took ? r->ends[took - 1] + 1 : 0;
    s->line_no = r->line_no + took - 1;
    s->offset = r->offset + from;
    return (char *)r->start + from;
}

/* One good line [p, nl): into the run (flushed when full), or to h->line. NULL, or
 * where reading stopped (run_flush). */
static char *take_line(InputSet *in, Source *s, const InputHandler *h, LineRun *r,
                       const char *p, const char *nl)
{
    if (!in->runs || (size_t)(nl - p) > UINT32_MAX) {
        char *back = run_flush(in, s, h, r);
        if (back == NULL)
            deliver(h, s, p, (size_t)(nl - p));
        return back;
    }
    if (r->n && (size_t)(nl - r->start) > UINT32_MAX) {
        char *back = run_flush(in, s, h, r);
        if (back != NULL)
            return back;
    }
    if (r->n == 0) {
        r->start = p;
        r->line_no = s->line_no;
        r->offset = s->offset;
    }
    r->ends[r->n++] = (uint32_t)(nl - r->start);
    return r->n == RUN_LINES ? run_flush(in, s, h, r) : NULL;
}

/* Delivers every complete line in s->buf and keeps the unterminated rest at its front.
 * If the handler pauses the set (backpressure), the lines after that one stay in the
 * buffer, held, until input_poll runs unpaused: nothing more goes out meanwhile. */
static void frame_lines(InputSet *in, Source *s, const InputHandler *h)
{
    char *p = s->buf, *end = s->buf + s->len;
    char *scan = s->buf + s->scanned;
    LineRun run;
    run.n = 0;
    s->held = false;
    for (;;) {
        if (in->paused && p != end) {
            s->held = keep_rest(in, s, h, p, (size_t)(end - p));
            s->scanned = 0;
            return;
        }
        size_t len;
        InputFrameKind kind = input_frame_next(&s->frame, p, scan, end, &len);
        if (kind == INPUT_FRAME_NONE) {
            char *back = run_flush(in, s, h, &run);
            if (back == NULL)
                break;
            p = scan = back;
            continue;
        }
        if (kind != INPUT_FRAME_SKIP) {
            s->line_no++;
            bool overlong = kind == INPUT_FRAME_OVERLONG;
            char *back = overlong ? run_flush(in, s, h, &run)
                                  : take_line(in, s, h, &run, p, p + len);
            if (back != NULL) {
                p = scan = back;
                continue;
            }
            if (overlong)
                reject_overlong(in, h, s, p, len);
        }
        s->offset += len + 1;
        p = scan = p + len + 1;
    }
    size_t rest = (size_t)(end - p);
    InputFrameKind kind = input_frame_rest(&s->frame, rest);
    if (kind == INPUT_FRAME_OVERLONG) {
        s->line_no++;
        reject_overlong(in, h, s, p, rest);
    }
    if (kind != INPUT_FRAME_KEEP) {
        s->offset += rest;
        rest = 0;
    }
    if (keep_rest(in, s, h, p, rest))
        s->scanned = rest;
}

/* Makes room for a read: grows the buffer only when a partial line fills it. */
static bool ensure_room(InputSet *in, Source *s)
{
    if (s->buf != NULL && s->len < s->cap)
        return true;
    size_t initial = s->kind == SRC_CONNECTION ? SOCKET_BUFFER_INITIAL : FILE_BUFFER_INITIAL;
    size_t limit = in->max_line + 1 > initial ? in->max_line + 1 : initial;
    size_t cap = s->cap == 0 ? (initial < limit ? initial : limit) : s->cap * 2;
    if (cap > limit)
        cap = limit;
    if (s->text == NULL) {
        InputText *t = text_take(in, cap);
        if (t == NULL)
            return false;
        source_use_text(s, t);
        return true;
    }
    /* the handler never holds it here: keep_rest moved the partial line out of a held one */
    InputText *grown = realloc(s->text, sizeof *grown + cap);
    if (grown == NULL)
        return false;
    grown->cap = cap;
    source_use_text(s, grown);
    return true;
}

/* End of a stream or connection: the unterminated rest is a line (streams) or a
 * rejected fragment (connections). */
static void finish_reader(Source *s, const InputHandler *h, const char *reason)
{
    if (s->len > 0 && !s->frame.skipping) {
        s->line_no++;
        if (s->kind == SRC_STREAM && reason == NULL)
            deliver(h, s, s->buf, s->len);
        else
            reject(h, s, s->buf, s->len, s->offset,
                   reason != NULL ? reason : "connection closed mid-line");
        s->offset += s->len;
        s->len = 0;
    }
    s->finished = true;
}

/* A reader closed before its end. */
static void abandon_reader(InputSet *in, Source *s, const InputHandler *h, const char *reason)
{
    note_lost_lines(in, s);
    finish_reader(s, h, reason);
}

static void read_source(InputSet *in, Source *s, const InputHandler *h)
{
    if (!ensure_room(in, s)) {
        log_error("input %s: out of memory; closing it", s->origin);
        abandon_reader(in, s, h, "out of memory");
        return;
    }
    ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        log_error("input %s: read error: %s; closing it", s->origin, strerror(errno));
        abandon_reader(in, s, h, s->kind == SRC_CONNECTION ? "connection closed mid-line"
                                                           : "read error mid-line");
        return;
    }
    if (n == 0) {
        finish_reader(s, h, NULL);
        return;
    }
    if (s->regular)
        in->done_bytes += (uint64_t)n;
    s->len += (size_t)n;
    frame_lines(in, s, h);
}

/* ---- sources ----------------------------------------------------------------- */

static int add_stream(InputSet *in, const char *spec, char **err)
{
    bool is_stdin = strcmp(spec, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(spec, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err = format_heap("cannot open %s: %s", spec, strerror(errno));
        return -1;
    }
    struct stat st;
    int stat_errno = fstat(fd, &st) == 0 ? (S_ISDIR(st.st_mode) ? EISDIR : 0) : errno;
    if (stat_errno != 0) {
        if (!is_stdin)
            close(fd);
        *err = format_heap("cannot read %s: %s", spec, strerror(stat_errno));
        return -1;
    }
    Source *s = source_add(in, SRC_STREAM, fd, spec);
    if (s == NULL) {
        if (!is_stdin)
            close(fd);
        *err = format_heap("out of memory");
        return -1;
    }
    s->owns_fd = !is_stdin;
    if (S_ISREG(st.st_mode)) {
        s->regular = true;
        s->size = (uint64_t)st.st_size;
        in->total_bytes += s->size;
    }
    return 0;
}

static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

static int add_tcp_listener(InputSet *in, const char *spec, char **err)
{
    char host[256], port[8];
    HostPort hp;
    HostPortError bad = hostport_parse(spec + strlen("tcp://"), 0, 65535, &hp);
    if ((bad != HOSTPORT_OK && bad != HOSTPORT_BAD_PORT) || hp.host_len >= sizeof host) {
        *err = format_heap("%s: expected tcp://HOST:PORT", spec);
        return -1;
    }
    if (bad == HOSTPORT_BAD_PORT) {   /* 0 is allowed: any free port */
        *err = format_heap("%s: the port must be a number from 0 to 65535", spec);
        return -1;
    }
    memcpy(host, hp.host, hp.host_len);
    host[hp.host_len] = '\0';
    snprintf(port, sizeof port, "%u", hp.port);
    struct addrinfo hints = { 0 }, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        *err = format_heap("%s: cannot resolve: %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved_errno = 0;
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd < 0) {
            saved_errno = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
            saved_errno = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        *err = format_heap("%s: cannot listen: %s", spec, strerror(saved_errno));
        return -1;
    }
    Source *s = source_add(in, SRC_LISTENER, fd, spec);
    if (s == NULL) {
        close(fd);
        *err = format_heap("out of memory");
        return -1;
    }
    s->owns_fd = true;
    s->port = bound_port(fd);
    in->last_port = s->port;
    return 0;
}

/* Removes a leftover socket file nobody listens on; false (with *err) if the path is
 * in use or is not a socket. */
static bool remove_stale_socket(const char *spec, const struct sockaddr_un *addr, char **err)
{
    struct stat st;
    if (lstat(addr->sun_path, &st) != 0)
        return true;
    if (!S_ISSOCK(st.st_mode)) {
        *err = format_heap("%s: exists and is not a socket", spec);
        return false;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        bool live = connect(probe, (const struct sockaddr *)addr, sizeof *addr) == 0;
        close(probe);
        if (live) {
            *err = format_heap("%s: another process is listening on it", spec);
            return false;
        }
    }
    unlink(addr->sun_path);
    return true;
}

static int add_unix_listener(InputSet *in, const char *spec, char **err)
{
    const char *path = spec + strlen("unix:");
    struct sockaddr_un addr = { 0 };
    addr.sun_family = AF_UNIX;
    if (*path == '\0' || strlen(path) >= sizeof addr.sun_path) {
        *err = format_heap("%s: socket path empty or longer than %zu bytes", spec,
                           sizeof addr.sun_path - 1);
        return -1;
    }
    strcpy(addr.sun_path, path);
    if (!remove_stale_socket(spec, &addr, err))
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *err = format_heap("%s: socket: %s", spec, strerror(errno));
        return -1;
    }
    mode_t old_mask = umask(0177);
    int rc = bind(fd, (const struct sockaddr *)&addr, sizeof addr);
    int bind_errno = errno;
    umask(old_mask);
    if (rc != 0 || chmod(path, 0600) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        int e = rc != 0 ? bind_errno : errno;
        close(fd);
        if (rc == 0)
            unlink(path);
        *err = format_heap("%s: cannot listen: %s", spec, strerror(e));
        return -1;
    }
    char *owned_path = strdup(path);
    Source *s = owned_path != NULL ? source_add(in, SRC_LISTENER, fd, spec) : NULL;
    if (s == NULL) {
        free(owned_path);
        close(fd);
        unlink(path);
        *err = format_heap("out of memory");
        return -1;
    }
    s->owns_fd = true;
    s->unix_path = owned_path;
    s->is_unix = true;
    return 0;
}

int input_add(InputSet *in, const char *spec, char **err)
{
    *err = NULL;
    int rc;
    if (strncmp(spec, "tcp://", 6) == 0)
        rc = add_tcp_listener(in, spec, err);
    else if (strncmp(spec, "unix:", 5) == 0)
        rc = add_unix_listener(in, spec, err);
    else
        rc = add_stream(in, spec, err);
    return rc;
}

/* "tcp://1.2.3.4:5678" / "tcp://[::1]:5678" for a TCP client, "unix:PATH#N" for a Unix one. */
static void client_origin(const Source *listener, const struct sockaddr_storage *ss,
                          socklen_t len, char *out, size_t size)
{
    if (listener->is_unix) {
        snprintf(out, size, "%s#%lu", listener->origin, listener->clients);
        return;
    }
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo((const struct sockaddr *)ss, len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, size, "tcp://?#%lu", listener->clients);
        return;
    }
    snprintf(out, size, ss->ss_family == AF_INET6 ? "tcp://[%s]:%s" : "tcp://%s:%s",
             host, serv);
}

static void accept_clients(InputSet *in, Source *listener)
{
    for (int i = 0; i < ACCEPTS_PER_ROUND; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(listener->fd, (struct sockaddr *)&ss, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* The pending client stays in the backlog and the listener stays
                 * readable: stop polling it until a descriptor is freed, or we spin. */
                log_error("input %s: accept: %s; waiting for a connection to close",
                          listener->origin, strerror(errno));
                listener->out_of_fds = true;
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR
                       && errno != ECONNABORTED) {
                log_error("input %s: accept: %s", listener->origin, strerror(errno));
            }
            return;
        }
        listener->clients++;
        if (in->n_connections >= MAX_CONNECTIONS) {
            log_error("input %s: more than %d connections; closing the new one",
                      listener->origin, MAX_CONNECTIONS);
            close(fd);
            continue;
        }
        char origin[NI_MAXHOST + NI_MAXSERV + 32 + sizeof(((struct sockaddr_un *)0)->sun_path)];
        client_origin(listener, &ss, len, origin, sizeof origin);
        Source *s = source_add(in, SRC_CONNECTION, fd, origin);
        if (s == NULL) {
            log_error("input %s: out of memory; closing a new connection", listener->origin);
            close(fd);
            continue;
        }
        s->owns_fd = true;
    }
}

/* ---- the poll loop ----------------------------------------------------------- */

static bool ensure_pfds(InputSet *in, size_t n)
{
    if (n <= in->cap_pfds)
        return true;
    size_t cap = in->cap_pfds ? in->cap_pfds : 16;
    while (cap < n)
        cap *= 2;
    struct pollfd *pfds = realloc(in->pfds, cap * sizeof *pfds);
    if (pfds == NULL)
        return false;
    in->pfds = pfds;
    Source **polled = realloc(in->polled, cap * sizeof *polled);
    if (polled == NULL)
        return false;
    in->polled = polled;
    in->cap_pfds = cap;
    return true;
}

/* A finished stream's final position stays known for checkpoints. Without memory for
 * it, a later checkpoint simply omits the input (a restart then reads it again, and
 * the checkpoint's alert-file lengths keep the output right up to that point). */
static void remember_end(InputSet *in, const Source *s)
{
    if (in->n_ended == in->cap_ended) {
        size_t cap = in->cap_ended ? in->cap_ended * 2 : 4;
        InputPosition *grown = realloc(in->ended, cap * sizeof *grown);
        if (grown == NULL)
            return;
        in->ended = grown;
        in->cap_ended = cap;
    }
    in->ended[in->n_ended++] = (InputPosition){s->origin, s->offset, s->line_no, s->regular};
}

/* Drops finished sources, keeping the others in order. */
static void remove_finished(InputSet *in)
{
    size_t kept = 0;
    bool freed_fd = false;
    for (size_t i = 0; i < in->n_sources; i++) {
        Source *s = in->sources[i];
        if (s->finished) {
            if (s->kind == SRC_STREAM)
                remember_end(in, s);
            if (s->kind == SRC_CONNECTION)
                in->n_connections--;
            freed_fd |= s->owns_fd && s->fd >= 0;
            source_close(s);
            free(s);
        } else {
            in->sources[kept++] = s;
        }
    }
    in->n_sources = kept;
    for (size_t i = 0; freed_fd && i < in->n_sources; i++)
        in->sources[i]->out_of_fds = false;
}

/* Delivers the lines held back by a pause, source by source, until one pauses again.
 * True if any are still held. */
static bool deliver_held(InputSet *in, const InputHandler *h)
{
    bool left = false;
    for (size_t i = 0; i < in->n_sources; i++) {
        Source *s = in->sources[i];
        if (s->held && !in->paused)
            frame_lines(in, s, h);
        left |= s->held;
    }
    return left;
}

static int poll_sources(InputSet *in, int timeout_ms, const InputHandler *h)
{
    remove_finished(in);
    if (in->n_sources == 0)
        return 0;
    if (!in->paused && deliver_held(in, h))
        timeout_ms = 0;   /* paused again: poll only the listeners, don't wait */
    if (!ensure_pfds(in, in->n_sources)) {
        log_error("input: out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < in->n_sources; i++) {
        Source *s = in->sources[i];
        if (s->kind == SRC_LISTENER ? s->out_of_fds : in->paused || s->held)
            continue;
        in->pfds[n] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
        in->polled[n++] = s;
    }
    int ready = poll(in->pfds, (nfds_t)n, timeout_ms);
    if (ready < 0) {
        if (errno == EINTR)
            return 1;
        log_error("input: poll: %s", strerror(errno));
        return -1;
    }
    /* Accepting appends to in->sources; in->polled keeps this round's view stable. */
    for (size_t i = 0; i < n && ready > 0; i++) {
        if (in->pfds[i].revents == 0)
            continue;
        ready--;
        Source *s = in->polled[i];
        if (s->kind == SRC_LISTENER)
            accept_clients(in, s);
        else if (!in->paused && !s->held)
            read_source(in, s, h);     /* the handler may pause us mid-round */
    }
    remove_finished(in);
    return in->n_sources > 0 ? 1 : 0;
}

int input_poll(InputSet *in, int timeout_ms, const InputHandler *h)
{
    in->runs = NULL;
    return poll_sources(in, timeout_ms, h);
}

int input_poll_runs(InputSet *in, int timeout_ms, const InputHandler *h, InputLinesFn lines)
{
    in->runs = lines;
    int rc = poll_sources(in, timeout_ms, h);
    in->runs = NULL;
    return rc;
}

void input_pause(InputSet *in, bool paused)
{
    in->paused = paused;
}

void input_close_listeners(InputSet *in)
{
    for (size_t i = 0; i < in->n_sources; i++)
        if (in->sources[i]->kind == SRC_LISTENER)
            in->sources[i]->finished = true;
    remove_finished(in);
}

bool input_lost_lines(const InputSet *in)
{
    return in->lost_lines;
}

void input_progress(const InputSet *in, uint64_t *done, uint64_t *total)
{
    *done = in->done_bytes;
    *total = in->total_bytes;
}

void input_each_position(const InputSet *in, void (*fn)(void *user, const InputPosition *p),
                         void *user)
{
    for (size_t i = 0; i < in->n_ended; i++)
        fn(user, &in->ended[i]);
    for (size_t i = 0; i < in->n_sources; i++) {
        const Source *s = in->sources[i];
        if (s->kind == SRC_CONNECTION)
            continue;   /* its listener stands for it */
        InputPosition p = {s->origin, s->offset, s->line_no, s->regular};
        fn(user, &p);
    }
}

int input_resume(InputSet *in, const char *origin, uint64_t offset, uint64_t line_no,
                 char **err)
{
    for (size_t i = 0; i < in->n_sources; i++) {
        Source *s = in->sources[i];
        if (s->kind != SRC_STREAM || strcmp(s->origin, origin) != 0)
            continue;
        if (!s->regular) {
            *err = format_heap("%s is not a regular file: it cannot resume", origin);
            return -1;
        }
        if (offset > s->size) {
            *err = format_heap("%s has %llu bytes, fewer than the checkpointed offset %llu "
                               "(was it replaced or truncated?)", origin,
                               (unsigned long long)s->size, (unsigned long long)offset);
            return -1;
        }
        if (lseek(s->fd, (off_t)offset, SEEK_SET) < 0) {
            *err = format_heap("cannot seek in %s: %s", origin, strerror(errno));
            return -1;
        }
        s->offset = offset;
        s->line_no = line_no;
        s->len = s->scanned = 0;
        in->done_bytes += offset;
        return 0;
    }
    *err = format_heap("%s is not a file input of this run", origin);
    return -1;
}

int input_bound_port(const InputSet *in)
{
    return in->last_port;
}
