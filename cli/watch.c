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

/* How often the watched folders' paths are checked against the folders watched. */
#define WATCH_RECHECK_MS 500

typedef struct Watched {
    int wd;                /* -1 while the folder is missing */
    char *dir;             /* the folder's path as given; heap */
    char *name;            /* the one file of interest in that folder, or NULL: any *.cep */
    dev_t dev;             /* the folder the watch is on (its path may later name another) */
    ino_t ino;
} Watched;

struct RuleWatch {
    int fd;
    Watched *items;        /* heap, owned; one per argument */
    size_t n;
    int64_t due_ms;        /* INT64_MAX: nothing pending */
    int64_t recheck_ms;    /* next time the folders' paths are checked */
};

static char *fail_with(const char *what, const char *path)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%s %s: %s", what, path, strerror(errno));
    return b.failed ? NULL : buf_steal(&b);
}

/* (Re)starts the watch of it->dir, noting which folder it is on. 0, or -1 with
 * errno (the folder is then marked missing). */
static int watch_folder(RuleWatch *w, Watched *it)
{
    struct stat st;
    it->wd = -1;
    it->dev = 0;
    it->ino = 0;
    if (stat(it->dir, &st) < 0)
        return -1;
    it->wd = inotify_add_watch(w->fd, it->dir, WATCH_MASK);
    if (it->wd < 0)
        return -1;
    it->dev = st.st_dev;
    it->ino = st.st_ino;
    return 0;
}

/* A folder removed, or its path now naming another folder (a deploy that swaps a
 * symlink or renames a new folder into place): the old watch would go silent for
 * good, so watch what the path names now, and reload. */
static bool folders_moved(RuleWatch *w)
{
    bool moved = false;
    for (size_t i = 0; i < w->n; i++) {
        Watched *it = &w->items[i];
        struct stat st;
        bool exists = stat(it->dir, &st) == 0;
        if (exists && it->wd >= 0 && st.st_dev == it->dev && st.st_ino == it->ino)
            continue;
        if (!exists && it->wd < 0)
            continue;   /* still missing */
        if (it->wd >= 0)
            inotify_rm_watch(w->fd, it->wd);   /* EINVAL if the folder is gone: fine */
        watch_folder(w, it);
        moved = true;
    }
    return moved;
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
    it->dir = buf_steal(&dir);
    if (!it->dir || watch_folder(w, it) < 0) {
        *err = it->dir ? fail_with("cannot watch", it->dir) : NULL;
        free(it->dir);
        free(it->name);
        return -1;
    }
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
    if (now_ms >= w->recheck_ms) {
        w->recheck_ms = now_ms + WATCH_RECHECK_MS;
        if (folders_moved(w))
            w->due_ms = now_ms + WATCH_SETTLE_MS;
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
    for (size_t i = 0; i < w->n; i++) {
        free(w->items[i].dir);
        free(w->items[i].name);
    }
    free(w->items);
    if (w->fd >= 0)
        close(w->fd);
    free(w);
}
