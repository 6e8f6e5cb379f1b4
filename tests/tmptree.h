/* tests/tmptree.h — a test's scratch folder under /tmp: made afresh, files written in it,
 * removed with all it holds. What goes wrong (a folder that cannot be made, a write
 * that fails) fails the running test. Call these from tests only. */
#ifndef VIGIL_TESTS_TMPTREE_H
#define VIGIL_TESTS_TMPTREE_H

#include <stddef.h>

/* A fresh folder /tmp/vigil-NAME-XXXXXX, its path into dir (`size` bytes). */
void tmptree_make(char *dir, size_t size, const char *name);

/* DIR/NAME into path (`size` bytes); returns path. */
char *tmptree_path(char *path, size_t size, const char *dir, const char *name);

/* The file at path made to hold text (created, or emptied first). */
void tmptree_write(const char *path, const char *text);

/* tmptree_write of DIR/NAME. */
void tmptree_write_in(const char *dir, const char *name, const char *text);

/* dir and everything in it gone. */
void tmptree_remove(const char *dir);

#endif
