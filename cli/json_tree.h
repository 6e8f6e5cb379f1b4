/* cli/json_tree.h — a small JSON tree for comparing alerts in `vigil test`.
 *
 * Owns: every node and string of one parsed document, in one arena (freed at once
 * by json_tree_free). Not for the hot path: the engine never builds trees. */
#ifndef VIGIL_CLI_JSON_TREE_H
#define VIGIL_CLI_JSON_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"

typedef enum { JT_NULL, JT_BOOL, JT_NUM, JT_STR, JT_ARR, JT_OBJ } JsonType;

typedef struct JsonNode JsonNode;
typedef struct JsonMember {
    const char *name;          /* decoded, NUL-terminated (may hold NUL: see name_len) */
    size_t name_len;
    JsonNode *value;
} JsonMember;

struct JsonNode {
    JsonType type;
    bool boolean;
    double num;
    const char *str;           /* JT_STR: decoded bytes, NUL-terminated */
    size_t len;
    JsonNode **items;          /* JT_ARR */
    JsonMember *members;       /* JT_OBJ, in document order (a repeated name: last wins) */
    size_t n;
};

typedef struct JsonTree {
    Arena arena;
    JsonNode *root;
} JsonTree;

/* The reason json_tree_parse gives when an allocation failed (compare the pointer):
 * the text may be good JSON. */
extern const char JSON_TREE_NO_MEMORY[];

/* Parses one JSON document. False with a static reason and the byte offset in *err_at. */
bool json_tree_parse(JsonTree *t, const char *text, size_t len, const char **err,
                     size_t *err_at);
void json_tree_free(JsonTree *t);
/* The member `name` of an object, or NULL. */
const JsonNode *json_tree_get(const JsonNode *obj, const char *name);
/* Subset equality: every member `want` names must be in `got` and match recursively;
 * arrays must have equal lengths and match element-wise; scalars must be equal
 * (numbers as doubles). */
bool json_tree_subset(const JsonNode *want, const JsonNode *got);

#endif
