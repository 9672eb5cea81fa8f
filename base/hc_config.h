/* hc_config.h - compile-time limits of the allocator and the checker.
 *
 * Every number another module derives a size from lives here, with the
 * static assertions that tie them together.  Nothing in this file depends
 * on the architecture except HC_ADDRESS_BITS (x86-64 and aarch64 both use
 * 48-bit user addresses with 4-level page tables). */
#ifndef HC_CONFIG_H
#define HC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* ---- pages and spans ---- */
#define HC_PAGE_SHIFT 13                        /* 8 KiB allocator pages */
#define HC_PAGE_SIZE ((size_t)1 << HC_PAGE_SHIFT)
#define HC_ADDRESS_BITS 48                      /* user-space virtual address width */
#define HC_PAGE_BITS (HC_ADDRESS_BITS - HC_PAGE_SHIFT) /* 35 bits of page number */

/* 2-level pagemap: root indexed by the high bits, leaves by the low bits. */
#define HC_PM_LEAF_BITS 16
#define HC_PM_ROOT_BITS (HC_PAGE_BITS - HC_PM_LEAF_BITS)
#define HC_PM_LEAF_LEN ((size_t)1 << HC_PM_LEAF_BITS)
#define HC_PM_ROOT_LEN ((size_t)1 << HC_PM_ROOT_BITS)

/* ---- size classes ---- */
#define HC_MIN_ALIGN 16                         /* every object is 16-byte aligned */
#define HC_MAX_SMALL ((size_t)256 * 1024)        /* largest size served by a class */
#define HC_NUM_CLASSES 97                       /* class 0 = "not small" (large span) */
#define HC_KIB_SLOTS ((HC_NUM_CLASSES + 3) & ~3) /* per-class KiB counts, padded to whole 16-byte vectors */
#define HC_CLASS_LOOKUP_LEN 2105                /* see hci_size_to_class() */

/* ---- page heap ---- */
#define HC_PH_EXACT_LISTS 128                   /* free lists for runs of 1..128 pages */
#define HC_HEAP_GROW_MIN ((size_t)2 << 20)      /* map at least 2 MiB from the OS at a time */
#define HC_RELEASE_SLACK ((size_t)64 << 20)     /* committed bytes kept beyond the recent peak in use (page_heap.c) */
#define HC_RELEASE_DELAY_NS ((uint64_t)1000000000) /* demand epoch: memory unused for 1-2 of them goes back */

/* ---- thread caches ---- */
#define HC_TC_BUDGET_TOTAL ((size_t)32 << 20)   /* bytes held by all thread caches together */
#define HC_TC_BUDGET_MIN ((size_t)512 << 10)    /* the least one thread cache may hold */
#define HC_TC_BUDGET_MAX ((size_t)4 << 20)      /* the most one thread cache may hold (docs/performance.md, "Thread-cache capacity (session 12)") */
/* ...unless the heap is larger: then up to 1/HC_TC_HEAP_SHARE of the bytes
 * in use, at most HC_TC_BUDGET_HEAP_MAX.  A program that uses every class
 * (random_live: 80 classes, whose batches alone fill 3.6 MiB) kept each
 * class at its batch with 4 MiB and went to central at a third of the
 * big classes' operations; a budget that scales with the heap costs the
 * same share of memory to every program (docs/performance.md, "Session 15
 * (lead)"). */
#define HC_TC_HEAP_SHARE 16
#define HC_TC_BUDGET_HEAP_MAX ((size_t)16 << 20)
/* A refill grows capacity to hold a chain another thread gave back only
 * while the cache's capacity stays within an eighth of this (thread_cache.c,
 * fit_chain): with the 4 MiB budget, larson's threads, which take over
 * exited threads' lists, held 2 MB more (peak RSS 11.1 -> 13.1 MB); 1 MiB,
 * not 2: larson 11.1 -> 10.6 MB, churn 14.3 -> 13.6 MB, instructions level
 * (docs/performance.md, "Memory, sixth pass"). */
#define HC_TC_FIT_MAX ((size_t)1 << 20)
/* A class a thread frees but does not allocate (its list overflows twice
 * with no refill between) keeps at most this much capacity: what it holds
 * is memory no one can use until it goes to central (thread_cache.c). */
#define HC_TC_ONEWAY_BYTES ((size_t)32 << 10)
/* ...but a class for which that is no more than a batch (1 KiB objects and
 * up) is judged one-way only after HC_TC_ONEWAY_RUNS + 1 overflows in a
 * row.  A list that random-walks (as many frees as mallocs, in random
 * order: random_live) overflows twice in a row about one time in four (an
 * overflow leaves it a quarter full, or empty below 4 objects), and the cut
 * left such a class a batch (2 objects of 64 KiB): random_live's big
 * classes went to central at a third of their operations.  A real one-way
 * class overflows again and again: 2 more overflows cost it little; the
 * small classes keep the quick cut (larson: 0.8 MB more with 3 runs for
 * every class; docs/performance.md, "Session 15 (lead)"). */
#define HC_TC_ONEWAY_RUNS 3
/* The scavenger (thread_cache.c, hci_tc_scavenge_tick): with two threads
 * or more, a cache gives back half of each list's low-water mark (objects
 * its class did not use since the last time) every HC_TC_SCAVENGE_BYTES
 * it allocates, when that half is at least HC_TC_SCAVENGE_MIN (a central
 * operation for less cost more than it saved: 1 MiB and no minimum cost
 * server +5 % instructions, larson +4 %; docs/performance.md, "Memory,
 * seventh pass"); a class whose give-back was missed (refilled before the
 * next scavenge) sits out up to 2^HC_TC_SCAVENGE_BACKOFF - 1 of them. */
#define HC_TC_SCAVENGE_BYTES ((int64_t)4 << 20)
#define HC_TC_SCAVENGE_MIN ((size_t)4 << 10)
#define HC_TC_SCAVENGE_BACKOFF 6
/* Remote frees (allocator/remote.c): objects below a cache line share
 * lines, so they go back to their span's owner; bigger ones stay with the
 * freeing thread (transfer chains are cheaper, docs/performance.md). */
#define HC_REMOTE_SIZE_MAX 48
/* What a cache holds besides its lists. */
#define HC_REMOTE_INBOX_MAX ((size_t)1 << 20)  /* an owner's inboxes, all classes: past it pushes go to central */
#define HC_REMOTE_BATCH_BYTES ((size_t)2 << 10)  /* a batch for another owner is pushed at this size (or a class batch) */

/* ---- central transfer caches (chains kept whole between threads) ---- */
#define HC_SLOT_BYTES_CLASS_MAX ((size_t)3 << 20)  /* per size class (the total bounds it anyway) */
/* All classes together.  3 MiB, not 16 or 4: bench_realloc (one thread)
 * kept up to 16 MiB of freed 8-256 KiB objects in slots, pages no other
 * class could reuse (peak RSS 122 -> 97 MB at 4 MiB, 96 at 3, 93 at 2:
 * docs/performance.md "Memory" and "Memory, second pass"; below 3 MiB no
 * class of one object per span fits 64 slots under the class bound, the
 * case test_central's slot overflow needs). */
#define HC_SLOT_BYTES_TOTAL_MAX ((size_t)3 << 20)
/* Empty spans (every object free) a class keeps on its list to carve
 * again, at least one: carving writes the objects' links, where taking
 * them from the span's free list reads links that the freeing thread,
 * often on another CPU, wrote last (central.c, "Chains back into spans").
 * 8 spans of the 64-byte class; beyond it emptied spans go to the page heap.
 * 64 KiB, not the 256 of the first version: realloc's peak RSS 96 -> 111 MB
 * with 256, 99 with 64, xmalloc's time the same (docs/performance.md,
 * "Merged main, end of session 12"). */
#define HC_CENTRAL_EMPTY_BYTES ((size_t)64 << 10)
/* Free spans of sampled objects kept for the next sample of as many pages
 * (alloc.c): spans of up to 8 pages (64 KiB objects), 16 pages (128 KiB)
 * in all; one-page spans only, 16 of them, before session 21.  A sampled
 * object of 8-64 KiB took its span from the page heap and gave it back
 * (two page-heap locks, the merge's cold reads of its neighbours): on
 * random_live, whose objects average 8 KiB, 0.8 % of its instructions.
 * Kept out of the page heap, stashed spans split its free runs: with spans
 * of up to 32 pages malloc_large (64 KiB-16 MiB blocks) peaked 9 MB
 * higher, and with 32 pages in all realloc 0.7 MB (docs/performance.md,
 * "random_live and xfree (session 21, branch live21)"). */
#define HC_SAMPLE_STASH_SPAN_PAGES 8
#define HC_SAMPLE_STASH_PAGES 16
/* Checker mode's quarantine (quarantine.c): a thread hands its frees to the
 * global FIFO in batches of this many bytes (or an eighth of the budget when
 * smaller); blocks over HC_QUARANTINE_BIG leave it first (valgrind's
 * --freelist-big-blocks default). */
#define HC_QUARANTINE_BATCH ((size_t)256 << 10)
#define HC_QUARANTINE_BIG ((size_t)1000000)

/* ---- stacks ---- */
#define HC_MAX_STACK_DEPTH 64
#define HC_DEFAULT_SAMPLE_INTERVAL 524288

/* ---- metadata arena ---- */
#define HC_META_CHUNK ((size_t)4 << 20)         /* meta arena grows by this much */
/* Address space the meta arena reserves at its first use and commits chunk
 * by chunk (pagemap leaves of 8 MiB included), so metadata mappings never
 * fall between heap mappings (base/meta.c); past it, plain mappings. */
#define HC_META_RESERVE ((size_t)32 << 20)

_Static_assert(HC_PM_ROOT_BITS + HC_PM_LEAF_BITS == HC_PAGE_BITS, "pagemap covers the address space");
_Static_assert(HC_MAX_SMALL % HC_PAGE_SIZE == 0, "largest class is whole pages");
_Static_assert((HC_PAGE_SIZE & (HC_PAGE_SIZE - 1)) == 0, "page size is a power of two");
_Static_assert(HC_MIN_ALIGN >= 2 * sizeof(void *), "objects hold two links (batch transfer)");

#endif
