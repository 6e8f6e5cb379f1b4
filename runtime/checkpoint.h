/* runtime/checkpoint.h — checkpoint files of `vigil run --state DIR`.
 *
 * Owns: the state folder (created if missing, locked with flock so that two vigils
 * never share one), the on-disk framing of a checkpoint, and the sections that are not
 * engine internals: input positions and the lengths of the files vigil appends to.
 *
 * File layout (little endian), DIR/checkpoint.0 and DIR/checkpoint.1 alternately:
 *     "VIGILCKP"  u32 version  u32 0  u64 sequence  i64 written (ms, wall clock)
 *     u64 body length  u64 checksum   body
 * The checksum is FNV-1a 64 (base/hash.h) over the first 40 header bytes and the body.
 * A checkpoint is written to DIR/checkpoint.tmp, fsync-ed, renamed over the older of
 * the two slots, and the folder is fsync-ed: a crash leaves the previous checkpoint
 * intact. Loading takes the newest slot that is whole, has a version it reads and a good
 * checksum, and says why it skipped the other (torn, corrupt, other version).
 *
 * Versions: a checkpoint of an older version this vigil still reads is loaded and
 * restored as written, so that an upgrade keeps the state; any other version is
 * skipped like a corrupt one.
 *     1  the first format
 *     2  each rule's counters end with keys_refused (version 1: restored as 0)
 *
 * Body: tagged sections (u64 tag, length-prefixed bytes; see nfa/snapshot.h for the
 * encoding), so readers skip what they do not know. The inputs section has room for
 * sources with several partitions (Kafka later): per input a kind, a name and a list
 * of (partition, offset, line) entries; a file has one entry, partition 0. */
#ifndef VIGIL_RUNTIME_CHECKPOINT_H
#define VIGIL_RUNTIME_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "runtime/input.h"

#define CKPT_VERSION 2          /* written */
#define CKPT_OLDEST_VERSION 1   /* the oldest still read */
#define CKPT_HEADER_SIZE 48
#define CKPT_DEFAULT_EVERY_MS 10000

enum {
    CKPT_SEC_ENGINE = 1,   /* engine_checkpoint */
    CKPT_SEC_INPUTS = 2,   /* ckpt_put_inputs */
    CKPT_SEC_FILES = 3,    /* ckpt_put_file: output files and their lengths */
};

/* Messages (one line, no newline) about what loading or restoring decided. */
typedef void (*CkptLog)(void *user, const char *msg);

typedef struct CkptStore {
    char *dir;             /* heap copy */
    int lock_fd;           /* DIR/lock, held with flock while the store is open */
    uint64_t seq;          /* sequence number of the newest checkpoint (0: none) */
} CkptStore;

/* Creates DIR if needed and locks it. -1 with *err (heap) if it cannot, or if another
 * process holds it. */
int ckpt_open(CkptStore *s, const char *dir, char **err);
void ckpt_close(CkptStore *s);

typedef struct CkptLoaded {
    char *body;            /* heap, owned by the caller */
    size_t len;
    uint64_t seq;
    int64_t written_ms;
    char *path;            /* the slot it came from; heap */
    uint32_t version;      /* the format it was written in: CKPT_OLDEST_VERSION..CKPT_VERSION;
                              the engine section is restored accordingly */
} CkptLoaded;

/* The newest usable checkpoint. 1: loaded into *out; 0: the folder holds none; -1:
 * checkpoints exist but none is usable, or memory ran out while reading them (then no
 * slot is judged or skipped) (*err, heap, says which; NULL when memory ran out for it
 * too). Skipped slots are reported through log. */
int ckpt_load(CkptStore *s, CkptLoaded *out, CkptLog log, void *user, char **err);
void ckpt_loaded_free(CkptLoaded *l);

/* Writes the next checkpoint atomically (see above). -1 with *err (heap). */
int ckpt_write(CkptStore *s, const char *body, size_t len, int64_t now_ms, char **err);

/* ---- sections ------------------------------------------------------------------ */

void ckpt_put_section(Buf *body, uint64_t tag, const char *data, size_t len);
/* The section with `tag`; false if absent (or the body is malformed). */
bool ckpt_find_section(const char *body, size_t len, uint64_t tag, const char **data,
                       size_t *dlen);

/* Appends the inputs section: the position of every file input, and those of the
 * previous inputs section (prev, may be NULL) for files this run was not given, so
 * that a run on other inputs does not make a later one read a file again. */
void ckpt_put_inputs(Buf *body, const InputSet *in, const char *prev, size_t prev_len);
/* Moves the file inputs of `in` to their positions in the section and logs each
 * decision (resumed, not resumable, not in the checkpoint). -1 if the section is
 * malformed or a file cannot be resumed (*err, heap). */
int ckpt_resume_inputs(InputSet *in, const char *data, size_t len, CkptLog log, void *user,
                       char **err);

/* A files section is a run of (path, length) pairs to its end: append one. */
void ckpt_files_add(Buf *sec, const char *path, uint64_t length);
/* Called for each pair of a files section, in order: path is n bytes inside the
 * section, none of them NUL, and not NUL-terminated (copy it to use it as a C string);
 * false stops the walk. */
typedef bool (*CkptFileFn)(const char *path, size_t n, uint64_t length, void *user);
/* The one reader of the files section's pairs (checkpoint, journal, known files). A
 * pair whose path holds a NUL ends the walk as the section's end does: ckpt_files_add
 * never writes one. 1 if `each` stopped it, -1 if the section ends in a torn pair (a
 * journal cut short by a crash), else 0. */
int ckpt_files_each(const char *sec, size_t len, CkptFileFn each, void *user);
/* Cuts every file of a files section back to its checkpointed length (alerts written
 * after the checkpoint are written again by the resumed run). A file shorter than its
 * length, or missing, is reported and left alone. -1 on a malformed section or a
 * failed truncate (*err, heap). */
int ckpt_truncate_files(const char *data, size_t len, CkptLog log, void *user, char **err);

#endif
