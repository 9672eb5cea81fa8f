/* hc_internal.h - hidden cross-module interface of libheapcheck.
 *
 * Prototypes are grouped by the .c file that defines them.  Everything here
 * has hidden visibility (the library is built with -fvisibility=hidden);
 * only include/heapcheck.h and the malloc family are exported.
 *
 * Rules for every module (see docs/design.md):
 *  - never call malloc, stdio, getenv or anything that may take a libc lock
 *    from allocator code, signal handlers or while the world is stopped;
 *    use hci_meta_alloc, hci_printf/hci_snprintf and hci_env_* instead;
 *  - errors in the user's use of the heap go through hci_fatal (one line, abort).
 */
#ifndef HC_INTERNAL_H
#define HC_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hc_config.h"
#include "hc_types.h"

#define hc_likely(x) __builtin_expect(!!(x), 1)
#define hc_unlikely(x) __builtin_expect(!!(x), 0)
#define hc_noinline __attribute__((noinline))
#define hc_cold __attribute__((cold))
#define hc_unused __attribute__((unused))
#define hc_public __attribute__((visibility("default")))
#define HC_TLS __attribute__((tls_model("initial-exec"))) __thread

/* Architecture-specific bits live here and in os.c, unwind*.c, checker/tls.c, checker/stop_signal.c. */
static inline void hci_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Private state that the leak checker must not scan as a root: statics that
 * may hold heap-looking values (the end of a metadata mapping that the
 * kernel later placed a heap mapping after, a span start...).  Each module
 * registers its state with HC_PRIVATE_STATE(var); the checker cuts every
 * registered range out of the global roots, in shared and static builds
 * alike (the linker collects the records between __start_/__stop_hc_state_ranges). */
typedef struct hci_state_range {
  const void *addr;
  size_t size;
} hci_state_range_t;
#define HC_PRIVATE_STATE(var)                                                                \
  static const hci_state_range_t hc_state_range_##var                                       \
      __attribute__((section("hc_state_ranges"), used, aligned(sizeof(void *)))) = {&(var), \
                                                                                    sizeof(var)}

/* Always-on cheap integrity check. */
#define HC_CHECK(cond, ...) \
  do { if (hc_unlikely(!(cond))) hci_fatal(__VA_ARGS__); } while (0)

/* ======================= lock.c ======================= */
void hci_lock_slow(hci_lock_t *l);
void hci_unlock_slow(hci_lock_t *l);
static inline void hci_lock(hci_lock_t *l) {
  int expected = 0;
  if (hc_unlikely(!atomic_compare_exchange_strong_explicit(&l->xstate, &expected, 1,
                                                           memory_order_acquire, memory_order_relaxed)))
    hci_lock_slow(l);
}
static inline void hci_unlock(hci_lock_t *l) {
  if (hc_unlikely(atomic_exchange_explicit(&l->xstate, 0, memory_order_release) == 2))
    hci_unlock_slow(l);
}
static inline bool hci_trylock(hci_lock_t *l) {
  int expected = 0;
  return atomic_compare_exchange_strong_explicit(&l->xstate, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}
/* After fork in the child: the lock is free whatever its state was. */
static inline void hci_lock_reset(hci_lock_t *l) { atomic_store_explicit(&l->xstate, 0, memory_order_relaxed); }

/* ======================= output.c ======================= */
/* A printf subset that never allocates: %s %c %d %i %u %x %X %p %%, with
 * flags '-' '0', a width, precision (.N and .* for %s), length l ll z j t. */
int hci_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hci_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* write(2) the whole buffer, retrying on EINTR and short writes; errno is
 * preserved; true when everything was written.  Never raises SIGPIPE (a
 * broken pipe is an error, the program's signal state is left as it was)
 * and is not a cancellation point. */
bool hci_write_all(int fd, const char *buf, size_t len);
/* Writes to the report stream (hci_log_stream_fd); false when it has none
 * or the write failed. */
bool hci_diag_write(const char *buf, size_t len);
/* Formats into a stack buffer and writes once to fd (messages do not interleave). */
void hci_fdprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes to the diagnostic fd (stderr, or its duplicate kept by the checker). */
void hci_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "heapcheck: <message>\n" then abort().  Never returns. */
void hci_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, cold));
/* "heapcheck: warning: <message>\n". */
void hci_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* The report stream's own descriptor (-1 until hci_log_stream_open).  Write
 * through hci_log_stream_fd(), which checks it still is the stream. */
extern int hci_diag_fd;

/* ======================= log_stream.c ======================= */
/* Chooses the report stream's destination (HEAPCHECK_LOG_PATH file, a
 * launcher tree's report file, or a duplicate of stderr) and sets
 * hci_diag_fd; idempotent.  The fork child hook opens the child's own file. */
void hci_log_stream_open(void);
void hci_log_stream_fork_child(void);
bool hci_log_stream_to_file(void);
const char *hci_log_stream_path(void);   /* the log file, NULL when stderr */
int hci_log_stream_stderr(void);         /* the original stderr (a kept duplicate); -1 when gone */
/* The descriptor to write the report stream to now, -1 when it has none.
 * Before hci_log_stream_open (neither checker nor profiler on): 2.  After:
 * the kept descriptor, checked to still be the file it was opened on (a
 * program's close_range or dup2 over it is noticed; a copy of the original
 * stderr or the log file is made again when it can be), never whatever file
 * the program got on fd 2 later.  See log_stream.c for the rules. */
int hci_log_stream_fd(void);
bool hci_log_stream_in_tree(void);       /* HEAPCHECK_TREE: a launcher follows the tree */
const char *hci_log_stream_tree_dir(void); /* its directory, NULL outside a tree */
bool hci_log_stream_tree_top(void);      /* the program the launcher started */

/* ======================= options.c ======================= */
/* Reads the environment by scanning environ (no getenv, no malloc).
 * Values of setuid/setgid programs are ignored (all variables read as unset). */
const char *hci_env_get(const char *name);
/* Integer with optional K/M/G suffix; a malformed or out-of-range value
 * prints a warning naming the variable and the default, then returns def. */
long long hci_env_int(const char *name, long long def, long long min, long long max);
/* gperftools' EnvToBool: t/T/y/Y/1 or empty = true; f/F/n/N/0 = false;
 * anything else warns and returns def. */
bool hci_env_bool(const char *name, bool def);
/* True when the process runs setuid or setgid (AT_SECURE). */
bool hci_is_secure(void);

/* ======================= os.c ======================= */
void *hci_os_map(size_t size);                 /* anonymous RW mapping or NULL; errno preserved */
void *hci_os_map_aligned(size_t size, size_t align); /* aligned anonymous RW mapping or NULL */
void hci_os_unmap(void *p, size_t size);
/* The lowest mapping made by hci_os_map (not the heap's) that ends above
 * addr: [*lo, *hi), lo may be above addr.  Lock-free. */
bool hci_os_owned_next(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);
bool hci_os_owned_complete(void);              /* every such mapping is remembered */
void hci_os_release(void *p, size_t size);     /* MADV_DONTNEED: give the pages back, keep the range */
int hci_os_tid(void);
uint64_t hci_os_now_ns(void);                  /* CLOCK_MONOTONIC in ns */
uint64_t hci_os_now_coarse_ns(void);           /* CLOCK_MONOTONIC_COARSE: same clock, tick resolution, cheaper */
/* Fault-proof reads of memory we do not own (no signal handler, no lock, no
 * malloc).  hci_os_read copies [src, src + n) to dst up to the first byte
 * that cannot be read and returns how many bytes it copied: process_vm_readv
 * on ourselves, or, where that is refused, a page probe before each page's
 * memcpy.  hci_os_probe: the 8 bytes at addr are readable (one syscall). */
size_t hci_os_read(void *dst, uintptr_t src, size_t n);
bool hci_os_probe(uintptr_t addr);

/* ======================= meta.c ======================= */
/* Metadata arena: zeroed, 16-byte aligned memory that never comes from the
 * user heap.  Small sizes are recycled through size-binned free lists. */
void *hci_meta_alloc(size_t size);             /* NULL when the OS refuses */
void hci_meta_free(void *p, size_t size);      /* size must equal the allocation's */
hc_span_t *hci_span_new(void);                 /* zeroed span record */
void hci_span_delete(hc_span_t *s);
size_t hci_meta_bytes(void);                   /* bytes mapped for metadata */
bool hci_meta_owns(uintptr_t addr);            /* addr lies in a metadata mapping */
void hci_meta_fork_prepare(void);
void hci_meta_fork_parent(void);
void hci_meta_fork_child(void);

/* ======================= size_classes.c ======================= */
extern const hc_class_info_t hci_classes[HC_NUM_CLASSES];
extern const uint8_t hci_class_lookup[HC_CLASS_LOOKUP_LEN];
/* requires: size <= HC_MAX_SMALL. */
static inline size_t hci_class_index(size_t size) {
  return size <= 1024 ? (size + 15) >> 4 : (size + 127 + (56 << 7)) >> 7;
}
static inline unsigned hci_size_class(size_t size) { return hci_class_lookup[hci_class_index(size)]; }

/* ======================= pagemap.c ======================= */
/* page number -> {span, info}.  info = span start | size class for pages of
 * SMALL spans (start is page aligned, so the class fits in the low byte) and
 * 0 for every other page: the free fast path reads only info and finds the
 * object start without touching the span.  Every page of every span, free
 * or in use, maps to its span.  Readers take no lock; writers hold the
 * page-heap lock.  Leaves are never freed. */
typedef struct hc_pm_entry {
  uintptr_t span;  /* hc_span_t * of the page, or 0 */
  uintptr_t info;  /* SMALL: span start | class; else 0 */
} hc_pm_entry_t;
extern _Atomic(hc_pm_entry_t *) hci_pagemap_root[HC_PM_ROOT_LEN];
#define HC_PM_CLASS_MASK ((uintptr_t)0xff)
static inline const hc_pm_entry_t *hci_pagemap_find(uintptr_t addr) {
  uintptr_t root = addr >> (HC_PAGE_SHIFT + HC_PM_LEAF_BITS);
  if (hc_unlikely(root >= HC_PM_ROOT_LEN)) return NULL;
  hc_pm_entry_t *leaf = atomic_load_explicit(&hci_pagemap_root[root], memory_order_acquire);
  if (hc_unlikely(leaf == NULL)) return NULL;
  return &leaf[(addr >> HC_PAGE_SHIFT) & (HC_PM_LEAF_LEN - 1)];
}
static inline hc_span_t *hci_pagemap_span(uintptr_t addr) {
  const hc_pm_entry_t *e = hci_pagemap_find(addr);
  return e ? (hc_span_t *)__atomic_load_n(&e->span, __ATOMIC_RELAXED) : NULL;
}
/* Size class of the page holding addr (0: not a small-object page). */
static inline unsigned hci_pagemap_class(uintptr_t addr) {
  const hc_pm_entry_t *e = hci_pagemap_find(addr);
  return e ? (unsigned)(__atomic_load_n(&e->info, __ATOMIC_RELAXED) & HC_PM_CLASS_MASK) : 0;
}
/* Map pages [first, first + n) to span s with class cls.  Returns false when
 * a leaf cannot be allocated.  requires: page-heap lock. */
bool hci_pagemap_set(uintptr_t first_page, size_t n, hc_span_t *s, unsigned cls);
/* Make sure leaves exist for the range (called when the heap grows). */
bool hci_pagemap_ensure(uintptr_t first_page, size_t n);

/* ======================= span lists (page_heap.c, central.c) ======================= */
/* Circular doubly linked lists of spans through next/prev, with a sentinel.
 * The caller holds the lock that guards the list. */
static inline void hci_span_list_init(hc_span_t *h) { h->next = h->prev = h; }
static inline bool hci_span_list_empty(const hc_span_t *h) { return h->next == h; }
static inline void hci_span_list_remove(hc_span_t *s) {
  s->prev->next = s->next;
  s->next->prev = s->prev;
  s->next = s->prev = NULL;
}
static inline void hci_span_list_push(hc_span_t *h, hc_span_t *s) {
  s->next = h->next;
  s->prev = h;
  h->next->prev = s;
  h->next = s;
}

/* ======================= page_heap.c ======================= */
extern hc_pageheap_t hci_pageheap;
/* A span of npages pages in state LARGE with no class (caller sets fields and
 * pagemap class).  NULL on failure.  Takes the page-heap lock. */
hc_span_t *hci_ph_alloc(size_t npages);
/* Same, with span->start a multiple of align (a power of two > page size). */
hc_span_t *hci_ph_alloc_aligned(size_t npages, size_t align);
/* Returns a span to the page heap, coalescing with free neighbours. */
void hci_ph_free(hc_span_t *s);
/* Grows the in-use LARGE span s to npages in place, taking the pages from
 * the free span right after it.  False (s unchanged) when that span is not
 * free or too short.  realloc's growth path: no copy, no second span. */
bool hci_ph_grow(hc_span_t *s, size_t npages);
/* Same with the lock held; s is not counted in use (growth, release). */
void hci_ph_free_locked(hc_span_t *s);
/* Set the pagemap class of every page of an allocated span (SMALL spans). */
void hci_ph_set_class(hc_span_t *s, unsigned cls);
/* Gives up to max_bytes of free committed pages back to the OS (0 = all). */
size_t hci_ph_release(size_t max_bytes);
/* Committed free bytes above which hci_ph_free releases (down to half of it):
 * in-use bytes / 8 clamped to [HC_RELEASE_MIN, HC_RELEASE_MAX].  Takes the page-heap lock. */
size_t hci_ph_release_threshold(void);

/* ======================= central.c ======================= */
extern hc_central_t hci_central[HC_NUM_CLASSES];
/* Takes a chain of objects of class cls: a whole chain from a transfer slot
 * when there is one (any length), else up to `want` objects from spans.
 * Returns false only when memory is exhausted. */
bool hci_central_remove(unsigned cls, uint32_t want, hc_chain_t *out);
/* Takes back a chain (any length) of objects of class cls. */
void hci_central_insert(unsigned cls, const hc_chain_t *chain);
/* Number of objects held in transfer slots and span free lists (stats). */
size_t hci_central_free_objects(unsigned cls);
/* Gives every transfer-slot batch back to its spans (malloc_trim). */
void hci_central_drain(void);
/* Bytes held in transfer slots, all classes together (bounded by
 * HC_SLOT_BYTES_TOTAL_MAX; read by tests and stats). */
size_t hci_central_slot_bytes(void);

/* ======================= thread_cache.c ======================= */
extern HC_TLS hc_tcache_t *hci_tc;           /* never NULL: the static empty cache until first use */
extern hc_tcache_t hci_tc_empty;             /* shared, all lists empty, all max 0 */
extern hci_lock_t hci_tc_registry_lock;
extern hc_tcache_t *hci_tc_registry;         /* live caches; guarded by hci_tc_registry_lock */
/* The calling thread's cache, created on first use; NULL while the thread is
 * exiting (after its cache was flushed) or when out of memory. */
hc_tcache_t *hci_tc_get(void);
/* Slow paths of the fast paths in alloc.c. */
void *hci_tc_refill(hc_tcache_t *tc, unsigned cls);  /* requires: list cls empty */
void hci_tc_push(hc_tcache_t *tc, unsigned cls, void *p);
/* Gives every object of the cache back to central (thread exit, trim). */
void hci_tc_flush(hc_tcache_t *tc);
/* Sets lists[].lim of every live cache from cap[] (normal) or 0 (checker). */
void hci_tc_set_fastpath(bool enabled);
size_t hci_tc_total_bytes(void);
size_t hci_tc_count(void);
void hci_tc_fork_child(void);
/* Creates the thread-exit key (called by hci_init). */
void hci_tc_thread_init(void);

/* ======================= sampler.c ======================= */
extern _Atomic uint64_t hci_sample_interval;  /* mean bytes between samples; 0 = off */
/* Draws the next geometric gap for tc (sets tc->sample_left).  Returns the
 * weight the sample just taken stands for. */
void hci_sampler_reset(hc_tcache_t *tc);
uint64_t hci_sampler_next_gap(hc_tcache_t *tc);
void hci_sampler_init(void);

/* ======================= unwind.c / unwind_dwarf.c ======================= */
enum { HC_UNWIND_FP = 0, HC_UNWIND_DWARF = 1 };
extern int hci_unwinder;                     /* HEAPCHECK_UNWINDER */
/* HEAPCHECK_UNWINDER=auto (the default): allocation stacks are walked by
 * frame pointers, and again with the DWARF unwinder when the frame-pointer
 * walk stops right after the caller of malloc (code built without frame
 * pointers, such as Debian's binaries). */
extern bool hci_unwind_fallback;
/* Return addresses of the caller's callers: pcs[0] is the return address in
 * the function that called the function that called hci_backtrace, after
 * skipping `skip` more frames.  Never faults, never allocates. */
int hci_backtrace(uintptr_t *pcs, int max, int skip);
int hci_unwind_fp(uintptr_t *pcs, int max, uintptr_t fp, uintptr_t sp);
int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip);
/* The stack from the frame that returns to ra: pcs[0] = ra, then its
 * callers by DWARF.  The frame is found through the allocator's own frame
 * pointers (a few steps, no CFI lookups); when it is not among them, a
 * whole DWARF walk from here, in which the caller looks for ra.  memo (may
 * be NULL): the calling thread's last walk, checked and replaced. */
int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo);
/* Whether the function ra returns into keeps a frame pointer there (its CFA
 * is rbp-based per .eh_frame): a frame-pointer walk through it is sound.
 * False for -fomit-frame-pointer code, whose frames such a walk silently
 * skips when it leaves rbp alone.  True when DWARF is unavailable. */
bool hci_unwind_keeps_fp(uintptr_t ra);
void hci_unwind_init(void);

/* ======================= unwind_obj.c ======================= */
/* The module covering a PC, as the DWARF unwinder needs it: every table read
 * is checked against seg_lo/seg_hi (the readable PT_LOAD segments), and the
 * .eh_frame_hdr search table against hdr_hi (its segment's size). */
#define HCI_EH_SEGS 8
typedef struct hci_eh_obj {
  uintptr_t map_lo, map_hi; /* the module's extent */
  uintptr_t hdr, hdr_hi;    /* .eh_frame_hdr; hdr == 0: none */
  uintptr_t nseg;           /* 0: headers unusable, nothing may be read */
  uintptr_t seg_lo[HCI_EH_SEGS], seg_hi[HCI_EH_SEGS];
} hci_eh_obj_t;
/* 1 and *o filled when a module covers pc, 0 otherwise.  Lock-free, no
 * malloc; static executables are described from AT_PHDR (libc.a's
 * _dl_find_object is not usable before its init, which mallocs). */
int hci_eh_find(uintptr_t pc, hci_eh_obj_t *o);
bool hci_eh_available(void);   /* hci_eh_find can find modules */
bool hci_eh_static_exe(void);  /* the process is a statically linked executable */
void hci_eh_cache_clear(void); /* after dlclose */
/* [a, a + n) lies inside one readable segment of o. */
static inline bool hci_eh_readable(const hci_eh_obj_t *o, uintptr_t a, size_t n) {
  for (uintptr_t i = 0; i < o->nseg; i++)
    if (a >= o->seg_lo[i] && a < o->seg_hi[i] && n <= o->seg_hi[i] - a) return true;
  return false;
}

/* ======================= stackdepot.c ======================= */
#define HC_STACK_NONE 0u
#define HC_STACK_UNKNOWN 1u
/* Deduplicates a stack; returns its id (>= 2), or HC_STACK_UNKNOWN on n == 0
 * or when out of memory.  Lock-free lookup; safe inside malloc. */
uint32_t hci_depot_put(const uintptr_t *pcs, int n);
/* The frames of id; returns the depth (0 for NONE/UNKNOWN). */
int hci_depot_get(uint32_t id, const uintptr_t **pcs);
size_t hci_depot_bytes(void);
size_t hci_depot_count(void);

/* ---- unwind / depot: extra services ---- */
/* hci_unwind_fp that first drops `skip` frames. */
int hci_unwind_fp_skip(uintptr_t *pcs, int max, int skip, uintptr_t fp, uintptr_t sp);
/* Address of the frame record {saved fp, return address} whose return
 * address is ra, within `max` frames of the chain from fp; 0 if none. */
uintptr_t hci_unwind_fp_find(uintptr_t ra, int max, uintptr_t fp, uintptr_t sp);
/* End (exclusive) of the stack region that contains sp (the current thread's):
 * every byte of [sp, end) is readable.  0 when unknown.  Cached per thread; the
 * slow path probes pages with a syscall (no malloc, no lock, no /proc). */
uintptr_t hci_unwind_stack_hi(uintptr_t sp);
/* True when the DWARF unwinder can run (_dl_find_object present, x86-64). */
bool hci_unwind_dwarf_available(void);
/* Forgets every cached per-PC unwind rule (after dlclose; cold benchmarks). */
void hci_unwind_dwarf_cache_clear(void);
/* The depot lock, for fork (prepare/parent) and hci_lock_all, in lock order. */
void hci_depot_lock(void);
void hci_depot_unlock(void);
void hci_depot_fork_child(void);

/* ======================= alloc.c ======================= */
/* Entry points behind the exported family; ra = the caller's return address
 * (first frame of recorded stacks).  Semantics as glibc's. */
void *hci_malloc_ra(size_t size, uintptr_t ra);
void *hci_calloc_ra(size_t n, size_t size, uintptr_t ra);
void *hci_realloc_ra(void *p, size_t size, uintptr_t ra);
void *hci_memalign_ra(size_t align, size_t size, uintptr_t ra); /* align: power of two */
void hci_free_ra(void *p, uintptr_t ra);
size_t hci_usable_size(const void *p);
/* Requested size of a live object (exact in checker mode and for large objects). */
size_t hci_requested_size(const void *p);
/* Recording state. 0 = off; otherwise every allocation records its stack. */
extern int hci_record_all;
extern _Atomic uint16_t hci_epoch;            /* current checker epoch */
/* The live sampled spans (for profiles) and the stash of free one-page
 * sample spans, on one cache line with their lock: every sample and every
 * sampled free touches all three.  Guarded by lock. */
typedef struct hci_samples {
  hci_lock_t lock;
  hc_span_t *head;   /* live sampled spans, doubly linked through snext/sprev, NULL-terminated */
  hc_span_t *stash;  /* free sample spans (HC_SPAN_STASHED), linked through next */
  size_t stash_len;
} __attribute__((aligned(64))) hci_samples_t;
extern hci_samples_t hci_samples;
/* Free one-page spans kept for sampled objects: give them all back to the
 * page heap (malloc_trim; returns the bytes), and their size (stats). */
size_t hci_sample_stash_drain(void);
size_t hci_sample_stash_bytes(void);
/* Stack id of the current call stack, starting at the frame whose return
 * address is ra (allocator frames dropped). */
uint32_t hci_capture_stack_from(uintptr_t ra);
uint32_t hci_capture_stack(void);

/* ======================= init.c ======================= */
/* Process-wide initialisation, run once on the first allocation or from the
 * library constructor, whichever comes first. */
void hci_init(void);
extern _Atomic int hci_init_state;             /* 0 none, 1 running, 2 done */
static inline void hci_ensure_init(void) {
  if (hc_unlikely(atomic_load_explicit(&hci_init_state, memory_order_acquire) != 2)) hci_init();
}
/* The checker's and the profiler's process init (checker/leaks.c, profile.c).
 * Strong references, so a static link always pulls them in and HEAPCHECK /
 * HEAPPROFILE work in statically linked programs too. */
void hci_checker_init(void);
void hci_profiler_init(void);

/* ======================= walk.c ======================= */
/* Every allocator lock, in the documented order (after the caller's own). */
void hci_lock_all(void);
void hci_unlock_all(void);
/* Live object containing addr (interior pointers allowed).  Returns false for
 * free memory and non-heap addresses.  Safe with all locks held. */
typedef struct hci_obj {
  uintptr_t start;        /* first byte */
  size_t size;            /* requested size when known, else usable size */
  hc_objmeta_t *meta;     /* record (NULL when the object has none) */
  hc_span_t *span;
  uint32_t index;         /* object index in its span (0 for LARGE) */
} hci_obj_t;
bool hci_find_object(uintptr_t addr, hci_obj_t *out);
/* Calls fn for every allocated object that has a record (stack_id != 0).
 * requires: all allocator locks held (hci_lock_all) or the world stopped. */
typedef void (*hci_obj_fn)(void *ctx, const hci_obj_t *obj);
void hci_for_each_object(hci_obj_fn fn, void *ctx);
/* Calls fn for every span in use (SMALL and LARGE).  Same requirement. */
typedef void (*hci_span_fn)(void *ctx, hc_span_t *s);
void hci_for_each_span(hci_span_fn fn, void *ctx);

/* ======================= stats.c ======================= */
struct hc_stats;
void hci_stats_get(struct hc_stats *out);
void hci_stats_print(int fd);

/* ======================= checker/profile.c: hooks called by alloc.c ======================= */
/* A sampled allocation, after its span is linked on hci_samples.head
 * (weight = the mean interval it was sampled with); returns the bytes the
 * sample stands for, which the span keeps (sample_est) and hands to the
 * sampled free, before its record is cleared.  Never call malloc; take only
 * the profiler's bucket lock (after hci_samples.lock, before the meta arena). */
uint64_t hci_profile_note_alloc(uint32_t stack_id, size_t size, uint64_t weight) __attribute__((weak));
void hci_profile_note_free(uint64_t est) __attribute__((weak));
/* After note_alloc, with no allocator lock held: checks the HEAPPROFILE
 * dump thresholds and the HEAPPROFILESIGNAL flag and may write a profile
 * file (open/write, no malloc; takes the profiler lock, then allocator locks). */
void hci_profiler_on_sample(void) __attribute__((weak));
/* Bytes a sample of `size` bytes taken with mean interval `weight` stands
 * for: size / (1 - exp(-size / weight)); size itself when weight <= 1. */
double hci_profile_estimate(size_t size, uint64_t weight);

#endif
