/* cli/watch.c — rule-file change detection with inotify (see watch.h). */
#include "cli/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)

typedef struct Watched {
    int wd;
    char *name;            /* the one file of interest in that folder, or NULL: any *.cep */
} Watched;

struct RuleWatch {
    int fd;
    Watched *items;        /* heap, owned; one per argument */
    size_t n;
    int64_t due_ms;        /* INT64_MAX: nothing pending */
};

static char *fail_with(const char *what, const char *path)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%s %s: %s", what, path, strerror(errno));
    return b.failed ? NULL : buf_steal(&b);
}

/* Splits a FILE argument into its folder and name; a DIR stays whole. */
static int watch_one(RuleWatch *w, const char *path, char **err)
{
    struct stat st;
    bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    Buf dir = BUF_INIT;
    const char *slash = strrchr(path, '/');
    const char *name = NULL;
    if (is_dir) {
        buf_puts(&dir, path);
    } else {
        name = slash ? slash + 1 : path;
        if (slash)
            buf_append(&dir, path, (size_t)(slash - path) + (slash == path));
        else
            buf_puts(&dir, ".");
    }
    Watched *it = &w->items[w->n];
    it->name = name ? strdup(name) : NULL;
    if (dir.failed || (name && !it->name)) {
        buf_free(&dir);
        free(it->name);
        *err = NULL;
        return -1;
    }
    it->wd = inotify_add_watch(w->fd, dir.data, WATCH_MASK);
    if (it->wd < 0) {
        *err = fail_with("cannot watch", dir.data);
        buf_free(&dir);
        free(it->name);
        return -1;
    }
    buf_free(&dir);
    w->n++;
    return 0;
}

RuleWatch *watch_new(const char *const *paths, size_t n_paths, char **err)
{
    *err = NULL;
    RuleWatch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->due_ms = INT64_MAX;
    w->items = calloc(n_paths ? n_paths : 1, sizeof *w->items);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (!w->items || w->fd < 0) {
        if (w->fd < 0)
            *err = fail_with("cannot start watching", "the rule files");
        watch_free(w);
        return NULL;
    }
    for (size_t i = 0; i < n_paths; i++)
        if (watch_one(w, paths[i], err) < 0) {
            watch_free(w);
            return NULL;
        }
    return w;
}

static bool ends_with_cep(const char *name)
{
    size_t len = strlen(name);
    return len > 4 && !strcmp(name + len - 4, ".cep");
}

static bool relevant(const RuleWatch *w, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW)
        return true;   /* events were lost: assume the worst */
    if (!ev->len)
        return false;
    for (size_t i = 0; i < w->n; i++) {
        if (w->items[i].wd != ev->wd)
            continue;
        if (w->items[i].name ? !strcmp(w->items[i].name, ev->name) : ends_with_cep(ev->name))
            return true;
    }
    return false;
}

bool watch_due(RuleWatch *w, int64_t now_ms)
{
    /* aligned as the kernel's records need */
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t got;
    while ((got = read(w->fd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + got;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (relevant(w, ev))
                w->due_ms = now_ms + WATCH_SETTLE_MS;
            p += sizeof *ev + ev->len;
        }
    }
    if (w->due_ms == INT64_MAX || now_ms < w->due_ms)
        return false;
    w->due_ms = INT64_MAX;
    return true;
}

void watch_free(RuleWatch *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        free(w->items[i].name);
    free(w->items);
    if (w->fd >= 0)
        close(w->fd);
    free(w);
}
