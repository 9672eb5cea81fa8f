/* flood_scan.c - the flood's hot loop and its safe reads: consider() (one
 * pagemap lookup, a mark byte, the object's record per word that points into
 * the heap), the frontier's drain, and reads of memory the checker does not
 * own clipped to the readable mappings of the stopped world's snapshot (a
 * copy when a thread still runs).
 * Invariants and locks: flood_internal.h; runs with the world stopped.
 */
#include <unistd.h>

#include "flood_internal.h"

// ---- the main flood ----

/* What the main flood counts, kept in registers across a drain and added to
 * f->r once (updating f->r per object costs gcc 7 vector instructions). */
typedef struct fl_count {
  size_t words, objects, bytes;
} fl_count_t;

static inline void count_flush(flood_t *f, const fl_count_t *c) {
  f->r->scanned_words += c->words;
  f->r->reach_objects += c->objects;
  f->r->reach_bytes += c->bytes;
}

/* v lies in the heap's address range: mark and push the object it points
 * into when that object is live and not yet marked. */
static inline __attribute__((always_inline)) void consider(flood_t *f, const hci_heap_marks_t *mk, uintptr_t v,
                                                           fl_count_t *c) {
  hci_heap_marked_t o;
  if (!hci_heap_locate_marked(v, mk, &o)) return;
  uint8_t *m = o.mark;
  if (*m & ~M_PENDING) return;
  uintptr_t start;
  size_t size;
  if (!hci_heap_marked_object(&o, v, &start, &size)) {
    *m = M_FREE;
    return;
  }
  uintptr_t inner = v - start;
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
    c->objects++;
    c->bytes += size;
  }
  push_obj(f, start, size);
}

/* Scans the words of [lo, hi) (addresses of the program), reading each at
 * its address + delta (0, or a copy in scratch); counts into *c. */
static inline __attribute__((always_inline)) void scan_main(flood_t *f, const hci_heap_marks_t *mk, uintptr_t lo,
                                                            uintptr_t hi, uintptr_t delta, fl_count_t *c) {
  const uintptr_t hlo = f->heap_lo, hspan = f->heap_span;
  if (f->p->align == (int)sizeof(uintptr_t)) {
    const uintptr_t *w =
        (const uintptr_t *)(((lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1)) + delta);
    const uintptr_t *end = (const uintptr_t *)((hi & ~(uintptr_t)(sizeof(uintptr_t) - 1)) + delta);
    c->words += w < end ? (size_t)(end - w) : 0;
    for (; w < end; w++) {
      uintptr_t v = *w;
      if (hc_likely(v - hlo >= hspan)) continue;
      consider(f, mk, v, c);
    }
  } else {
    uintptr_t a = (uintptr_t)f->p->align;
    for (uintptr_t q = (lo + a - 1) & ~(a - 1); q + sizeof(uintptr_t) <= hi; q += a, c->words++) {
      uintptr_t v;
      memcpy(&v, (const void *)(q + delta), sizeof v);
      if (v - hlo >= hspan) continue;
      consider(f, mk, v, c);
    }
  }
}

void hci_fl_scan_main(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta) {
  fl_count_t c = {0, 0, 0};
  const hci_heap_marks_t mk = f->mk;
  scan_main(f, &mk, lo, hi, delta, &c);
  count_flush(f, &c);
}

// ---- safe reads ----

/* The readable mappings of the snapshot (hci_world_stop read it after every
 * thread stopped), merged; none when it could not be read. */
void hci_fl_setup_readable(flood_t *f, const hci_maps_t *maps) {
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
  if (mode == 0) hci_fl_scan_main(f, lo, hi, delta);
  else hci_fl_scan_leaks(f, lo, hi, delta);
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
      if (d) hci_fl_scan_main(f, a, e, (uintptr_t)d - page);
      else skipped(f, a, e - a);
      a = e;
    }
  }
}

void hci_fl_drain(flood_t *f) {
  if (f->careful && !f->covered_mode) {
    drain_careful(f);
    return;
  }
  /* The main flood's scan inlined here (a call per object costs as much
   * as the lookups of its words), its counts flushed once. */
  fl_count_t c = {0, 0, 0};
  /* A local copy of the mark table's address: the mark stores (bytes) may
   * alias anything in *f, so read through f it would be loaded per word. */
  const hci_heap_marks_t mk = f->mk;
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
    uintptr_t lo = w.lo, hi = w.lo + w.size;
    if (hc_likely(lo >= f->cur_lo && hi <= f->cur_hi)) scan_main(f, &mk, lo, hi, 0, &c);
    else scan_slow(f, lo, hi, 0, 0);
  }
  count_flush(f, &c);
}

void hci_fl_scan_range(flood_t *f, uintptr_t lo, uintptr_t hi) { scan_checked(f, lo, hi, 0, 0); }

/* The pages of a large object that were never populated (or were given
 * back with MADV_DONTNEED) hold zeros for the flood: they are not read.
 * Reading one is not always harmless: a program that registered that range
 * with userfaultfd (lazy filling: a postcopy buffer, a GC's compaction
 * space) has the read wait for its fault-serving thread, which the check has
 * stopped; its exit check hung for ever.  /proc/self/pagemap tells a page
 * never populated (neither present nor swapped) from one swapped out, which
 * is read as before (mincore could not tell them apart); without pagemap
 * (no /proc in view) every page is read as before.  Pagemap is read a
 * window of PM_WIN pages at a time into a small direct-mapped cache (the
 * world is stopped: entries do not change), so objects of a few pages do
 * not each pay a pread (8 KiB objects: +40 % flood time with one each). */
/* The pagemap entry of page a, or ~0 (read it) when it cannot be had. */
static uint64_t pm_entry(flood_t *f, uintptr_t a) {
  uintptr_t win = a / 4096 / PM_WIN;
  size_t slot = win % PM_SLOTS;
  if (!f->pm_cache) {
    f->pm_cache = hci_os_map(HCI_FL_PM_BYTES);
    if (!f->pm_cache) return ~0ull;
    f->pm_win = (uintptr_t *)(f->pm_cache + PM_SLOTS * PM_WIN);
  }
  uint64_t *e = f->pm_cache + slot * PM_WIN;
  if (f->pm_win[slot] != win + 1) {
    ssize_t got = pread(f->pagemap_fd - 1, e, PM_WIN * sizeof(uint64_t), (off_t)(win * PM_WIN * sizeof(uint64_t)));
    if (got != (ssize_t)(PM_WIN * sizeof(uint64_t))) {
      f->pm_win[slot] = 0;
      return ~0ull;
    }
    f->pm_win[slot] = win + 1;
  }
  return e[a / 4096 % PM_WIN];
}

/* Whether pagemap entry e is a page that can be read: present, or swapped
 * out to a swap area.  Not a guard region (madvise MADV_GUARD_INSTALL, Linux
 * 6.13: a marker in the page table, no mapping of its own, so the snapshot
 * of the maps shows nothing; a read is a SIGSEGV, which killed every check
 * of a program with one inside a live block): bit 58 says so from Linux
 * 6.15, and before it the marker shows as a swap entry of a type past the
 * swap areas' (31; hwpoisoned pages and migration entries are there too). */
static bool pm_readable(uint64_t e) {
  if (e >> 63) return true;
  return (e >> 62 & 1) && !(e >> 58 & 1) && (e & 0x1f) < 16;
}

bool hci_fl_page_mapped(flood_t *f, uintptr_t a) {
  return f->pagemap_fd <= 0 || pm_readable(pm_entry(f, a)); /* or not known */
}

void hci_fl_push_populated(flood_t *f, uintptr_t lo, size_t size) {
  uintptr_t hi = lo + size;
  uintptr_t plo = (lo + 4095) & ~(uintptr_t)4095, phi = hi & ~(uintptr_t)4095;
  if (f->pagemap_fd <= 0 || phi <= plo) {
    push(f, lo, size);
    return;
  }
  uintptr_t run = lo; /* start of the populated stretch being built, 0: none */
  for (uintptr_t a = plo; a < phi; a += 4096) {
    if (pm_readable(pm_entry(f, a))) {
      if (!run) run = a;
    } else if (run) {
      if (a > run) push(f, run, a - run);
      run = 0;
    }
  }
  if (!run) run = phi;
  if (hi > run) push(f, run, hi - run);
}
