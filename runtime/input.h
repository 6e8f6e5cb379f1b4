/* runtime/input.h — line-framed event sources: stdin, files, and tcp/unix listeners.
 *
 * Owns: open descriptors, listening sockets, each source's read buffer (reference-
 * counted: the line handler may keep a line where it lies, InputText below).
 * One poll loop serves every source; each connection is framed into lines on its own
 * (partial lines across reads are joined). Over-long lines and the unterminated
 * fragment of a client that disconnects are rejected with a reason, never passed on.
 * TCP binds only the address it is given; Unix sockets are created mode 0600.
 * Reading can be paused (backpressure): paused sockets are simply not read, so TCP
 * flow control pushes back on the senders. */
#ifndef VIGIL_RUNTIME_INPUT_H
#define VIGIL_RUNTIME_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A source's read buffer. The line handler may keep a line's text past the callback
 * by taking a reference to the buffer it lies in (input_text_retain) and dropping it
 * when done (input_text_release, which frees the buffer after the last one, even after
 * input_set_free): the source then reads on into another buffer and never writes this
 * one while it is held. References are counted without atomics: take and drop them on
 * the thread that polls. */
typedef struct InputText InputText;
void input_text_retain(InputText *t);
void input_text_release(InputText *t);   /* NULL: nothing */

typedef struct InputLine {
    const char *text;      /* without the newline (a trailing \r is kept); valid during the callback */
    size_t len;
    const char *origin;    /* "-", a file path, or "tcp://1.2.3.4:5678" / "unix:PATH#3" per client */
    uint64_t line_no;      /* 1-based line number within that origin */
    uint64_t offset;       /* byte offset of the line within its origin */
    InputText *keep;       /* the buffer text lies in (to keep it longer), or NULL */
} InputLine;

typedef struct InputHandler {
    void (*line)(void *user, const InputLine *line);
    void (*reject)(void *user, const InputLine *line, const char *reason);
    void *user;
} InputHandler;

/* A run of good lines of one read, from one source, consecutive: line i is
 * text[start_i, ends[i]), where start_0 is 0 and start_i is ends[i - 1] + 1 (past
 * the newline). Valid during the callback, like InputLine. */
typedef struct InputLines {
    const char *text;      /* the first line's first byte */
    const uint32_t *ends;  /* n offsets from text, one per line: where it ends */
    size_t n;
    const char *origin;
    uint64_t line_no;      /* of the first line; line i is line_no + i */
    uint64_t offset;       /* of the first line in its origin */
    InputText *keep;       /* the buffer text lies in, as InputLine.keep */
} InputLines;

/* Line i of a run: its text, its length in *len. */
static inline const char *input_lines_at(const InputLines *l, size_t i, size_t *len)
{
    size_t start = i ? (size_t)l->ends[i - 1] + 1 : 0;
    *len = l->ends[i] - start;
    return l->text + start;
}

/* Takes a run of lines at once; returns how many it took, from the first: fewer than
 * n only if it paused the set, and the rest are then held like the lines after a
 * pause from InputHandler.line. */
typedef size_t (*InputLinesFn)(void *user, const InputLines *lines);

/* An over-long line is rejected with its first INPUT_OVERLONG_EXCERPT bytes and this
 * reason ("line longer than MAX bytes"), written into reason[0..size). */
#define INPUT_OVERLONG_EXCERPT 1024
void input_overlong_reason(char *reason, size_t size, size_t max_line);

/* ---- framing -----------------------------------------------------------------
 * The one line framer of the input layer and of the workers reading a file
 * themselves (runtime/engine.c), so that both cut a stream the same way: a line ends
 * at a newline; a line over max_line bytes is over-long: rejected once, as soon as it
 * is known to be too long (at its newline, or when the unterminated rest of a read
 * already passes max_line), the rest of it then skipped as it arrives, up to its
 * newline. The caller keeps the bytes, line numbers and offsets; these only decide
 * what each piece is. Inline: called per line on the hot path. */
typedef struct InputFramer {
    size_t max_line;
    bool skipping;         /* in an over-long line rejected already: dropping its rest */
} InputFramer;

typedef enum InputFrameKind {
    INPUT_FRAME_LINE,      /* a line of at most max_line bytes */
    INPUT_FRAME_OVERLONG,  /* a line of more than max_line bytes: reject it */
    INPUT_FRAME_SKIP,      /* the end of an over-long line rejected before: no line */
    INPUT_FRAME_NONE,      /* (input_frame_next) no newline: see input_frame_rest */
    INPUT_FRAME_KEEP,      /* (input_frame_rest) a partial line: keep it for the next read */
} InputFrameKind;

/* The piece [p, p + *len) that a newline ends (the next starts past it), searched from
 * scan on (p <= scan <= end; [p, scan) is known to hold no newline); NONE if there is
 * none before end (nothing changed then). */
static inline InputFrameKind input_frame_next(InputFramer *f, const char *p, const char *scan,
                                              const char *end, size_t *len)
{
    const char *nl = memchr(scan, '\n', (size_t)(end - scan));
    if (nl == NULL)
        return INPUT_FRAME_NONE;
    *len = (size_t)(nl - p);
    if (f->skipping) {
        f->skipping = false;   /* the over-long line ends here */
        return INPUT_FRAME_SKIP;
    }
    return *len > f->max_line ? INPUT_FRAME_OVERLONG : INPUT_FRAME_LINE;
}

/* What the rest of a read, len bytes without a newline, is: SKIP (more of an over-long
 * line: drop it), OVERLONG (too long already: reject it now; its rest is skipped as it
 * comes), or KEEP (empty or not: keep it for the next read, or at the end of the
 * input, if not empty, it is the last line). */
static inline InputFrameKind input_frame_rest(InputFramer *f, size_t len)
{
    if (f->skipping)
        return INPUT_FRAME_SKIP;
    if (len > f->max_line) {
        f->skipping = true;
        return INPUT_FRAME_OVERLONG;
    }
    return INPUT_FRAME_KEEP;
}

typedef struct InputSet InputSet;

InputSet *input_set_new(size_t max_line);
void input_set_free(InputSet *in);
/* Adds "-", a file path, "tcp://HOST:PORT" (port 0: any free one) or "unix:PATH". -1
 * with *err (heap) on failure: a message that names spec, or "out of memory". */
int input_add(InputSet *in, const char *spec, char **err);
/* Waits at most timeout_ms (-1: forever) for input and delivers every complete line
 * read. Returns 1 while any source may still produce lines, 0 once all are finished
 * (files and stdin at EOF; listeners never finish until input_close_listeners), -1 on
 * a fatal error (reported on stderr). */
int input_poll(InputSet *in, int timeout_ms, const InputHandler *h);
/* input_poll delivering the good lines in runs to `lines`, a call per run rather than
 * per line; refused lines still go to h->reject in their place, and h->line takes
 * only the lines that end no run (the unterminated last line of a stream). */
int input_poll_runs(InputSet *in, int timeout_ms, const InputHandler *h, InputLinesFn lines);
/* While paused nothing is read (sockets push back through flow control, files and
 * stdin wait); a pause from inside the line handler also holds the rest of the read
 * being delivered in its buffer, delivered first once input_poll runs unpaused. */
void input_pause(InputSet *in, bool paused);
/* Stops accepting; open connections are read to their end. */
void input_close_listeners(InputSet *in);
/* True once stdin, a file or a FIFO was closed before its end (a read error, or no
 * memory for its buffer): the lines after that point were never read. A client's
 * connection that breaks is not counted: clients come and go. */
bool input_lost_lines(const InputSet *in);
/* Total bytes and size of the regular-file inputs, for a progress line. */
void input_progress(const InputSet *in, uint64_t *done, uint64_t *total);
/* Where an input is: the next byte and line to read. Inputs that reached their end
 * are still reported. resumable: a regular file, which a later run can reopen at
 * `offset`; stdin and listeners (their spec as origin) never are. */
typedef struct InputPosition {
    const char *origin;    /* the spec it was added with; valid while the set lives */
    uint64_t offset, line_no;
    bool resumable;
} InputPosition;
/* Calls fn for every input (stdin, files, listeners; not each client), ended ones
 * first. Call between polls: then every line before `offset` has been delivered. */
void input_each_position(const InputSet *in, void (*fn)(void *user, const InputPosition *p),
                         void *user);
/* Continues the file input added as `origin` at byte `offset`, counting lines from
 * line_no. -1 with *err (heap) if there is no such file input, it cannot seek, or it
 * is now shorter than offset (it was replaced or truncated). */
int input_resume(InputSet *in, const char *origin, uint64_t offset, uint64_t line_no,
                 char **err);
/* The port the most recently added tcp:// listener is bound to (useful with port 0),
 * or -1 if there is none. */
int input_bound_port(const InputSet *in);

#endif
