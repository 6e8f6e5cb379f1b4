/* tests/test_slab.c — base/slab: objects are carved in order and aligned, released
 * ones are reused first (newest first), a slab knows when it is full and empty, the
 * lists keep their order through pushes and unlinks, an emptied slab becomes the
 * source's one spare (reused for any size, with a fresh header) or goes back to
 * malloc, and a source that is freed holds no slab. Under AddressSanitizer, room not
 * handed out is poisoned. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/slab.h"
#include "tests/checkmain.h"

#if defined(__SANITIZE_ADDRESS__)
#define ROOM_IS_HIDDEN(p) (__asan_address_is_poisoned(p) != 0)
#define ROOM_IS_SHOWN(p) (__asan_address_is_poisoned(p) == 0)
#else
#define ROOM_IS_HIDDEN(p) ((void)(p), true)
#define ROOM_IS_SHOWN(p) ((void)(p), true)
#endif

/* Room is hidden from valgrind too when it runs us: show what we touch. */
#define MEMCHECK free_room_under_memcheck()

static const size_t sizes[] = {8, 24, 64, 72, 512};
enum { N_SIZES = sizeof sizes / sizeof sizes[0] };

/* Takes every object of an empty slab; they are carved one after the other from the
 * first cache line after the header, inside the block, and each finds its slab. */
static void take_all(Slab *s, void **objs)
{
    for (uint32_t i = 0; i < s->cap; i++) {
        ck_assert(!slab_full(s));
        objs[i] = slab_take(s, MEMCHECK);
        ck_assert_ptr_eq(objs[i], (char *)s + SLAB_HEAD + (size_t)i * s->size);
        ck_assert_ptr_eq(slab_of(objs[i]), s);
        ck_assert_ptr_eq(slab_of((char *)objs[i] + s->size - 1), s);
        ck_assert(ROOM_IS_SHOWN(objs[i]));
        memset(objs[i], 0xa5, s->size);   /* all of it is ours */
    }
    ck_assert(slab_full(s));
    ck_assert_uint_eq(s->live, s->cap);
}

START_TEST(objects_are_carved_aligned_and_fill_the_slab)
{
    size_t size = sizes[_i];
    SlabSource src;
    slab_source_init(&src);
    Slab *s = slab_obtain(&src, size);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq((uintptr_t)s % SLAB_BYTES, 0);
    ck_assert_uint_eq(s->size, size);
    ck_assert_uint_eq(s->cap, SLAB_ROOM / size);
    ck_assert_uint_eq(s->live, 0);
    ck_assert_ptr_null(s->owner);
    ck_assert(ROOM_IS_HIDDEN((char *)s + SLAB_HEAD));
    static void *objs[SLAB_ROOM / 8];
    take_all(s, objs);
    ck_assert_uint_le((size_t)((char *)objs[s->cap - 1] + size - (char *)s), SLAB_BYTES);
    for (uint32_t i = 0; i < s->cap; i++)
        ck_assert_uint_eq((uintptr_t)objs[i] % (size % 64 ? 8 : 64), 0);
    for (uint32_t i = 0; i < s->cap; i++)
        slab_put(s, objs[i], MEMCHECK);
    ck_assert_uint_eq(s->live, 0);
    slab_destroy(&src, s);
    ck_assert_uint_eq(src.slabs, 0);
    slab_drop_spare(&src);
}
END_TEST

/* Released objects come back newest first, before any room never used. */
START_TEST(released_objects_are_reused_newest_first)
{
    SlabSource src;
    slab_source_init(&src);
    Slab *s = slab_obtain(&src, 24);
    ck_assert_ptr_nonnull(s);
    void *a = slab_take(s, MEMCHECK), *b = slab_take(s, MEMCHECK), *c = slab_take(s, MEMCHECK);
    slab_put(s, a, MEMCHECK);
    slab_put(s, c, MEMCHECK);
    ck_assert(ROOM_IS_HIDDEN(a));
    ck_assert(ROOM_IS_HIDDEN(c));
    ck_assert_uint_eq(s->live, 1);
    ck_assert_ptr_eq(slab_take(s, MEMCHECK), c);
    ck_assert_ptr_eq(slab_take(s, MEMCHECK), a);
    ck_assert(ROOM_IS_SHOWN(a));
    void *d = slab_take(s, MEMCHECK);   /* the free list is empty: carved after c */
    ck_assert_ptr_eq(d, (char *)c + 24);
    ck_assert_uint_eq(s->live, 4);
    ck_assert_uint_eq(s->carved, 4);
    slab_put(s, b, MEMCHECK);
    slab_put(s, a, MEMCHECK);
    slab_put(s, c, MEMCHECK);
    slab_put(s, d, MEMCHECK);
    ck_assert_uint_eq(s->live, 0);
    slab_retire(&src, s);
    slab_drop_spare(&src);
    ck_assert_uint_eq(src.slabs, 0);
}
END_TEST

/* A full slab emptied in any order (here every third, then the rest) gives every
 * object back: taking cap again carves nothing new and hands out each exactly once. */
START_TEST(an_emptied_slab_is_refilled_from_its_free_list)
{
    SlabSource src;
    slab_source_init(&src);
    Slab *s = slab_obtain(&src, 64);
    ck_assert_ptr_nonnull(s);
    static void *objs[SLAB_ROOM / 64];
    static unsigned char seen[SLAB_ROOM / 64];
    take_all(s, objs);
    for (uint32_t i = 0; i < s->cap; i += 3)
        slab_put(s, objs[i], MEMCHECK);
    ck_assert(!slab_full(s));
    for (uint32_t i = 0; i < s->cap; i++)
        if (i % 3)
            slab_put(s, objs[i], MEMCHECK);
    ck_assert_uint_eq(s->live, 0);
    memset(seen, 0, sizeof seen);
    for (uint32_t i = 0; i < s->cap; i++) {
        char *o = slab_take(s, MEMCHECK);
        size_t k = (size_t)(o - ((char *)s + SLAB_HEAD)) / 64;
        ck_assert_uint_lt(k, s->cap);
        ck_assert_uint_eq(seen[k]++, 0);
    }
    ck_assert(slab_full(s));
    ck_assert_uint_eq(s->carved, s->cap);
    for (uint32_t i = 0; i < s->cap; i++)
        slab_put(s, objs[i], MEMCHECK);
    slab_destroy(&src, s);
    slab_drop_spare(&src);
}
END_TEST

/* The first emptied slab is kept as the spare, a second one goes back to malloc; the
 * spare serves the next slab of any size, with a fresh header (no owner, no free list,
 * nothing carved), and is freed with its source. */
START_TEST(the_spare_is_kept_reused_and_freed)
{
    SlabSource src;
    slab_source_init(&src);
    Slab *a = slab_obtain(&src, 24), *b = slab_obtain(&src, 24);
    ck_assert(a && b && a != b);
    ck_assert_uint_eq(src.slabs, 2);
    a->owner = &src;
    void *x = slab_take(a, MEMCHECK), *y = slab_take(b, MEMCHECK);
    slab_put(a, x, MEMCHECK);
    slab_put(b, y, MEMCHECK);
    slab_retire(&src, a);
    ck_assert_ptr_eq(src.spare, a);
    ck_assert_uint_eq(src.slabs, 2);
    slab_retire(&src, b);
    ck_assert_ptr_eq(src.spare, a);
    ck_assert_uint_eq(src.slabs, 1);
    Slab *c = slab_obtain(&src, 72);
    ck_assert_ptr_eq(c, a);
    ck_assert_ptr_null(src.spare);
    ck_assert_ptr_null(c->owner);
    ck_assert_ptr_null(c->free);
    ck_assert_uint_eq(c->carved, 0);
    ck_assert_uint_eq(c->size, 72);
    ck_assert_uint_eq(c->cap, SLAB_ROOM / 72);
    ck_assert(ROOM_IS_HIDDEN(x));   /* what a was handed out stays hidden in c */
    ck_assert_ptr_eq(slab_take(c, MEMCHECK), (char *)c + SLAB_HEAD);
    slab_put(c, (char *)c + SLAB_HEAD, MEMCHECK);
    slab_retire(&src, c);
    ck_assert_uint_eq(src.slabs, 1);
    slab_drop_spare(&src);
    ck_assert_ptr_null(src.spare);
    ck_assert_uint_eq(src.slabs, 0);
    slab_drop_spare(&src);   /* none: nothing happens */
    slab_drop_spare(&src);
}
END_TEST

/* Lists: newest pushed first; unlinking from the front, middle or back keeps the rest
 * in order and clears the slab's links. */
START_TEST(lists_keep_their_order)
{
    SlabSource src;
    slab_source_init(&src);
    Slab *s[4];
    SlabList l = {NULL};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_ptr_nonnull(s[i] = slab_obtain(&src, 16));
        slab_list_push(&l, s[i]);
    }
    ck_assert_ptr_eq(l.head, s[3]);
    slab_list_unlink(&l, s[2]);   /* middle */
    ck_assert_ptr_null(s[2]->prev);
    ck_assert_ptr_null(s[2]->next);
    slab_list_unlink(&l, s[3]);   /* front */
    slab_list_unlink(&l, s[0]);   /* back */
    ck_assert_ptr_eq(l.head, s[1]);
    ck_assert_ptr_null(s[1]->prev);
    ck_assert_ptr_null(s[1]->next);
    slab_list_push(&l, s[0]);
    ck_assert_ptr_eq(l.head, s[0]);
    ck_assert_ptr_eq(s[0]->next, s[1]);
    ck_assert_ptr_eq(s[1]->prev, s[0]);
    slab_list_unlink(&l, s[1]);
    slab_list_unlink(&l, s[0]);
    ck_assert_ptr_null(l.head);
    for (size_t i = 0; i < 4; i++)
        slab_retire(&src, s[i]);
    ck_assert_uint_eq(src.slabs, 1);
    slab_drop_spare(&src);
    ck_assert_uint_eq(src.slabs, 0);
}
END_TEST

/* Memory goes back when everything is freed: many slabs taken full, emptied and
 * retired leave the spare alone, and freeing the source leaves none (leak checkers
 * see the rest). */
START_TEST(all_memory_goes_back)
{
    enum { SLABS = 20 };
    SlabSource src;
    slab_source_init(&src);
    Slab *s[SLABS];
    static void *objs[SLABS][SLAB_ROOM / 40];
    for (size_t i = 0; i < SLABS; i++) {
        ck_assert_ptr_nonnull(s[i] = slab_obtain(&src, 40));
        take_all(s[i], objs[i]);
    }
    ck_assert_uint_eq(src.slabs, SLABS);
    for (size_t i = 0; i < SLABS; i++) {
        for (uint32_t k = s[i]->cap; k-- > 0;)
            slab_put(s[i], objs[i][k], MEMCHECK);
        slab_retire(&src, s[i]);
        ck_assert_uint_eq(src.slabs, SLABS - i);
    }
    ck_assert_ptr_eq(src.spare, s[0]);
    slab_drop_spare(&src);
    ck_assert_uint_eq(src.slabs, 0);
    ck_assert_ptr_null(src.spare);
}
END_TEST

static Suite *slab_suite(void)
{
    Suite *s = suite_create("slab");
    TCase *tc = tcase_create("slab");
    tcase_add_loop_test(tc, objects_are_carved_aligned_and_fill_the_slab, 0, N_SIZES);
    tcase_add_test(tc, released_objects_are_reused_newest_first);
    tcase_add_test(tc, an_emptied_slab_is_refilled_from_its_free_list);
    tcase_add_test(tc, the_spare_is_kept_reused_and_freed);
    tcase_add_test(tc, lists_keep_their_order);
    tcase_add_test(tc, all_memory_goes_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(slab_suite());
}
