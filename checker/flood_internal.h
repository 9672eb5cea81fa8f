/* flood_internal.h - what the modules of one leak check's flood share
 * (flood.c: driver, memory, marks; flood_scan.c: the scan loop and safe
 * reads; flood_roots.c: roots; flood_classify.c: possibly lost, leaks,
 * direct/indirect).  Only checker/flood*.c include it.
 *
 * The heap is read only through the heap view (hc_heap_view.h); the marks
 * are the flood's own table (one byte per slot, found by span id), which
 * the allocator never sees.
 * Invariants: marks exist only during a check; marks and
 * the frontier live in hci_os_map memory (the meta arena lock is held by
 * hci_lock_all); nothing here calls malloc, stdio or takes a lock.
 */
#ifndef HC_FLOOD_INTERNAL_H
#define HC_FLOOD_INTERNAL_H

#include <string.h>

#include "hc_checker.h"

// ---- mark byte ----
#define M_LIVE 0x01     /* reachable (or a root) and scanned */
#define M_FREE 0x02     /* no live object there (seen during the check) */
#define M_LEAK 0x04     /* unreachable and in the check's scope */
#define M_OLD 0x08      /* unreachable, allocated before the check's start */
#define M_INDIRECT 0x10 /* a leak another leak points to */
#define M_COVERED 0x20  /* reached from a direct leak (classification) */
#define M_PENDING 0x40  /* reached so far only by a pointer into its middle: not scanned yet */
#define M_POSSIBLE 0x80 /* with M_LIVE: reached only through chains with an interior pointer */

#define SCRATCH ((size_t)64 << 10)
#define SCRATCH_VEC (SCRATCH + 4096)   /* scan_copy reads up to 14 bytes past a SCRATCH piece */
#define RES_WINDOW ((uintptr_t)128 << 20) /* the reach of one mincore call of scan_copied */
#define SCRATCH_MAP (SCRATCH_VEC + RES_WINDOW / 4096) /* then mincore's answer: a byte a page */
#define PCACHE 256                   /* pages drain_careful keeps copied (1 MiB) */
#define PM_WIN 512                   /* pagemap entries read at once (2 MiB of addresses, 4 KiB) */
#define PM_SLOTS 32                  /* windows kept (hci_fl_push_populated) */
#define HCI_FL_PM_BYTES (PM_SLOTS * (PM_WIN * sizeof(uint64_t) + sizeof(uintptr_t)))

typedef struct work {
  uintptr_t lo;
  size_t size;
} work_t;

typedef struct ldso_ent {
  uint32_t id;
  uint8_t is_root;
} ldso_ent_t;
#define LDSO_CACHE 4096

/* The leak graph (classification): leak i's words point to the leaks
 * to[off[i] .. off[i+1]) (indexes into the address-sorted leaks). */
typedef struct leak_graph {
  size_t *off;
  uint32_t *to;
  size_t nto, to_cap;
  uint32_t from;   /* the leak whose words are being scanned */
  bool failed;     /* out of memory: the graph is incomplete */
} leak_graph_t;

typedef struct flood {
  const hci_flood_params_t *p;
  hci_flood_result_t *r;
  uintptr_t heap_lo, heap_span;   /* prefilter: v - heap_lo < heap_span */
  uintptr_t maxoff;               /* interior offset limit */
  hc_span_t **spans;              /* spans in use (heap view handles) */
  size_t nspans, spans_map;
  hci_heap_marks_t mk;            /* {slot0}: what the view's lookup indexes */
  uint8_t *marks;                 /* one byte per slot with a record */
  size_t marks_map;
  uint8_t **slot0;                /* span id -> its slot 0's mark, NULL: none */
  size_t slot0_map;
  work_t *stack;                  /* the frontier */
  size_t sp, cap;
  ldso_ent_t *ldso;               /* stack id -> allocated by ld.so / suppressed */
  uintptr_t *scratch;             /* SCRATCH bytes: safe copies of unstable root ranges */
  uint8_t covered_mode;           /* drain(): main flood (0), classification (1), leak graph edges (2) */
  leak_graph_t *graph;            /* covered_mode 2: where the edges go */
  /* What may be read: the readable mappings of the snapshot taken with the
   * world stopped, merged and sorted (rd); cur_lo/cur_hi is
   * the one the last read fell in (the fast path: two compares a range). */
  hci_readable_t rd;
  uintptr_t cur_lo, cur_hi;
  bool careful;                   /* a thread runs: mappings may change, every read is copied */
  uintptr_t skip_end;             /* end of the last range skipped */
  uintptr_t bat_lo, bat_hi;       /* drain_careful's last readable mapping */
  uint8_t *pcache;                /* drain_careful's page copies... */
  uintptr_t *pc_page;             /* ...and the page each one holds */
  hci_leak_t *leader;             /* classification: the leak whose flood runs */
  bool track_possible;            /* no offset limit: interior-only objects are "possibly lost" */
  uint8_t live_mark;              /* what consider() marks: M_LIVE, or M_LIVE | M_POSSIBLE */
  size_t npending;                /* objects marked M_PENDING (some may have become live since) */
  int pagemap_fd;                 /* /proc/self/pagemap + 1 (0: none; see hci_fl_push_populated) */
  uint64_t *pm_cache;             /* its windows (flood_scan.c), then... */
  uintptr_t *pm_win;              /* ...the window each slot holds, plus one (0: none) */
  /* Mappings registered with userfaultfd (smaps' VmFlags), read at the
   * first file or shared mapping a root range lies in (flood_roots.c):
   * uffd_state 0 not read, 1 read, 2 unknown or too many (every such
   * mapping counts as registered). */
  int uffd_state, uffd_n;
  uintptr_t uffd_lo[16], uffd_hi[16];
} flood_t;

/* Objects and root ranges are scanned CHUNK bytes at a time, the rest pushed
 * back first: what a chunk reaches is scanned before the remainder, so the
 * frontier stays small even for a table of millions of pointers (every
 * frontier page costs a page fault). */
#define CHUNK ((size_t)4096)

// ---- flood.c: memory ----
/* A new mapping of new_bytes with old's old_bytes copied, old unmapped; NULL (old kept) on failure. */
void *hci_fl_grow(void *old, size_t old_bytes, size_t new_bytes);
bool hci_fl_grow_stack(flood_t *f);
bool hci_fl_add_leak(flood_t *f, uintptr_t addr, size_t size, uint32_t stack);
/* A "possibly lost" object, for the report's records (r->possible). */
bool hci_fl_add_possible(flood_t *f, uintptr_t addr, size_t size, uint32_t stack);

static inline void push(flood_t *f, uintptr_t lo, size_t size) {
  if (hc_unlikely(f->sp == f->cap) && !hci_fl_grow_stack(f)) return;
  f->stack[f->sp].lo = lo;
  f->stack[f->sp].size = size;
  f->sp++;
}

/* A heap object on the frontier.  One that holds whole pages goes through
 * hci_fl_push_populated: its pages that were never populated are left out
 * (see flood_scan.c). */
void hci_fl_push_populated(flood_t *f, uintptr_t lo, size_t size);
/* Whether page a is in the program's page tables (present or swapped), or
 * that cannot be told (no pagemap): flood_roots.c's file mappings. */
bool hci_fl_page_mapped(flood_t *f, uintptr_t a);
static inline void push_obj(flood_t *f, uintptr_t lo, size_t size) {
  if (hc_unlikely(size >= 4096)) hci_fl_push_populated(f, lo, size);
  else push(f, lo, size);
}

/* A root or a newly reached object: marked live, counted, on the frontier. */
static inline void mark_live(flood_t *f, uint8_t *m, uintptr_t start, size_t size) {
  *m = M_LIVE;
  f->r->reach_objects++;
  f->r->reach_bytes += size;
  push_obj(f, start, size);
}

/* Index of the first zero mark in mk[k..n) (n when none): 8 marks per step,
 * since after the flood nearly every mark is set. */
static inline uint32_t next_zero(const uint8_t *mk, uint32_t k, uint32_t n) {
  while (k + 8 <= n) {
    uint64_t x;
    memcpy(&x, mk + k, sizeof x);
    if ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) break; /* has a zero byte */
    k += 8;
  }
  while (k < n && mk[k]) k++;
  return k;
}

/* The slots of the check's spans, each with its mark and record:
 * for_each_unmarked visits those whose mark is still 0 (8 marks a step: after
 * the flood nearly every mark is set), for_each_slot every one.  fn may mark
 * and drain: marks are read again at every step. */
typedef void (*fl_slot_fn)(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec);
/* Span s's marks (slot k: [k]), or NULL when it has none. */
static inline uint8_t *span_marks(const flood_t *f, const hc_span_t *s) {
  return f->slot0[hci_heap_span_id(s)];
}
static inline void fl_visit(flood_t *f, fl_slot_fn fn, bool unmarked_only) {
  hci_heap_slot_t o;
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    uint8_t *mk = span_marks(f, s);
    if (!mk) continue;
    uint32_t n = (uint32_t)hci_heap_span_slots(s);
    for (uint32_t k = unmarked_only ? next_zero(mk, 0, n) : 0; k < n;
         k = unmarked_only ? next_zero(mk, k + 1, n) : k + 1) {
      hci_heap_span_slot(s, k, &o);
      fn(f, &mk[k], &o, hci_heap_slot_record(&o));
    }
  }
}
static inline void for_each_unmarked(flood_t *f, fl_slot_fn fn) { fl_visit(f, fn, true); }
static inline void for_each_slot(flood_t *f, fl_slot_fn fn) { fl_visit(f, fn, false); }

// ---- flood_scan.c: the scan loop, safe reads ----
void hci_fl_setup_readable(flood_t *f, const hci_maps_t *maps);
/* Scans the words of [lo, hi), reading each at its address + delta. */
void hci_fl_scan_main(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta);
/* Scans [lo, hi) of memory the checker does not own (main flood). */
void hci_fl_scan_range(flood_t *f, uintptr_t lo, uintptr_t hi);
/* Scans every object on the frontier until it is empty. */
void hci_fl_drain(flood_t *f);

// ---- flood_roots.c ----
void hci_fl_root_cb(void *ctx, uintptr_t lo, uintptr_t hi, hci_root_kind_t kind);
void hci_fl_scan_region(flood_t *f, const hci_maps_t *maps, uintptr_t lo, uintptr_t hi);
void hci_fl_push_ignored(flood_t *f);
void hci_fl_push_extra_roots(flood_t *f);

// ---- flood_classify.c ----
/* The classification flood's scan of [lo, hi) (words read at + delta). */
void hci_fl_scan_leaks(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta);
void hci_fl_flood_possible(flood_t *f);
void hci_fl_collect_leaks(flood_t *f);
void hci_fl_classify(flood_t *f);
/* The live object v points into (the flood's interior rules): its mark, start and size; NULL otherwise. */
uint8_t *hci_fl_resolve(flood_t *f, uintptr_t v, uintptr_t *start, size_t *size);
/* The leak starting at addr (leaks sorted by address), or NULL. */
hci_leak_t *hci_fl_find_leak(flood_t *f, uintptr_t addr);

// ---- flood_scc.c ----
/* covered_mode 2's scan of [lo, hi) (words read at + delta): edges from graph->from. */
void hci_fl_scan_edges(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta);
/* A mapping of *map bytes whose first nleaks bytes say, per leak (sorted by
 * address), whether it leads a leaked structure: it is the lowest-addressed
 * member of a strongly connected component of the leak graph that no leak
 * outside the component points to.  NULL when memory runs out. */
uint8_t *hci_fl_structure_leaders(flood_t *f, size_t *map);

#endif
