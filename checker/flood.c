/* flood.c - the stopped-world part of a leak check: mark everything that is
 * reachable from the roots, then classify what is not (design D13, D14).
 *
 *   1. lock every allocator lock, stop the world (hci_world_stop);
 *   2. list the spans in use and give each a mark array (one byte per carved
 *      object, one per large span) in memory from hci_os_map;
 *   3. roots: ignored objects, registered regions, globals and threads (as
 *      the mode says); each root range is scanned and the frontier drained;
 *   4. objects allocated by ld.so (DTV, dynamic TLS) and objects whose stack
 *      is suppressed are roots too: they are found among the objects still
 *      unmarked, so the common case pays nothing per object;
 *   5. what stays unmarked is unreachable: in scope (epoch) it is a leak,
 *      else an old object that is neither reported nor scanned;
 *   6. indirect pass (LSan): a leak pointed to by another leak is indirect;
 *      then every leaked structure that only cycles reach gets one direct
 *      representative, so each leak is covered by a direct one (LSan would
 *      call a whole cycle indirect and print no direct leak for it);
 *   7. copy the leaks out, drop the marks, resume the world, unlock.
 *
 * The scan loop is the hot spot (a 1 GiB heap is 134 M words): one unsigned
 * range compare per word, then the inline pagemap lookup, a mark byte and
 * the object's record; no function call per word, no lock.
 *
 * Invariants: outside a check every span's marks pointer is NULL; marks and
 * the frontier live in hci_os_map memory (the meta arena lock is held by
 * hci_lock_all); nothing here calls malloc, stdio or takes a lock.
 * Locks: requires the checker lock; takes all allocator locks itself.
 */
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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
#define SCRATCH_MAP (SCRATCH + 4096) /* scan_copy reads up to 14 bytes past a SCRATCH piece */
#define PCACHE 256                   /* pages drain_careful keeps copied (1 MiB) */

typedef struct work {
  uintptr_t lo;
  size_t size;
} work_t;

typedef struct ldso_ent {
  uint32_t id;
  uint8_t is_root;
} ldso_ent_t;
#define LDSO_CACHE 4096

typedef struct flood {
  const hci_flood_params_t *p;
  hci_flood_result_t *r;
  uintptr_t heap_lo, heap_span;   /* prefilter: v - heap_lo < heap_span */
  uintptr_t maxoff;               /* interior offset limit */
  hc_span_t **spans;              /* spans in use */
  size_t nspans, spans_map;
  uint8_t *marks;
  size_t marks_map;
  work_t *stack;                  /* the frontier */
  size_t sp, cap;
  ldso_ent_t *ldso;               /* stack id -> allocated by ld.so / suppressed */
  uintptr_t *scratch;             /* SCRATCH bytes: safe copies of unstable root ranges */
  uint8_t covered_mode;           /* drain(): main flood (0) or classification (1) */
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
} flood_t;

// ---- memory ----

static void *grow(void *old, size_t old_bytes, size_t new_bytes) {
  void *n = hci_os_map(new_bytes);
  if (!n) return NULL;
  if (old) {
    memcpy(n, old, old_bytes);
    hci_os_unmap(old, old_bytes);
  }
  return n;
}

static hc_noinline bool grow_stack(flood_t *f) {
  size_t ncap = f->cap ? f->cap * 2 : 65536;
  work_t *n = grow(f->stack, f->cap * sizeof(work_t), ncap * sizeof(work_t));
  if (!n) {
    f->r->oom = true;
    return false;
  }
  f->stack = n;
  f->cap = ncap;
  return true;
}

static inline void push(flood_t *f, uintptr_t lo, size_t size) {
  if (hc_unlikely(f->sp == f->cap) && !grow_stack(f)) return;
  f->stack[f->sp].lo = lo;
  f->stack[f->sp].size = size;
  f->sp++;
}

static hc_noinline bool add_leak(flood_t *f, uintptr_t addr, size_t size, uint32_t stack) {
  hci_flood_result_t *r = f->r;
  if ((r->nleaks + 1) * sizeof(hci_leak_t) > r->leaks_map) {
    size_t nb = r->leaks_map ? r->leaks_map * 2 : 65536 * sizeof(hci_leak_t);
    hci_leak_t *n = grow(r->leaks, r->leaks_map, nb);
    if (!n) {
      r->oom = true;
      return false;
    }
    r->leaks = n;
    r->leaks_map = nb;
  }
  hci_leak_t *l = &r->leaks[r->nleaks++];
  l->addr = addr;
  l->size = size;
  l->stack_id = stack;
  l->kind = HCI_LEAK_DIRECT;
  l->owned_bytes = l->owned_objects = 0;
  return true;
}

// ---- spans and marks ----

static void count_span(void *ctx, hc_span_t *s) {
  (void)s;
  ((flood_t *)ctx)->nspans++;
}

static void collect_span(void *ctx, hc_span_t *s) {
  flood_t *f = ctx;
  if (f->nspans * sizeof(hc_span_t *) < f->spans_map) f->spans[f->nspans++] = s;
}

static size_t span_slots(const hc_span_t *s) {
  if (s->state == HC_SPAN_LARGE) return 1;
  return s->objmeta ? s->carved : 0; /* no records: nothing to mark or report */
}

static bool setup_marks(flood_t *f) {
  f->nspans = 0;
  hci_for_each_span(count_span, f);
  size_t n = f->nspans + 16;
  f->spans_map = (n * sizeof(hc_span_t *) + 4095) & ~(size_t)4095;
  f->spans = hci_os_map(f->spans_map);
  if (!f->spans) return false;
  f->nspans = 0;
  hci_for_each_span(collect_span, f);
  size_t total = 0;
  for (size_t i = 0; i < f->nspans; i++) total += span_slots(f->spans[i]);
  f->marks_map = (total + 4096) & ~(size_t)4095;
  f->marks = hci_os_map(f->marks_map);
  if (!f->marks) return false;
  size_t at = 0;
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    size_t k = span_slots(s);
    s->marks = k ? f->marks + at : NULL;
    at += k;
  }
  return true;
}

static void drop_marks(flood_t *f) {
  for (size_t i = 0; i < f->nspans; i++) f->spans[i]->marks = NULL;
  if (f->marks) hci_os_unmap(f->marks, f->marks_map);
  if (f->spans) hci_os_unmap(f->spans, f->spans_map);
  if (f->stack) hci_os_unmap(f->stack, f->cap * sizeof(work_t));
  if (f->ldso) hci_os_unmap(f->ldso, LDSO_CACHE * sizeof(ldso_ent_t));
  hci_readable_free(&f->rd);
  if (f->pcache) hci_os_unmap(f->pcache, PCACHE * 4096 + PCACHE * sizeof(uintptr_t));
  if (f->scratch) hci_os_unmap(f->scratch, SCRATCH_MAP);
}

static inline size_t small_size(const hc_span_t *s, uint32_t idx, const hc_class_info_t *ci) {
  return ci->size - (atomic_load_explicit(&s->objmeta[idx].xflags, memory_order_relaxed) & HC_OBJ_SLACK_MASK);
}

// ---- the main flood ----

/* v lies in the heap's address range: mark and push the object it points
 * into when that object is live and not yet marked. */
static inline __attribute__((always_inline)) void consider(flood_t *f, uintptr_t v) {
  const hc_pm_entry_t *pe = hci_pagemap_find(v);
  if (!pe) return;
  hc_span_t *s = (hc_span_t *)pe->span;
  if (!s) return;
  uint8_t *mk = s->marks;
  if (!mk) return;
  uintptr_t info = pe->info;
  unsigned cls = (unsigned)(info & HC_PM_CLASS_MASK);
  uintptr_t inner, start;
  size_t size;
  uint8_t *m;
  if (hc_likely(cls)) {
    const hc_class_info_t *ci = &hci_classes[cls];
    uintptr_t off = v - (info & ~HC_PM_CLASS_MASK);
    uint32_t idx = (uint32_t)((off * ci->recip) >> 48);
    if (idx >= s->carved || (mk[idx] & ~M_PENDING)) return;
    m = &mk[idx];
    if (s->objmeta[idx].stack_id == HC_STACK_NONE) {
      *m = M_FREE;
      return;
    }
    size = small_size(s, idx, ci);
    inner = off - (uintptr_t)idx * ci->size;
    start = v - inner;
  } else {
    if (s->state != HC_SPAN_LARGE || (mk[0] & ~M_PENDING)) return;
    m = &mk[0];
    if (s->meta.stack_id == HC_STACK_NONE) {
      *m = M_FREE;
      return;
    }
    inner = v - s->start;
    size = s->req_size;
    start = s->start;
  }
  if (inner) {
    if (inner >= size) return;
    if (f->live_mark == M_LIVE) {
      /* The main flood: an interior pointer only makes the object pending
       * (valgrind: "possibly lost" unless a start pointer reaches it too). */
      if (f->track_possible) {
        if (!*m) f->npending++;
        *m = M_PENDING;
        return;
      }
      if (inner > f->maxoff) return;
    }
  }
  *m = f->live_mark;
  if (f->live_mark == M_LIVE) {
    f->r->reach_objects++;
    f->r->reach_bytes += size;
  }
  push(f, start, size);
}

/* Scans the words of [lo, hi) (addresses of the program), reading each at
 * its address + delta (0, or a copy in scratch). */
static void scan_main(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta) {
  const uintptr_t hlo = f->heap_lo, hspan = f->heap_span;
  size_t words = 0;
  if (f->p->align == (int)sizeof(uintptr_t)) {
    const uintptr_t *w =
        (const uintptr_t *)(((lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1)) + delta);
    const uintptr_t *end = (const uintptr_t *)((hi & ~(uintptr_t)(sizeof(uintptr_t) - 1)) + delta);
    words = w < end ? (size_t)(end - w) : 0;
    for (; w < end; w++) {
      uintptr_t v = *w;
      if (hc_likely(v - hlo >= hspan)) continue;
      consider(f, v);
    }
  } else {
    uintptr_t a = (uintptr_t)f->p->align;
    for (uintptr_t q = (lo + a - 1) & ~(a - 1); q + sizeof(uintptr_t) <= hi; q += a, words++) {
      uintptr_t v;
      memcpy(&v, (const void *)(q + delta), sizeof v);
      if (v - hlo >= hspan) continue;
      consider(f, v);
    }
  }
  f->r->scanned_words += words;
}

// ---- classification floods (leaks only: few objects, plain code) ----

/* The mark of the live object v points into (same interior rules as the
 * main flood) and its start/size; NULL for anything else. */
static uint8_t *resolve(flood_t *f, uintptr_t v, uintptr_t *start, size_t *size) {
  if (v - f->heap_lo >= f->heap_span) return NULL;
  const hc_pm_entry_t *pe = hci_pagemap_find(v);
  hc_span_t *s = pe ? (hc_span_t *)pe->span : NULL;
  if (!s || !s->marks) return NULL;
  unsigned cls = (unsigned)(pe->info & HC_PM_CLASS_MASK);
  uintptr_t inner;
  uint8_t *mk;
  if (cls) {
    const hc_class_info_t *ci = &hci_classes[cls];
    uintptr_t off = v - (pe->info & ~HC_PM_CLASS_MASK);
    uint32_t idx = (uint32_t)((off * ci->recip) >> 48);
    if (idx >= s->carved || s->objmeta[idx].stack_id == HC_STACK_NONE) return NULL;
    *size = small_size(s, idx, ci);
    inner = off - (uintptr_t)idx * ci->size;
    *start = v - inner;
    mk = &s->marks[idx];
  } else {
    if (s->state != HC_SPAN_LARGE || s->meta.stack_id == HC_STACK_NONE) return NULL;
    *size = s->req_size;
    inner = v - s->start;
    *start = s->start;
    mk = &s->marks[0];
  }
  if (inner && (inner >= *size || inner > f->maxoff)) return NULL;
  return mk;
}

/* The leak starting at addr (leaks sorted by address), or NULL. */
static hci_leak_t *find_leak(flood_t *f, uintptr_t addr) {
  hci_leak_t *v = f->r->leaks;
  size_t lo = 0, hi = f->r->nleaks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo < f->r->nleaks && v[lo].addr == addr ? &v[lo] : NULL;
}

/* Classification flood from the current leader (valgrind's "clique"): a leak
 * reached for the first time becomes indirect and the leader owns it; an
 * earlier leader reached becomes indirect too, and what it owned moves to
 * this one (its objects are not scanned again).  Words are read at their
 * address + delta. */
static void scan_leaks(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta) {
  uintptr_t a = (uintptr_t)f->p->align;
  hci_leak_t *leader = f->leader;
  for (uintptr_t q = (lo + a - 1) & ~(a - 1); q + sizeof(uintptr_t) <= hi; q += a) {
    uintptr_t v, start;
    size_t size;
    memcpy(&v, (const void *)(q + delta), sizeof v);
    uint8_t *mk = resolve(f, v, &start, &size);
    if (!mk || !(*mk & M_LEAK) || start == leader->addr) continue;
    if (!(*mk & M_COVERED)) {
      *mk |= M_COVERED | M_INDIRECT;
      leader->owned_bytes += size;
      leader->owned_objects++;
      push(f, start, size);
    } else if (!(*mk & M_INDIRECT)) {
      *mk |= M_INDIRECT;
      hci_leak_t *old = find_leak(f, start);
      if (old) {
        leader->owned_bytes += old->size + old->owned_bytes;
        leader->owned_objects += 1 + old->owned_objects;
        old->owned_bytes = old->owned_objects = 0;
      }
    }
  }
}

// ---- safe reads ----

/* The readable mappings of the snapshot (hci_world_stop read it after every
 * thread stopped), merged; none when it could not be read. */
static void setup_readable(flood_t *f, const hci_maps_t *maps) {
  f->careful = f->r->not_stopped > 0;
  if (!hci_readable_build(&f->rd, maps)) f->careful = true; /* nothing known: copy everything */
}

/* [at, at + n) was not scanned; a range that continues the last one (the
 * next chunk of the same hole) is not counted again. */
static hc_noinline void skipped(flood_t *f, uintptr_t at, size_t n) {
  f->r->skipped_bytes += n;
  if (at != f->skip_end) f->r->skipped_ranges++;
  f->skip_end = at + n;
}

/* mode 0: main flood; 2: classification (scan_leaks; obj: the leak's start). */
static inline void scan_direct(flood_t *f, uintptr_t lo, uintptr_t hi, int mode, uintptr_t obj, uintptr_t delta) {
  (void)obj;
  if (mode == 0) scan_main(f, lo, hi, delta);
  else scan_leaks(f, lo, hi, delta);
}

/* [lo, hi) through a fault-proof copy, SCRATCH bytes (page-aligned pieces)
 * at a time; a page that cannot be read is skipped and counted. */
static void scan_copy(flood_t *f, uintptr_t lo, uintptr_t hi, int mode, uintptr_t obj) {
  if (!f->scratch) f->scratch = hci_os_map(SCRATCH_MAP);
  if (!f->scratch) {
    f->r->oom = true;
    return;
  }
  for (uintptr_t c = lo; c < hi;) {
    uintptr_t e = (c & ~(uintptr_t)(SCRATCH - 1)) + SCRATCH;
    if (e > hi) e = hi;
    uintptr_t base = c & ~(uintptr_t)7;
    /* 7 bytes more: a word that starts before e may end after it. */
    uintptr_t want_end = hi - e >= 7 ? e + 7 : hi;
    size_t got = hci_os_read(f->scratch, base, want_end - base);
    uintptr_t delta = (uintptr_t)f->scratch - base;
    if (base + got > c) scan_direct(f, c, base + got, mode, obj, delta);
    if (base + got < e) { /* the page at base + got cannot be read */
      uintptr_t bad = base + got > c ? base + got : c, next = (bad & ~(uintptr_t)4095) + 4096;
      if (next > hi) next = hi;
      skipped(f, bad, next - bad);
      c = next;
      continue;
    }
    c = e;
  }
}

/* Reads [lo, hi) of memory the checker does not own: only the parts that
 * the snapshot says are readable (a PROT_NONE guard page, an munmap'ed hole
 * inside a block, a PROT_NONE page among globals are skipped and counted),
 * directly while the world is stopped, through a copy when a thread still
 * runs (it may change its mappings at any moment). */
static hc_noinline void scan_slow(flood_t *f, uintptr_t lo, uintptr_t hi, int mode, uintptr_t obj) {
  const hci_readable_t *rd = &f->rd;
  if (rd->n == 0) {
    scan_copy(f, lo, hi, mode, obj);
    return;
  }
  uintptr_t at = lo;
  for (size_t i = hci_readable_first(rd, lo); i < rd->n && rd->lo[i] < hi; i++) {
    uintptr_t l = lo > rd->lo[i] ? lo : rd->lo[i], h = hi < rd->hi[i] ? hi : rd->hi[i];
    if (l > at) skipped(f, at, l - at);
    if (f->careful) {
      scan_copy(f, l, h, mode, obj);
    } else {
      f->cur_lo = rd->lo[i];
      f->cur_hi = rd->hi[i];
      scan_direct(f, l, h, mode, obj, 0);
    }
    at = h;
  }
  if (at < hi) skipped(f, at, hi - at);
}

static inline void scan_checked(flood_t *f, uintptr_t lo, uintptr_t hi, int mode, uintptr_t obj) {
  if (hc_likely(lo >= f->cur_lo && hi <= f->cur_hi)) scan_direct(f, lo, hi, mode, obj, 0);
  else scan_slow(f, lo, hi, mode, obj);
}

/* Objects and root ranges are scanned CHUNK bytes at a time, the rest pushed
 * back first: what a chunk reaches is scanned before the remainder, so the
 * frontier stays small even for a table of millions of pointers (every
 * frontier page costs a page fault). */
#define CHUNK ((size_t)4096)

/* [lo, hi) lies in one readable mapping of the snapshot (bat_lo/bat_hi:
 * the last one found). */
static bool in_readable(flood_t *f, uintptr_t lo, uintptr_t hi) {
  if (lo >= f->bat_lo && hi <= f->bat_hi) return true;
  size_t a = hci_readable_first(&f->rd, lo);
  if (a == f->rd.n || f->rd.lo[a] > lo || hi > f->rd.hi[a]) return false;
  f->bat_lo = f->rd.lo[a];
  f->bat_hi = f->rd.hi[a];
  return true;
}

/* The copy of the page at page (hci_os_read, once while it stays in the
 * direct-mapped cache), or NULL when it cannot be read. */
static const uint8_t *page_copy(flood_t *f, uintptr_t page) {
  size_t i = (size_t)(page >> 12) & (PCACHE - 1);
  uint8_t *d = f->pcache + i * 4096;
  if (f->pc_page[i] == page) return d;
  f->pc_page[i] = 0;
  if (hci_os_read(d, page, 4096) != 4096) return NULL;
  f->pc_page[i] = page;
  return d;
}

/* The main flood while a thread runs (careful): every object is read from
 * copies of its pages, each page copied once with one process_vm_readv
 * (objects are small and packed: a syscall per object would cost 10 times
 * as much).  Objects not inside one readable mapping go through scan_slow. */
static hc_noinline void drain_careful(flood_t *f) {
  if (!f->pcache) {
    f->pcache = hci_os_map(PCACHE * 4096 + PCACHE * sizeof(uintptr_t));
    if (f->pcache) f->pc_page = (uintptr_t *)(f->pcache + PCACHE * 4096);
  }
  while (f->sp) {
    work_t w = f->stack[--f->sp];
    if (w.size > CHUNK && f->p->align == (int)sizeof(uintptr_t)) {
      push(f, w.lo + CHUNK, w.size - CHUNK);
      w.size = CHUNK;
    }
    uintptr_t hi = w.lo + w.size;
    /* Words that cross a page boundary need unaligned pointers (align < 8). */
    if (!f->pcache || f->p->align != (int)sizeof(uintptr_t) || !in_readable(f, w.lo, hi)) {
      scan_slow(f, w.lo, hi, 0, 0);
      continue;
    }
    for (uintptr_t a = w.lo; a < hi;) {
      uintptr_t page = a & ~(uintptr_t)4095, e = page + 4096 < hi ? page + 4096 : hi;
      const uint8_t *d = page_copy(f, page);
      if (d) scan_main(f, a, e, (uintptr_t)d - page);
      else skipped(f, a, e - a);
      a = e;
    }
  }
}

static void drain(flood_t *f) {
  if (f->careful && !f->covered_mode) {
    drain_careful(f);
    return;
  }
  while (f->sp) {
    work_t w = f->stack[--f->sp];
    if (f->sp) __builtin_prefetch((const void *)f->stack[f->sp - 1].lo); /* next object's first line */
    if (f->covered_mode) {
      scan_checked(f, w.lo, w.lo + w.size, 2, w.lo);
      continue;
    }
    if (w.size > CHUNK && f->p->align == (int)sizeof(uintptr_t)) {
      push(f, w.lo + CHUNK, w.size - CHUNK);
      w.size = CHUNK;
    }
    scan_checked(f, w.lo, w.lo + w.size, 0, 0);
  }
}

// ---- roots ----

/* A range that may vanish or was never touched (the program's own mappings,
 * running threads' stacks): copied SCRATCH bytes at a time with
 * hci_copy_safe, skipping pages that were never touched (mincore: a
 * reservation of terabytes costs nothing). */
static void scan_copied(flood_t *f, uintptr_t lo, uintptr_t hi) {
  if (!f->scratch) f->scratch = hci_os_map(SCRATCH_MAP);
  if (!f->scratch) {
    f->r->oom = true;
    return;
  }
  unsigned char vec[SCRATCH / 4096];
  for (uintptr_t a = lo & ~(uintptr_t)7; a < hi;) {
    uintptr_t end = (a & ~(uintptr_t)(SCRATCH - 1)) + SCRATCH;
    if (end > hi) end = hi;
    uintptr_t page = a & ~(uintptr_t)4095;
    if (mincore((void *)page, end - page, vec) == 0) {
      /* Scan only the resident pages of [a, end). */
      for (uintptr_t p = page; p < end; p += 4096) {
        if (!(vec[(p - page) / 4096] & 1)) continue;
        uintptr_t l = p > a ? p : a, h = p + 4096 < end ? p + 4096 : end;
        size_t n = h - l;
        hci_copy_safe(f->scratch, l, n);
        scan_main(f, (uintptr_t)f->scratch, (uintptr_t)f->scratch + n, 0);
      }
    } else {
      size_t n = end - a;
      hci_copy_safe(f->scratch, a, n);
      scan_main(f, (uintptr_t)f->scratch, (uintptr_t)f->scratch + n, 0);
    }
    drain(f);
    a = end;
  }
}

static void root_cb(void *ctx, uintptr_t lo, uintptr_t hi, const char *kind) {
  flood_t *f = ctx;
  if (lo >= hi) return;
  if (hci_root_kind_unstable(kind)) {
    scan_copied(f, lo, hi);
    return;
  }
  if (f->p->align == (int)sizeof(uintptr_t)) { /* 8-aligned chunk boundaries: see drain() */
    uintptr_t a = (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    if (a < hi) push(f, a, hi - a);
  } else {
    scan_checked(f, lo, hi, 0, 0);
  }
  drain(f);
}

/* A registered region, clipped to readable mappings (it may be stale). */
static void scan_region(flood_t *f, const hci_maps_t *maps, uintptr_t lo, uintptr_t hi) {
  if (maps->n == 0) return; /* cannot tell what is mapped: skip rather than fault */
  for (int i = 0; i < maps->n; i++) {
    const hci_map_t *m = &maps->v[i];
    if (m->hi <= lo || m->lo >= hi) continue;
    if (!(m->flags & HCI_MAP_R) || (m->flags & (HCI_MAP_SPECIAL | HCI_MAP_DEVICE))) continue;
    /* A region may be a file mapping (SIGBUS past the file's end) or be
     * unmapped by a thread that runs: read through a copy. */
    scan_copied(f, lo > m->lo ? lo : m->lo, hi < m->hi ? hi : m->hi);
  }
}

/* Objects flagged HC_OBJ_IGNORED (IgnoreObject, Disabler) are roots. */
static void push_ignored(flood_t *f) {
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    if (!s->marks) continue;
    if (s->state == HC_SPAN_LARGE) {
      if (s->meta.stack_id && (atomic_load_explicit(&s->meta.xflags, memory_order_relaxed) & HC_OBJ_IGNORED) &&
          !s->marks[0]) {
        s->marks[0] = M_LIVE;
        f->r->reach_objects++;
        f->r->reach_bytes += s->req_size;
        push(f, s->start, s->req_size);
      }
      continue;
    }
    const hc_class_info_t *ci = &hci_classes[s->cls];
    for (uint32_t k = 0; k < s->carved; k++) {
      if (!s->objmeta[k].stack_id || s->marks[k]) continue;
      if (!(atomic_load_explicit(&s->objmeta[k].xflags, memory_order_relaxed) & HC_OBJ_IGNORED)) continue;
      size_t size = small_size(s, k, ci);
      s->marks[k] = M_LIVE;
      f->r->reach_objects++;
      f->r->reach_bytes += size;
      push(f, s->start + (uintptr_t)k * ci->size, size);
    }
    drain(f);
  }
  drain(f);
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

/* Allocated by the dynamic loader (its first frame is in ld.so: DTV,
 * dynamic TLS blocks, link maps) or by a suppressed stack.  Cached per id. */
static bool extra_root(flood_t *f, uint32_t id) {
  ldso_ent_t *c = f->ldso ? &f->ldso[id % LDSO_CACHE] : NULL;
  if (c && c->id == id) return c->is_root;
  const uintptr_t *pcs;
  int n = hci_depot_get(id, &pcs);
  bool root = (n > 0 && !f->p->no_ld_roots && hci_pc_in_ldso(pcs[0])) || hci_supp_is_suppressed(id);
  if (c) {
    c->id = id;
    c->is_root = root;
  }
  return root;
}

static void push_extra_roots(flood_t *f) {
  f->ldso = hci_os_map(LDSO_CACHE * sizeof(ldso_ent_t));
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    uint8_t *mk = s->marks;
    if (!mk) continue;
    if (s->state == HC_SPAN_LARGE) {
      if (mk[0]) continue;
      if (!s->meta.stack_id) mk[0] = M_FREE;
      else if (extra_root(f, s->meta.stack_id)) {
        mk[0] = M_LIVE;
        f->r->reach_objects++;
        f->r->reach_bytes += s->req_size;
        push(f, s->start, s->req_size);
        drain(f);
      }
      continue;
    }
    const hc_class_info_t *ci = &hci_classes[s->cls];
    for (uint32_t k = next_zero(mk, 0, s->carved); k < s->carved; k = next_zero(mk, k + 1, s->carved)) {
      if (mk[k]) continue;
      uint32_t id = s->objmeta[k].stack_id;
      if (!id) {
        mk[k] = M_FREE;
        continue;
      }
      if (!extra_root(f, id)) continue;
      size_t size = small_size(s, k, ci);
      mk[k] = M_LIVE;
      f->r->reach_objects++;
      f->r->reach_bytes += size;
      push(f, s->start + (uintptr_t)k * ci->size, size);
      drain(f);
    }
  }
}

// ---- possibly lost ----

static bool in_scope(const flood_t *f, uint16_t epoch);

/* After every root: objects still pending were reached only through
 * interior pointers.  They and everything they reach (not already live) are
 * "possibly lost" (valgrind's term): alive for the verdict, counted apart. */
static void flood_possible(flood_t *f) {
  if (!f->npending) return;
  f->live_mark = M_LIVE | M_POSSIBLE;
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    uint8_t *mk = s->marks;
    if (!mk) continue;
    size_t n = span_slots(s);
    for (size_t k = 0; k < n; k++) {
      if (mk[k] != M_PENDING) continue;
      mk[k] = M_LIVE | M_POSSIBLE;
      if (s->state == HC_SPAN_LARGE) push(f, s->start, s->req_size);
      else push(f, s->start + (uintptr_t)k * hci_classes[s->cls].size, small_size(s, (uint32_t)k, &hci_classes[s->cls]));
      drain(f);
    }
  }
  f->live_mark = M_LIVE;
  /* Count the ones in the check's scope. */
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    uint8_t *mk = s->marks;
    if (!mk) continue;
    if (s->state == HC_SPAN_LARGE) {
      if ((mk[0] & M_POSSIBLE) && in_scope(f, s->meta.epoch)) {
        f->r->possible_objects++;
        f->r->possible_bytes += s->req_size;
      }
      continue;
    }
    for (uint32_t k = 0; k < s->carved; k++)
      if ((mk[k] & M_POSSIBLE) && in_scope(f, s->objmeta[k].epoch)) {
        f->r->possible_objects++;
        f->r->possible_bytes += small_size(s, k, &hci_classes[s->cls]);
      }
  }
}

// ---- classification ----

static bool in_scope(const flood_t *f, uint16_t epoch) {
  return f->p->report_all || (uint16_t)(epoch - f->p->base_epoch) < 0x8000u;
}

/* Every object still unmarked is unreachable (free ones were marked by
 * push_extra_roots): a leak when in scope. */
static void collect_leaks(flood_t *f) {
  for (size_t i = 0; i < f->nspans; i++) {
    hc_span_t *s = f->spans[i];
    uint8_t *mk = s->marks;
    if (!mk) continue;
    if (s->state == HC_SPAN_LARGE) {
      if (mk[0]) continue;
      if (!in_scope(f, s->meta.epoch)) mk[0] = M_OLD;
      else if (add_leak(f, s->start, s->req_size, s->meta.stack_id)) mk[0] = M_LEAK;
      continue;
    }
    const hc_class_info_t *ci = &hci_classes[s->cls];
    for (uint32_t k = next_zero(mk, 0, s->carved); k < s->carved; k = next_zero(mk, k + 1, s->carved)) {
      if (mk[k]) continue;
      if (!in_scope(f, s->objmeta[k].epoch)) mk[k] = M_OLD;
      else if (add_leak(f, s->start + (uintptr_t)k * ci->size, small_size(s, k, ci), s->objmeta[k].stack_id))
        mk[k] = M_LEAK;
    }
  }
}

static uint8_t *leak_mark(flood_t *f, const hci_leak_t *l) {
  uintptr_t start;
  size_t size;
  return resolve(f, l->addr, &start, &size);
}

static int cmp_leak_addr(const void *a, const void *b) {
  const hci_leak_t *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* valgrind's rule: in address order, every leak not yet reached from an
 * earlier one leads a flood over the leaks it reaches; those are indirect,
 * and an earlier leader it reaches becomes indirect too.  What stays direct
 * is one leak per leaked structure (the lowest-addressed member of each
 * strongly connected component that no other leak points to), and each
 * direct leak owns the bytes of the indirect ones it keeps. */
static void classify(flood_t *f) {
  hci_flood_result_t *r = f->r;
  hci_chk_sort(r->leaks, r->nleaks, sizeof *r->leaks, cmp_leak_addr);
  f->covered_mode = 1;
  for (size_t i = 0; i < r->nleaks; i++) {
    uint8_t *mk = leak_mark(f, &r->leaks[i]);
    if (!mk || (*mk & M_COVERED)) continue;
    *mk |= M_COVERED;
    f->leader = &r->leaks[i];
    push(f, r->leaks[i].addr, r->leaks[i].size);
    drain(f);
  }
  f->covered_mode = 0;
  for (size_t i = 0; i < r->nleaks; i++) {
    uint8_t *mk = leak_mark(f, &r->leaks[i]);
    r->leaks[i].kind = mk && (*mk & M_INDIRECT) ? HCI_LEAK_INDIRECT : HCI_LEAK_DIRECT;
    if (r->leaks[i].kind == HCI_LEAK_INDIRECT) r->leaks[i].owned_bytes = r->leaks[i].owned_objects = 0;
    r->leaked_bytes += r->leaks[i].size;
  }
}

// ---- the stopped-world driver ----

static void flood_all(hci_world_t *w, flood_t *f) {
  const hci_flood_params_t *p = f->p;
  hci_flood_result_t *r = f->r;
  uint64_t t0 = hci_os_now_ns();
  if (!setup_marks(f)) {
    r->oom = true;
    return;
  }
  f->heap_lo = hci_pageheap.lo;
  f->heap_span = hci_pageheap.hi > hci_pageheap.lo ? hci_pageheap.hi - hci_pageheap.lo : 0;
  f->maxoff = p->max_offset < 0 ? UINTPTR_MAX : (uintptr_t)p->max_offset;
  setup_readable(f, &w->maps);
  f->track_possible = p->max_offset < 0;
  f->live_mark = M_LIVE;
  uint64_t t1 = hci_os_now_ns();
  if (atomic_load_explicit(&hci_api_any_ignored, memory_order_relaxed)) push_ignored(f);
  const hci_region_t *regions;
  int nreg = hci_api_root_regions(&regions);
  for (int i = 0; i < nreg && !p->no_regions; i++) scan_region(f, &w->maps, regions[i].lo, regions[i].hi);
  if (p->scan_globals) hci_roots_globals(root_cb, f);
  else hci_roots_runtime(root_cb, f);
  if (p->scan_threads)
    hci_roots_threads_parts(w, p->self_sp, p->thread_parts ? p->thread_parts : HCI_ROOTS_THREADS, root_cb, f);
  if (p->scan_threads) hci_roots_dead_threads(w, root_cb, f);
  if (p->scan_globals && !p->no_mappings) hci_roots_mappings(w, root_cb, f);
  uint64_t t2 = hci_os_now_ns();
  push_extra_roots(f);
  flood_possible(f);
  uint64_t t3 = hci_os_now_ns();
  collect_leaks(f);
  classify(f);
  uint64_t t4 = hci_os_now_ns();
  r->t_setup_ns = t1 - t0;
  r->t_roots_ns = t2 - t1;
  r->t_extra_ns = t3 - t2;
  r->t_classify_ns = t4 - t3;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct stopped_call {
  hci_world_t *w;
  const hci_flood_params_t *p;
  hci_flood_result_t *r;
} stopped_call_t;

static int stopped_check(void *arg) {
  stopped_call_t *c = arg;
  flood_t f;
  memset(&f, 0, sizeof f);
  f.p = c->p;
  f.r = c->r;
  hci_lock_all();
  uint64_t t0 = hci_os_now_ns();
  c->r->not_stopped = hci_world_stop(c->w);
  c->r->nthreads = c->w->nthreads;
  hci_world_why_incomplete(c->w, c->r->incomplete, sizeof c->r->incomplete);
  if (c->p->self_nregs > 0) hci_world_set_self_regs(c->w, c->p->self_regs, c->p->self_nregs);
  uint64_t t1 = hci_os_now_ns(), c1 = thread_cpu_ns();
  flood_all(c->w, &f);
  drop_marks(&f);
  uint64_t t2 = hci_os_now_ns();
  c->r->t_flood_cpu_ns = thread_cpu_ns() - c1;
  if (c->r->oom && !c->r->incomplete[0])
    hci_snprintf(c->r->incomplete, sizeof c->r->incomplete,
                 "out of memory for the check's own buffers (RLIMIT_AS, or the address space is full)");
  if (!c->p->hold) hci_world_resume(c->w);
  hci_unlock_all();
  c->r->t_stop_ns = (t1 - t0) + (hci_os_now_ns() - t2);
  c->r->t_flood_ns = t2 - t1;
  return 0;
}

int hci_flood_check(hci_world_t *w, const hci_flood_params_t *p, hci_flood_result_t *r) {
  memset(r, 0, sizeof *r);
  stopped_call_t c = {w, p, r};
  return hci_with_loader_lock(stopped_check, &c);
}

void hci_flood_result_free(hci_flood_result_t *r) {
  if (r->leaks) hci_os_unmap(r->leaks, r->leaks_map);
  r->leaks = NULL;
  r->nleaks = r->leaks_map = 0;
}
