/* alerts/out_net.c — `tcp "HOST:PORT"` and `unix "PATH"` outputs: clients that stream
 * alert JSON lines to a listener.
 *
 * Owns: per output a background thread, the connection, and a bounded FIFO of lines
 * (cfg->net_buffer). The engine thread only appends to the FIFO. The thread connects
 * lazily (at the first alert), sends in batches, and on any error closes the socket,
 * keeps the unsent lines and reconnects with exponential backoff (100 ms doubling to
 * 5 s). When the FIFO is full the new alert is dropped: counted and logged with a rate
 * limit, never silently. Delivery is at least once: a line cut off by a broken
 * connection is sent again in full on the next one. flush waits (bounded) until the
 * FIFO is empty, retrying a down connection at once. */
#include "alerts/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "dsl/check.h"

#define NET_BACKOFF_MIN_MS 100
#define NET_BACKOFF_MAX_MS 5000
#define NET_CONNECT_TIMEOUT_MS 3000
#define NET_SEND_TIMEOUT_MS 5000
#define NET_BATCH 256

typedef enum { NET_IDLE, NET_CONNECTING, NET_CONNECTED, NET_DOWN } NetState;

typedef struct NetLine {
    char *data;              /* line + "\n"; heap */
    size_t len;
} NetLine;

typedef struct NetOutput {
    Output base;
    OutConfig cfg;          /* a copy: the output may outlive its router */
    bool is_unix;
    char *host, *port;       /* tcp; heap */
    struct sockaddr_un sun;  /* unix */

    pthread_mutex_t mu;      /* guards the FIFO, counters and flags */
    pthread_cond_t wake;     /* to the thread: lines arrived, flush, or stop */
    pthread_cond_t idle;     /* to flushers: lines were sent */
    NetLine *ring;           /* cfg->net_buffer slots */
    size_t cap, head, count;
    bool stop, kick;
    bool finished;           /* net_finish ran (engine thread only) */
    NetState state;
    bool outage;             /* from a failure until the next successful connect */
    uint64_t sent, dropped, dropped_at_flush;
    uint64_t failed;         /* always 0: lines are kept until sent or dropped */
    OutDropLog drops;
    pthread_t thread;

    int fd;                  /* thread-private */
    int64_t backoff_ms;      /* thread-private */
    bool down_logged;        /* thread-private: the current outage was reported */
} NetOutput;

/* ---- the engine side ------------------------------------------------------ */

static int net_write(Output *o, const AlertMeta *m, const char *line, size_t len)
{
    NetOutput *no = (NetOutput *)o;
    (void)m;
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, line, len);
        copy[len] = '\n';
    }
    pthread_mutex_lock(&no->mu);
    if (!copy || no->count == no->cap) {
        no->dropped++;
        out_drop_note(&no->cfg, &no->drops, o->name,
                      copy ? "the buffer of alerts waiting for the connection is full"
                           : "out of memory");
        pthread_mutex_unlock(&no->mu);
        free(copy);
        return -1;
    }
    no->ring[(no->head + no->count) % no->cap] = (NetLine){copy, len + 1};
    no->count++;
    pthread_cond_signal(&no->wake);
    pthread_mutex_unlock(&no->mu);
    return 0;
}

static int net_flush(Output *o, int64_t timeout_ms)
{
    NetOutput *no = (NetOutput *)o;
    int64_t deadline = clock_monotonic_ms() + timeout_ms;
    pthread_mutex_lock(&no->mu);
    no->kick = true;
    pthread_cond_signal(&no->wake);
    while (no->count && clock_monotonic_ms() < deadline)
        out_cond_wait_until(&no->idle, &no->mu, deadline);
    int rc = (no->count || no->dropped != no->dropped_at_flush) ? -1 : 0;
    no->dropped_at_flush = no->dropped;
    pthread_mutex_unlock(&no->mu);
    return rc;
}

static const char *net_state_name(NetState s)
{
    switch (s) {
    case NET_IDLE: return "idle";
    case NET_CONNECTING: return "connecting";
    case NET_CONNECTED: return "connected";
    case NET_DOWN: return "down";
    }
    return "?";
}

static void net_stats(Output *o, OutStats *st)
{
    NetOutput *no = (NetOutput *)o;
    pthread_mutex_lock(&no->mu);
    st->sent = no->sent;
    st->failed = no->failed;
    st->dropped = no->dropped;
    st->buffered = no->count;
    st->healthy = !no->outage;
    st->state = net_state_name(no->state);
    pthread_mutex_unlock(&no->mu);
}

/* ---- the connection thread ------------------------------------------------ */

/* Waits for a non-blocking connect to finish. 0, or -1 with errno. */
static int net_connect_wait(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r;
    do
        r = poll(&p, 1, NET_CONNECT_TIMEOUT_MS);
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return -1;
    if (soerr) {
        errno = soerr;
        return -1;
    }
    return 0;
}

/* A connected socket, blocking with a send timeout; -1 with errno (or *gai_err). */
static int net_connect_addr(const struct sockaddr *sa, socklen_t sl, int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, sl) < 0 && (errno != EINPROGRESS || net_connect_wait(fd) < 0)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    struct timeval tv = {NET_SEND_TIMEOUT_MS / 1000, (NET_SEND_TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static int net_connect(NetOutput *no, char *why, size_t why_len)
{
    if (no->is_unix) {
        int fd = net_connect_addr((const struct sockaddr *)&no->sun, sizeof no->sun, AF_UNIX);
        if (fd < 0)
            snprintf(why, why_len, "%s", strerror(errno));
        return fd;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(no->host, no->port, &hints, &res);
    if (g != 0) {
        snprintf(why, why_len, "%s", gai_strerror(g));
        return -1;
    }
    int fd = -1;
    snprintf(why, why_len, "no address");
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = net_connect_addr(a->ai_addr, a->ai_addrlen, a->ai_family);
        if (fd < 0)
            snprintf(why, why_len, "%s", strerror(errno));
    }
    freeaddrinfo(res);
    return fd;
}

/* A peer that closed its side shows as readable with EOF: notice it before sending
 * into a dead connection. Anything the listener sends us is discarded. */
static bool net_peer_closed(int fd)
{
    char junk[256];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 0) > 0) {
        if (p.revents & (POLLERR | POLLHUP))
            return true;
        ssize_t r = recv(fd, junk, sizeof junk, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
            return true;
        if (r < 0)
            return false;
    }
    return false;
}

static int net_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void net_set_state(NetOutput *no, NetState s)
{
    pthread_mutex_lock(&no->mu);
    no->state = s;
    if (s == NET_DOWN)
        no->outage = true;
    else if (s == NET_CONNECTED)
        no->outage = false;
    pthread_mutex_unlock(&no->mu);
}

static const char *net_target(const NetOutput *no, char *buf, size_t n)
{
    if (no->is_unix)
        snprintf(buf, n, "unix:%s", no->sun.sun_path);
    else
        snprintf(buf, n, "tcp:%s:%s", no->host, no->port);
    return buf;
}

static void net_went_down(NetOutput *no, const char *why)
{
    char t[160];
    if (no->fd >= 0)
        close(no->fd);
    no->fd = -1;
    net_set_state(no, NET_DOWN);
    if (!no->down_logged)
        out_log(&no->cfg, "output %s: %s: %s (alerts are buffered, retrying)", no->base.name,
                net_target(no, t, sizeof t), why);
    no->down_logged = true;
}

/* Sleeps the backoff (a flush or stop cuts it short), then doubles it. Locked. */
static void net_backoff(NetOutput *no)
{
    int64_t until = clock_monotonic_ms() + no->backoff_ms;
    while (!no->stop && !no->kick && clock_monotonic_ms() < until)
        out_cond_wait_until(&no->wake, &no->mu, until);
    no->kick = false;
    no->backoff_ms = no->backoff_ms * 2 > NET_BACKOFF_MAX_MS ? NET_BACKOFF_MAX_MS
                                                            : no->backoff_ms * 2;
}

/* Sends the lines at the front of the FIFO. Unlocked; the producer only appends, so
 * the front lines stay put while we send them. */
static bool net_send_front(NetOutput *no, size_t n)
{
    Buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        const NetLine *l = &no->ring[(no->head + i) % no->cap];
        buf_append(&b, l->data, l->len);
    }
    bool oom = b.failed;
    bool ok = !oom && net_send_all(no->fd, b.data, b.len) == 0;
    int err = errno;
    buf_free(&b);
    if (!ok)
        net_went_down(no, oom ? "out of memory" : strerror(err));
    return ok;
}

static void net_pop(NetOutput *no, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(no->ring[no->head].data);
        no->ring[no->head].data = NULL;
        no->head = (no->head + 1) % no->cap;
    }
    no->count -= n;
    no->sent += n;
    pthread_cond_broadcast(&no->idle);
}

static void *net_worker(void *arg)
{
    NetOutput *no = arg;
    char why[256];
    pthread_mutex_lock(&no->mu);
    for (;;) {
        while (!no->stop && no->count == 0)
            pthread_cond_wait(&no->wake, &no->mu);
        if (no->stop)
            break;
        size_t n = no->count < NET_BATCH ? no->count : NET_BATCH;
        pthread_mutex_unlock(&no->mu);
        if (no->fd >= 0 && net_peer_closed(no->fd))
            net_went_down(no, "connection closed by the listener");
        if (no->fd < 0) {
            net_set_state(no, NET_CONNECTING);
            no->fd = net_connect(no, why, sizeof why);
            if (no->fd < 0) {
                net_went_down(no, why);
                pthread_mutex_lock(&no->mu);
                net_backoff(no);
                continue;
            }
            char t[160];
            if (no->down_logged)
                out_log(&no->cfg, "output %s: connected to %s", no->base.name,
                        net_target(no, t, sizeof t));
            no->down_logged = false;
            no->backoff_ms = NET_BACKOFF_MIN_MS;
            net_set_state(no, NET_CONNECTED);
        }
        bool ok = net_send_front(no, n);
        pthread_mutex_lock(&no->mu);
        if (ok)
            net_pop(no, n);
        else
            net_backoff(no);
    }
    pthread_mutex_unlock(&no->mu);
    return NULL;
}

/* ---- lifetime ------------------------------------------------------------- */

/* The ring holds no line here: a failed constructor never filled it, and net_finish
 * empties it before net_destroy comes. */
static void net_free_parts(NetOutput *no)
{
    free(no->ring);
    free(no->host);
    free(no->port);
    free(no->base.name_owned);
    free(no);
}

/* Stops the thread; what the buffer still holds is dropped, counted and logged. */
static void net_finish(Output *o)
{
    NetOutput *no = (NetOutput *)o;
    if (no->finished)
        return;
    no->finished = true;
    pthread_mutex_lock(&no->mu);
    no->stop = true;
    pthread_cond_signal(&no->wake);
    pthread_mutex_unlock(&no->mu);
    pthread_join(no->thread, NULL);
    if (no->fd >= 0)
        close(no->fd);
    no->fd = -1;
    pthread_mutex_lock(&no->mu);
    for (size_t i = 0; i < no->count; i++)
        free(no->ring[(no->head + i) % no->cap].data);
    no->dropped += no->count;
    no->drops.pending += no->count;
    no->count = 0;
    out_drop_final(&no->cfg, &no->drops, o->name, "not delivered before shutdown");
    pthread_mutex_unlock(&no->mu);
}

static void net_destroy(Output *o)
{
    NetOutput *no = (NetOutput *)o;
    net_finish(o);
    pthread_cond_destroy(&no->wake);
    pthread_cond_destroy(&no->idle);
    pthread_mutex_destroy(&no->mu);
    net_free_parts(no);
}

static const OutputOps net_ops = {net_write, net_flush, NULL, net_stats, net_destroy, NULL,
                                  net_finish};

/* Splits "HOST:PORT" or "[V6]:PORT" as `vigil check` does, so a port out of range
 * is refused, not wrapped to another port by getaddrinfo. */
static int net_parse_hostport(NetOutput *no, const char *s, const char *where, char **err)
{
    NetAddress addr;
    const char *why = dsl_parse_host_port(s, &addr);
    if (why) {
        *err = buf_format("%soutput '%s': %s, got \"%s\"", where, no->base.name, why, s);
        return -1;
    }
    no->host = strndup(addr.host, addr.host_len);
    no->port = buf_format("%u", addr.port);
    if (!no->host || !no->port) {
        *err = buf_format("out of memory");
        return -1;
    }
    return 0;
}

static int net_parse_target(NetOutput *no, const OutputDecl *d, char **err)
{
    OutTemplate t;
    char *what = buf_format("output '%s' address", d->name);
    if (!what) {
        *err = buf_format("out of memory");
        return -1;
    }
    int rc = out_template_compile(&d->path, OV_BIT(OV_TEXT), what, &t, err);
    free(what);
    if (rc < 0)
        return -1;
    Buf b = BUF_INIT;
    out_template_render(&t, &(AlertMeta){0}, &b);
    out_template_free(&t);
    char *where = out_span_prefix(d->path.span);
    if (b.failed || !where) {
        *err = buf_format("out of memory");
        rc = -1;
    } else if (no->is_unix) {
        if (b.len == 0 || b.len >= sizeof no->sun.sun_path) {
            *err = buf_format("%soutput '%s': a unix socket path must be 1 to %zu bytes",
                            where, d->name, sizeof no->sun.sun_path - 1);
            rc = -1;
        } else {
            no->sun.sun_family = AF_UNIX;
            memcpy(no->sun.sun_path, b.data, b.len + 1);
        }
    } else {
        rc = net_parse_hostport(no, b.data, where, err);
    }
    free(where);
    buf_free(&b);
    return rc;
}

Output *out_net_new(const OutputDecl *d, const OutConfig *cfg, char **err)
{
    NetOutput *no = calloc(1, sizeof *no);
    if (!no) {
        *err = buf_format("out of memory");
        return NULL;
    }
    no->base.ops = &net_ops;
    no->base.name = no->base.name_owned = strdup(d->name);
    no->is_unix = d->kind == OUT_UNIX;
    no->base.kind = no->is_unix ? "unix" : "tcp";
    no->cfg = *cfg;
    no->fd = -1;
    no->backoff_ms = NET_BACKOFF_MIN_MS;
    no->cap = cfg->net_buffer ? cfg->net_buffer : 1;
    if (!no->base.name) {
        *err = buf_format("out of memory");
        net_free_parts(no);
        return NULL;
    }
    if (net_parse_target(no, d, err) < 0) {
        net_free_parts(no);
        return NULL;
    }
    no->ring = calloc(no->cap, sizeof *no->ring);
    if (!no->ring || pthread_mutex_init(&no->mu, NULL) != 0) {
        *err = buf_format("out of memory");
        net_free_parts(no);
        return NULL;
    }
    if (out_cond_init(&no->wake) < 0 || out_cond_init(&no->idle) < 0 ||
        pthread_create(&no->thread, NULL, net_worker, no) != 0) {
        *err = buf_format("output '%s': cannot start its thread", d->name);
        pthread_mutex_destroy(&no->mu);
        net_free_parts(no);
        return NULL;
    }
    return &no->base;
}
