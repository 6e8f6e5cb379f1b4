/* cli/watch.h — `vigil run --watch`: notices changes to the rule files.
 *
 * Owns: an inotify descriptor and one watch per folder holding rule files. Folders
 * are watched, not files: an editor that writes a temp file and renames it over the
 * rule file replaces the inode, and a watch on the old inode goes silent for good.
 * Changes are debounced: a reload is due WATCH_SETTLE_MS after the last relevant
 * event, so a file still being written is not compiled half-way (and a reload that
 * still fails is simply retried at the next change). Every WATCH_RECHECK_MS the
 * folders' paths are checked: a folder removed, replaced, or reached through a symlink
 * that now points elsewhere (a deploy) is watched anew and a reload is due. */
#ifndef VIGIL_CLI_WATCH_H
#define VIGIL_CLI_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WATCH_SETTLE_MS 200

typedef struct RuleWatch RuleWatch;

/* Watches the FILE|DIR arguments of `run`: a DIR for any *.cep in it, a FILE by name
 * in its folder. NULL with *err (heap) on failure. */
RuleWatch *watch_new(const char *const *paths, size_t n_paths, char **err);
/* Reads what happened without blocking; true once per burst of changes, when it has
 * settled. */
bool watch_due(RuleWatch *w, int64_t now_ms);
void watch_free(RuleWatch *w);

#endif
