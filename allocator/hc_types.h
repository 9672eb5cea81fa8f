/* hc_types.h - the allocator's structures (allocator/): object records, size
 * classes, spans, thread caches, central lists, the page heap.
 *
 * LOCK ORDER: written once, as enum hci_lock_rank in base/hc_base.h (the fork handler takes every
 * lock in it) and docs/design.md.  The allocator's part, which hci_lock_all
 * follows: stack depot -> thread-cache registry -> sampled-span list ->
 * page heap -> central[class] in ascending class order -> metadata arena.
 * A thread holding a lock may only take locks to its right.  The fast paths
 * (thread cache push/pop) take no lock at all.  Stop-the-world takes all of
 * them first, so no stopped thread can hold one.
 *
 * Ownership of a small object's memory at any time is exactly one of:
 * a thread cache list, a thread cache's remote batch, an owner's inbox
 * (remote.c), a transfer-cache batch in its central list, the free list of
 * its span, or the user.  Free objects are linked through their first
 * word, encoded, and carry the free mark in their second (free_list.h).
 */
#ifndef HC_TYPES_H
#define HC_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hc_base.h"
#include "hc_stacks.h"
/* ---- per-object record (checker mode) ---- */
/* 8 bytes per small object in its span's side array, or one inside a large
 * span.  Written by malloc and free of the owning thread without a lock. */
#define HC_OBJ_IGNORED 0x8000u   /* a root: IgnoreObject() or allocated under a Disabler */
#define HC_OBJ_SLACK_MASK 0x7fffu /* class size - requested size, in bytes */
typedef struct hc_objmeta {
  uint32_t stack_id;  /* depot id of the allocation stack; 0 = free, 1 = stack unknown */
  uint16_t epoch;     /* global epoch at allocation (scoped checks report >= their epoch) */
  _Atomic uint16_t xflags; /* HC_OBJ_IGNORED | slack; atomic because IgnoreObject races with nothing but the owner */
} hc_objmeta_t;
_Static_assert(sizeof(hc_objmeta_t) == 8, "objmeta is 8 bytes");

/* ---- size class ---- */
typedef struct hc_class_info {
  uint32_t size;      /* object size in bytes, multiple of 16 */
  uint16_t pages;     /* pages per span of this class */
  uint16_t batch;     /* objects moved between thread cache and central at once */
  uint32_t objs;      /* objects per span = pages * page_size / size */
  uint64_t recip;     /* ceil(2^48 / size): offset * recip >> 48 == offset / size for offsets < 2^30 */
} hc_class_info_t;

/* ---- span ---- */
enum {
  HC_SPAN_FREE = 0,   /* in the page heap */
  HC_SPAN_SMALL = 1,  /* carved into objects of one class, owned by central[cls] */
  HC_SPAN_LARGE = 2,  /* one object (large, sampled or over-aligned) */
  HC_SPAN_STASHED = 3, /* free span kept for the next sampled object of its pages (alloc.c) */
};

/* A run of pages.  Lives in the metadata arena, never in the user heap.
 * The pagemap maps every page of every span, free or in use, to it. */
typedef struct hc_span {
  uintptr_t start;          /* first byte; page aligned */
  size_t npages;            /* length in pages, >= 1 */
  struct hc_span *next;     /* list link: page heap free list or central span list */
  struct hc_span *prev;
  void *freelist;           /* SMALL: free objects inside this span; guarded by central[cls].lock */
  uint32_t allocated;       /* SMALL: objects not on this span's freelist; guarded by central lock */
  uint8_t cls;              /* SMALL: size class; 0 otherwise */
  uint8_t state;            /* HC_SPAN_* */
  uint8_t is_released;      /* FREE: pages were given back with MADV_DONTNEED */
  uint8_t is_sampled;       /* LARGE: allocation was sampled (profile walks these) */
  uint32_t carved;          /* SMALL: objects carved so far (lazy carving from start) */
  uint32_t opened;          /* SMALL: the most objects ever carved in this SMALL life: the pages up to
                               the last one's are open to the free fast path, and every object
                               in them past `carved` is marked free (central.c, open_pages) */
  uint8_t is_zeroed;        /* just allocated from released/fresh pages: all bytes are zero */
  uint8_t is_placed;        /* LARGE: put at an alignment above a page (memalign): never stashed */
  hc_objmeta_t *objmeta;    /* SMALL in checker mode: one record per object, else NULL */
  uint32_t id;              /* dense, stable while the record exists: the key of the
                               layers above's side tables (the checker's marks); page_heap.c */
  void *owner;              /* SMALL: the hc_tcache_t its objects last went to (remote.c); guarded by
                               central[cls].lock, mirrored in the pagemap's owner words */
  /* LARGE objects keep their record here */
  hc_objmeta_t meta;        /* stack id, epoch, flags of the single object */
  size_t req_size;          /* LARGE: bytes requested (exact, for reports and profiles) */
  uint64_t alloc_time;      /* LARGE sampled: allocation time, ns since process start */
  uint64_t weight;          /* LARGE sampled: mean sampling interval it was drawn with */
  uint64_t sample_est;      /* LARGE sampled: bytes it stands for (profile.c's estimate) */
  size_t sample_size;       /* LARGE sampled: the size the profile was last told (alloc.c) */
  struct hc_span *snext;    /* LARGE sampled: link in the sampled-span list */
  struct hc_span *sprev;
} hc_span_t;

/* ---- thread cache ---- */
typedef struct hc_chain {
  void *head;                        /* NULL-terminated list of objects */
  void *tail;                        /* its last object, or NULL: a thread cache does not track
                                        its lists' tails (central never reads a chain's tail) */
  uint32_t n;                        /* its length */
} hc_chain_t;

/* Remote frees (remote.c).  A small span is owned by the thread cache its
 * objects last went to (hc_span_t.owner, the pagemap's owner word); a free
 * by another thread goes back to the owner instead of into the freeing
 * thread's cache: batched per class in the freeing cache (no atomic per
 * object), then pushed as a chain onto the owner's inbox for that class
 * with one compare-and-swap.  The owner takes a whole inbox with one
 * exchange when its list runs dry, before it asks the central list.  Caches
 * of exited threads are kept (pooled) and adopted by new threads, so an
 * inbox is never freed memory. */
typedef struct hc_tc_remote {
  /* Written by other threads (lock-free: push a chain, take all).  The
   * pads keep these lines apart from the owner's (hci_meta_alloc aligns
   * to 16 bytes only, so no alignment attribute). */
  char pad0[64];
  struct {
    _Atomic uintptr_t word;          /* objects pushed by other threads, linked as free lists: the
                                        head, and their number above it (remote.c) */
    _Atomic size_t n;                /* pushed and not taken yet (added before the push: never low) */
  } inbox[HC_NUM_CLASSES];
  _Atomic size_t pending;            /* bytes in all inboxes (as inbox[].n; bounded by HC_REMOTE_INBOX_MAX) */
  _Atomic int dead;                  /* the thread exited; pushers give what they pushed to central */
  /* Written by the owning thread only (read for statistics). */
  char pad1[64];
  hc_chain_t batch[HC_NUM_CLASSES];  /* freed here, owned by batch_owner[c] */
  struct hc_tcache *batch_owner[HC_NUM_CLASSES];
  struct hc_tcache *pool_next;       /* in the pool of exited threads' caches (registry lock) */
} hc_tc_remote_t;

typedef struct hc_tc_list {
  void *head;               /* singly linked through the first word */
  int32_t room;             /* lim - objects on the list (hc_tc_len): the free fast path
                               subtracts 1 and pushes when the result is not negative (else
                               adds it back and misses), malloc adds 1; negative when a list
                               holds more than its capacity (a refill's chain) */
  uint32_t lim;             /* the class's capacity in this cache, its only copy (hc_tc_cap;
                               0 in the empty cache) */
  /* The free fast path's object-start check, copied from the class so it
   * needs no second table: off is the offset of an object of this class
   * inside its span iff rol(off * recip, 16) < start_lim (hc_tc_is_start).
   * start_lim is also the free fast path's switch: 0 fails every offset,
   * in lists[0] (which stands for every page that is not a small object's:
   * the free fast path does not test the class), in the empty cache (never
   * written by a fast path), and in checker mode or with malloc hooks
   * (hci_tc_set_fastpath; the one field other threads write). */
  uint64_t recip;           /* hci_classes[].recip */
  uint64_t start_lim;       /* objs * ((size * recip - 2^48) * 2^16 + 1), or 0: see above */
} hc_tc_list_t;

/* A thread's state, in one group per owner; each module touches only its own
 * group, through the accessors in hc_internal.h (hci_tc_free/_sampler/_memo/
 * _chk; test_layers checks it).  The registry fields (next, prev, tid, tp,
 * is_real) are thread_cache.c's. */
typedef struct hc_tc_sampler { /* sampler.c (the malloc fast path subtracts from left) */
  int64_t left;             /* bytes until the next sample; the fast path subtracts and tests < 0 */
  uint64_t rng;             /* PRNG state */
  uint64_t interval;        /* mean sampling interval the current draw was made with */
} hc_tc_sampler_t;

/* Sizes up to HC_TC_DIRECT_MAX find their list through direct[size] (the
 * malloc fast path). */
#define HC_TC_DIRECT_MAX 1024

typedef struct hc_tc_free {  /* the free lists: thread_cache.c, alloc.c, alloc_inline.h */
  /* Byte offset in the hc_tcache_t of lists[class of size], for every size
   * up to HC_TC_DIRECT_MAX: the malloc fast path's one load (indexed by the
   * size itself, relative to the cache pointer it holds anyway) instead of
   * the class table's six instructions (round, shift, table address, byte,
   * scale, add).  2 KiB a cache.  In the empty cache (zeros) every
   * entry is 0: a list at the cache's start, whose head is smp.left (thread_cache.c). */
  uint16_t direct[HC_TC_DIRECT_MAX + 1];
  hc_tc_list_t lists[HC_NUM_CLASSES];
  /* capacity per class: lists[c].lim (hc_tc_cap) */
  /* capacity * class size / 1024, for steal_capacity's scan: padded to whole
   * 16-byte vectors (entries past the classes stay 0) */
  uint32_t cap_kib[HC_KIB_SLOTS] __attribute__((aligned(16)));
  /* of it, the KiB above the class's batch: steal_capacity's first victims */
  uint32_t over_kib[HC_KIB_SLOTS] __attribute__((aligned(16)));
  size_t cap_bytes;         /* sum of capacity * class size: what the lists may hold; <= budget */
  size_t budget;            /* bound on cap_bytes */
  uint64_t notag;           /* ~otag in the low 16 bits: the free fast path pushes when the
                               page's tag has no bit here (0 or otag: hci_owner_tag); a word,
                               so that the test takes it from memory; 0 in the empty cache */
  uint32_t refills;         /* slow-path refills, to tick the page heap every 256 (hci_ph_tick) */
  uint16_t otag;            /* hci_owner_tag(this cache), set at adoption: the tag of the
                               pages of the spans it owns (hc_pm_fast_t) */

  /* Overflows the class may still take as a class the thread allocates
   * too: 1 or HC_TC_ONEWAY_RUNS at each refill, one less at each
   * overflow; at 0 the class is one-way (thread_cache.c, hci_tc_push) */
  uint8_t local_runs[HC_NUM_CLASSES];
  /* The scavenger (thread_cache.c, hci_tc_scavenge_tick): per class, the
   * fewest objects its list held at the slow-path points seen since the
   * last scavenge (its length then; a refill: 0), and the bytes
   * allocated (the sampler's count) until the next scavenge.  Slow paths
   * only: the fast paths do not see them. */
  uint16_t lowater[HC_NUM_CLASSES];
  /* Per class: scavenges to skip still, the log2 of how many to skip
   * after the next one that gives something back, and 1 when the last
   * scavenge gave something back (the next one judges whether it was
   * missed). */
  uint8_t scav_wait[HC_NUM_CLASSES];
  uint8_t scav_backoff[HC_NUM_CLASSES];
  uint8_t scav_gave[HC_NUM_CLASSES];
  int64_t scav_left;
} hc_tc_free_t;

typedef struct hc_tc_memo {  /* the unwinder's (stacks/), used by alloc.c's stack capture */
  int in_alloc;             /* recursion guard for the slow path (unwinder, depot) */
  int in_sample;            /* this thread is in a sampled allocation or free, which take the
                               samples lock: a signal handler's malloc on it does not sample,
                               its free of a sampled block is deferred (alloc.c) */
  uint64_t held;            /* the signal mask before the outermost sample_begin (alloc.c) */
  bool holding;             /* that sample_begin held signals back (held is to be put back) */
  struct hc_span *deferred; /* sampled spans such a handler freed, through next (alloc.c) */
  hc_unwind_memo_t memo;    /* last DWARF walk of an allocation stack (only under in_alloc) */
  hc_stack_memo_t frees;    /* stacks of recent frees (alloc.c's free_stack; only under in_alloc) */
} hc_tc_memo_t;

typedef struct hc_tc_chk {   /* the checker's: alloc_ctl.c writes them on its behalf */
  int disable_depth;        /* Disabler nesting: > 0 marks new objects ignored */
} hc_tc_chk_t;

/* Checker mode's quarantine (quarantine.c): freed blocks in batches, 8 KiB
 * arrays in the metadata arena. */
#define HC_QBATCH_SLOTS 1020
typedef struct hc_qbatch {
  struct hc_qbatch *next;   /* the next younger batch (FIFO, a thread's pending ones) or spare */
  size_t bytes;             /* memory the blocks hold */
  size_t large_bytes;       /* of it, in large blocks (stats) */
  uint32_t n;               /* blocks in p */
  void *p[HC_QBATCH_SLOTS];
} hc_qbatch_t;

typedef struct hc_tc_quar {  /* a thread's part of it */
  hc_qbatch_t *cur;         /* being filled */
  hc_qbatch_t *pending;     /* full, waiting for the lock (oldest first) */
  hc_qbatch_t *pending_tail;
  int busy;                 /* inside hci_quarantine_put/_flush (a signal handler's free is not quarantined) */
} hc_tc_quar_t;

typedef struct hc_tcache {
  hc_tc_sampler_t smp;      /* first: the malloc fast path reads smp.left and fl.lists[] */
  hc_tc_free_t fl;
  struct hc_tcache *next;   /* registry of live caches; guarded by the registry lock */
  struct hc_tcache *prev;
  int tid;                  /* owning kernel thread id */
  uintptr_t tp;             /* owning thread's thread pointer (TLS base), for the checker */
  bool is_real;             /* false only in hci_tc_empty, the shared empty cache (all zeros,
                               never written by any fast path) */
  hc_tc_chk_t chk;
  hc_tc_memo_t stk;
  hc_tc_quar_t qr;
  hc_tc_remote_t remote;    /* last: adoption clears the fields before it (thread_cache.c) */
} hc_tcache_t;

/* ---- central free list ---- */
/* The transfer cache's slots live apart from the lists' heads
 * (hci_transfer_slots in central.c): the heads of every class then fit in
 * a few pages.  fork's prepare handler takes every class's lock and the
 * parent and the child each write them again after fork: with 1.5 KiB of
 * slots inside each head the locks were spread over 41 pages, 41
 * copy-on-write faults on each side of every fork of a threaded process
 * (about 3x glibc's page faults per fork).  A central operation reads the
 * head's line and one slot's line either way. */
#define HC_TRANSFER_SLOTS 64
typedef struct hc_central {
  hci_lock_t lock;
  uint32_t nchains;                  /* chains in this class's transfer slots; guarded by lock */
  size_t slot_objs;                  /* objects in them */
  hc_span_t spans;                   /* sentinel: spans with free objects; guarded by lock */
  size_t free_objs;                  /* objects free in spans (not counting slots) */
  size_t nspans;                     /* spans owned by this class */
  uint32_t nempty;                   /* spans with every object free, at the tail of `spans` (central.c) */
  uint32_t refills;                  /* refills (hci_central_remove*): the epochs of refill_cpus */
  uint64_t refill_cpus[2];           /* bit cpu % 64 for each CPU that refilled this class in the current
                                        epoch of 16 refills ([0]) and in the one before ([1]) */
  uint64_t span_allocs;              /* statistics */
} __attribute__((aligned(64))) hc_central_t;

/* ---- page heap ---- */
typedef struct hc_pageheap {
  hci_lock_t lock;
  hc_span_t exact[HC_PH_EXACT_LISTS + 1]; /* sentinels: free runs of exactly n pages, n = index */
  hc_span_t large;                       /* sentinel: free runs longer than HC_PH_EXACT_LISTS */
  uint64_t exact_used[HC_PH_EXACT_LISTS / 64 + 1]; /* bit n: exact[n] is not empty (find_fit) */
  size_t free_pages;                     /* pages on the free lists, committed (backed) */
  size_t released_pages;                 /* pages on the free lists given back to the OS */
  size_t mapped_bytes;                   /* bytes ever mapped for the heap */
  size_t inuse_bytes;                    /* bytes of spans handed out (SMALL and LARGE) */
  uint64_t large_allocs;                 /* statistics */
  uint64_t release_calls;
  uintptr_t lo, hi;                      /* bounds of every heap mapping (checker prefilter) */
  /* Demand (page_heap.c, "release by demand"): the most bytes in use in
   * the current epoch and in the one before; epochs last release_delay ns
   * and end on the page heap's own calls (no timer). */
  size_t peak_cur, peak_prev;
  uint64_t epoch_end;                    /* coarse-clock ns at which the current epoch ends */
  uint64_t release_delay;                /* epoch length, ns (HC_RELEASE_DELAY_NS) */
} hc_pageheap_t;

#endif
