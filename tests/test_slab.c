/* tests/test_slab.c — base/slab: objects are carved in order and aligned, released
 * ones are reused first (newest first), a slab knows when it is full and empty, the
 * lists keep their order through pushes and unlinks, an emptied slab becomes the
 * source's one spare (reused for any size, with a fresh header) or goes back to
 * malloc, and a source that is freed holds no slab. A large source carves its slabs
 * from 2 MiB regions advised onto huge pages, reuses their released slabs, unmaps a
 * region when its last slab is back, and falls back to malloc when mmap fails. Under
 * AddressSanitizer, room not handed out is poisoned. */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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
#define MEMCHECK under_memcheck()

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

/* ---- regions ------------------------------------------------------------------ */

/* A source's first `n` slabs, in order, for objects of 64 bytes. */
static void obtain_n(SlabSource *src, Slab **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_ptr_nonnull(s[i] = slab_obtain(src, 64));
}

static void destroy_n(SlabSource *src, Slab **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        slab_destroy(src, s[i]);
}

static uintptr_t region_base(const void *p)
{
    return (uintptr_t)p & ~(uintptr_t)(SLAB_REGION_BYTES - 1);
}

/* Is the page at p mapped? mincore fails with ENOMEM where nothing is. */
static bool page_mapped(const void *p)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char vec;
    void *at = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
    if (mincore(at, (size_t)page, &vec) == 0)
        return true;
    ck_assert_int_eq(errno, ENOMEM);
    return false;
}

enum { BELOW = SLAB_REGION_AFTER, TWO_REGIONS = 2 * SLAB_REGION_SLABS };
static Slab *below[BELOW], *carved[TWO_REGIONS + 1];

/* The first SLAB_REGION_AFTER slabs are each their own malloc; the next ones are the
 * slabs of a region, one after the other from its 2 MiB-aligned start, each found
 * by slab_of from its objects; a full region is followed by a new one. A region's next
 * slab waits on the source's empty list, uncounted; every region is unmapped when its
 * slabs are back. */
START_TEST(slabs_come_from_regions_past_the_threshold)
{
    SlabSource src;
    slab_source_init(&src);
    obtain_n(&src, below, BELOW);
    for (size_t i = 0; i < BELOW; i++)
        ck_assert_ptr_null(below[i]->region);
    ck_assert_ptr_null(src.spare);
    obtain_n(&src, carved, TWO_REGIONS + 1);
    ck_assert_uint_eq(src.slabs, BELOW + TWO_REGIONS + 1);
    for (size_t i = 0; i < TWO_REGIONS + 1; i++) {
        Slab *s = carved[i];
        size_t k = i % SLAB_REGION_SLABS;
        ck_assert_ptr_nonnull(s->region);
        ck_assert_ptr_eq(s->region, carved[i - k]->region);
        ck_assert_uint_eq((uintptr_t)s, region_base(carved[i - k]) + k * SLAB_BYTES);
        ck_assert_uint_eq(region_base(carved[i - k]), (uintptr_t)carved[i - k]);
        ck_assert_uint_eq(s->cap, SLAB_ROOM / 64);
        ck_assert(ROOM_IS_HIDDEN((char *)s + SLAB_HEAD));
        void *obj = slab_take(s, MEMCHECK);
        ck_assert_ptr_eq(obj, (char *)s + SLAB_HEAD);
        ck_assert_ptr_eq(slab_of((char *)obj + 63), s);
        memset(obj, 0x5a, 64);
        slab_put(s, obj, MEMCHECK);
    }
    ck_assert_ptr_ne(carved[0]->region, carved[SLAB_REGION_SLABS]->region);
    ck_assert_ptr_ne(carved[SLAB_REGION_SLABS]->region, carved[TWO_REGIONS]->region);
    ck_assert_ptr_eq(src.spare, (Slab *)((char *)carved[TWO_REGIONS] + SLAB_BYTES));
    ck_assert_uint_eq(src.spare->cap, 0);
    ck_assert_ptr_null(src.spare->next);
    destroy_n(&src, carved, TWO_REGIONS + 1);
    for (size_t i = 0; i < TWO_REGIONS + 1; i += SLAB_REGION_SLABS)
        ck_assert(!page_mapped(carved[i]));
    ck_assert_ptr_null(src.spare);
    destroy_n(&src, below, BELOW);
    ck_assert_uint_eq(src.slabs, 0);
}
END_TEST

/* A slab given back to its region is listed free (uncounted, its room hidden) and
 * serves the next slab before any room never used, any new region or malloc, even
 * once the source is small again; retired onto an empty list it is the spare, which
 * keeps its region mapped; the region is unmapped when its last slab is back. */
START_TEST(released_region_slabs_are_reused_and_the_region_unmapped)
{
    SlabSource src;
    slab_source_init(&src);
    obtain_n(&src, below, BELOW);
    obtain_n(&src, carved, 4);
    char *base = (char *)carved[0];
    slab_destroy(&src, carved[2]);
    slab_retire(&src, carved[1]);           /* the list has room: back to the region */
    ck_assert_uint_eq(src.slabs, BELOW + 2);
    ck_assert(ROOM_IS_HIDDEN((char *)carved[1] + SLAB_HEAD));
    ck_assert(ROOM_IS_HIDDEN((char *)carved[2] + SLAB_HEAD));
    destroy_n(&src, below, BELOW);          /* the source is small again */
    ck_assert_uint_eq(src.slabs, 2);
    Slab *a = slab_obtain(&src, 24), *b = slab_obtain(&src, 8);
    ck_assert_ptr_eq(a, carved[1]);         /* newest first */
    ck_assert_ptr_eq(b, carved[2]);
    ck_assert_uint_eq(src.slabs, 4);
    ck_assert_ptr_eq(a->region, carved[0]->region);
    ck_assert_uint_eq(a->size, 24);
    ck_assert_uint_eq(a->cap, SLAB_ROOM / 24);
    ck_assert_ptr_null(a->free);
    ck_assert_uint_eq(a->carved, 0);
    ck_assert(ROOM_IS_HIDDEN((char *)a + SLAB_HEAD));
    Slab *c = slab_obtain(&src, 64);        /* then the room never handed out */
    ck_assert_ptr_eq(c, (Slab *)(base + 4 * SLAB_BYTES));
    ck_assert_ptr_eq(src.spare, (Slab *)(base + 5 * SLAB_BYTES));
    slab_destroy(&src, b);
    slab_destroy(&src, c);
    for (size_t i = 0; i < 4; i += 3)
        slab_destroy(&src, carved[i]);
    ck_assert_uint_eq(src.slabs, 1);        /* a alone */
    while (src.spare)                       /* empty the list: a becomes the spare */
        ck_assert_ptr_nonnull(slab_obtain(&src, 64));
    ck_assert(page_mapped(base));
    slab_retire(&src, a);
    ck_assert_ptr_eq(src.spare, a);
    ck_assert_uint_ne(a->cap, 0);           /* counted, not a free slab */
    ck_assert_ptr_eq(slab_obtain(&src, 16), a);
    ck_assert_ptr_eq(a->region, carved[0]->region);
    slab_retire(&src, a);
    for (size_t i = 0; i < SLAB_REGION_SLABS; i++)
        if (i != 1)
            slab_destroy(&src, (Slab *)(base + i * SLAB_BYTES));
    ck_assert(page_mapped(base));           /* the spare keeps it */
    ck_assert_uint_eq(src.slabs, 1);
    slab_drop_spare(&src);
    ck_assert_uint_eq(src.slabs, 0);
    ck_assert_ptr_null(src.spare);
    ck_assert(!page_mapped(base));
    ck_assert(!page_mapped(base + SLAB_REGION_BYTES - 1));
}
END_TEST

/* Dropping the spare while a region's free slabs are listed (an orphaned pool) frees
 * the spare alone, found behind them; the rest goes with the last slab. */
START_TEST(the_spare_is_found_behind_free_region_slabs)
{
    SlabSource src;
    slab_source_init(&src);
    obtain_n(&src, below, BELOW);
    Slab *spare = below[BELOW - 1];
    slab_retire(&src, spare);               /* an empty list: kept */
    ck_assert_ptr_eq(src.spare, spare);
    Slab *r = slab_obtain(&src, 64);        /* the spare */
    ck_assert_ptr_eq(r, spare);
    slab_retire(&src, r);
    obtain_n(&src, carved, 1);              /* the spare again: no region yet */
    ck_assert_ptr_eq(carved[0], spare);
    obtain_n(&src, carved + 1, 3);          /* 33 slabs: regions */
    ck_assert_ptr_nonnull(carved[3]->region);
    slab_retire(&src, carved[0]);           /* the list has the region's next: freed */
    ck_assert_uint_eq(src.slabs, BELOW + 2);
    slab_retire(&src, carved[2]);           /* back to the region */
    ck_assert_uint_eq(src.spare->cap, 0);
    ck_assert_uint_eq(src.slabs, BELOW + 1);
    slab_drop_spare(&src);                  /* no spare: nothing happens */
    ck_assert_uint_eq(src.slabs, BELOW + 1);
    slab_destroy(&src, carved[1]);          /* before the region: the list is empty */
    slab_destroy(&src, carved[3]);
    ck_assert(!page_mapped(carved[3]));
    ck_assert_ptr_null(src.spare);
    destroy_n(&src, below, BELOW - 1);
    ck_assert_uint_eq(src.slabs, 0);
}
END_TEST

/* A region is advised onto huge pages: its mapping carries the kernel's `hg` flag
 * (only where the kernel has transparent huge pages at all). */
START_TEST(regions_are_advised_onto_huge_pages)
{
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
        fprintf(stderr, "no transparent huge pages here: skipped\n");
        return;
    }
    SlabSource src;
    slab_source_init(&src);
    obtain_n(&src, below, BELOW);
    Slab *s = slab_obtain(&src, 64);
    ck_assert_ptr_nonnull(s->region);
    FILE *f = fopen("/proc/self/smaps", "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    bool inside = false, flagged = false, found = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)   /* a mapping's first line */
            inside = lo <= (uintptr_t)s && (uintptr_t)s < hi;
        else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            found = true;
            flagged = strstr(line, " hg") != NULL;
        }
    }
    fclose(f);
    ck_assert(found);
    ck_assert(flagged);
    slab_destroy(&src, s);
    ck_assert(!page_mapped(s));
    destroy_n(&src, below, BELOW);
}
END_TEST

/* With the address space limited so that no region can be mapped, a large source's
 * next slab is its own malloc (brk, below the limit) and no region's slab waits.
 * Skipped under AddressSanitizer and valgrind, which map for themselves. */
START_TEST(a_failed_mmap_falls_back_to_malloc)
{
#if defined(__SANITIZE_ADDRESS__)
    fprintf(stderr, "AddressSanitizer maps for itself: skipped\n");
    return;
#endif
    if (MEMCHECK) {
        fprintf(stderr, "valgrind maps for itself: skipped\n");
        return;
    }
    SlabSource src;
    slab_source_init(&src);
    obtain_n(&src, below, BELOW);
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    unsigned long pages;
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    struct rlimit old, tight;
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
    tight = old;
    size_t mapped = (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
    tight.rlim_cur = (rlim_t)(mapped + SLAB_REGION_BYTES / 2);   /* room for brk */
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &tight), 0);
    Slab *s = slab_obtain(&src, 64);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &old), 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_null(s->region);
    ck_assert_uint_eq((uintptr_t)s % SLAB_BYTES, 0);
    ck_assert_ptr_null(src.spare);          /* no region's slab waits */
    ck_assert_uint_eq(src.slabs, BELOW + 1);
    Slab *r = slab_obtain(&src, 64);        /* with room again, a region */
    ck_assert_ptr_nonnull(r->region);
    slab_destroy(&src, r);
    ck_assert(!page_mapped(r));
    slab_destroy(&src, s);
    destroy_n(&src, below, BELOW);
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
    tcase_add_test(tc, slabs_come_from_regions_past_the_threshold);
    tcase_add_test(tc, released_region_slabs_are_reused_and_the_region_unmapped);
    tcase_add_test(tc, the_spare_is_found_behind_free_region_slabs);
    tcase_add_test(tc, regions_are_advised_onto_huge_pages);
    tcase_add_test(tc, a_failed_mmap_falls_back_to_malloc);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(slab_suite());
}
