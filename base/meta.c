/* meta.c - the metadata arena.
 *
 * Spans, per-object records, thread caches, pagemap leaves, the stack depot
 * and the checker's buffers all live here, in anonymous mappings of their
 * own, never in the user heap: a heap overflow cannot corrupt them, and the
 * checker never mistakes them for roots.
 *
 * Memory is carved by bumping through HC_META_CHUNK mappings and recycled
 * through size-binned free lists: 16-byte steps up to 1 KiB, powers of two
 * up to 64 KiB.  Larger requests are mapped and unmapped directly.
 * Chunks and large requests come first from one range of address space
 * reserved at the first use (HC_META_RESERVE, committed as it is handed
 * out): the kernel places mappings top-down, each right below the last,
 * and metadata mapped between two heap growths kept the heap's free runs
 * from merging across them (bench_large: 40.8 or 48.4 MB peak RSS by
 * where ASLR put the libraries; docs/performance.md, "Memory, fourth
 * pass").  A large block freed there gives its pages back and stays
 * mapped (reads of it see zeros); its addresses are not reused (the
 * depot's tables double, so they waste at most as much address space as
 * they hold).  Under an address-space limit the reservation's uncommitted
 * part is given back when the heap's own mapping is refused
 * (hci_meta_unreserve).
 * Lock: meta_lock, last in the lock order (nothing is taken while holding it
 * but the OS). */
#include <string.h>

#include "hc_base.h"

#define SMALL_MAX 1024
#define BIN_MAX ((size_t)64 << 10)
#define NBINS (SMALL_MAX / 16 + 7) /* 64 fine bins + 2K..64K */

#define MAX_RANGES 4096

static struct {
  hci_lock_t lock;
  int nranges;
  uint8_t *bump;        /* next free byte of the current chunk */
  uint8_t *bump_end;
  uint8_t *populated;   /* [bump, populated) is resident (see hci_meta_alloc) */
  size_t window;        /* how much is made resident next; 0: nothing (hci_meta_populate) */
  void *bins[NBINS + 1];/* recycled blocks, linked through their first word */
  size_t mapped;        /* bytes mapped for metadata */
  uint8_t *resv, *resv_cur, *resv_end; /* the reservation; [resv, resv_cur) committed */
  bool resv_tried;
  /* Last: the fields every allocation writes share the first page with the
   * first ranges, instead of adding the last page of the table. */
  struct { uintptr_t lo, hi; } ranges[MAX_RANGES]; /* every mapping we made, for hci_meta_owns */
} meta = {.lock = HCI_LOCK_INIT(HC_RANK_META)};
HC_PRIVATE_STATE(meta);

/* requires: meta.lock.  Remembers a mapping (silently forgets past MAX_RANGES:
 * hci_meta_owns then answers false, which only makes a fallback scan wider). */
static void add_range(void *p, size_t n) {
  if (meta.nranges < MAX_RANGES) {
    meta.ranges[meta.nranges].lo = (uintptr_t)p;
    meta.ranges[meta.nranges].hi = (uintptr_t)p + n;
    meta.nranges++;
  }
}

static void remove_range(void *p) {
  for (int i = 0; i < meta.nranges; i++)
    if (meta.ranges[i].lo == (uintptr_t)p) {
      meta.ranges[i] = meta.ranges[--meta.nranges];
      /* No stale copy: the checker may scan this array conservatively. */
      meta.ranges[meta.nranges].lo = meta.ranges[meta.nranges].hi = 0;
      return;
    }
}

/* Whether addr lies in metadata.  Reads without the lock: the checker calls
 * it with every allocator lock held (hci_lock_all), including this one. */
bool hci_meta_owns(uintptr_t addr) {
  /* the committed part of the reservation (the rest is PROT_NONE) */
  if (meta.resv && addr >= (uintptr_t)meta.resv && addr < (uintptr_t)__atomic_load_n(&meta.resv_cur, __ATOMIC_ACQUIRE))
    return true;
  for (int i = 0; i < meta.nranges; i++)
    if (addr >= meta.ranges[i].lo && addr < meta.ranges[i].hi) return true;
  return false;
}

static size_t bin_of(size_t n, size_t *rounded) {
  if (n <= SMALL_MAX) {
    size_t b = (n + 15) >> 4;
    *rounded = b << 4;
    return b;
  }
  size_t r = 2048;
  size_t b = SMALL_MAX / 16 + 1;
  while (r < n) {
    r <<= 1;
    b++;
  }
  *rounded = r;
  return b;
}

/* requires: meta.lock.  n bytes (a multiple of 4 KiB) committed from the
 * reservation, made at the first call; NULL when it is full or could not
 * be made (the caller maps instead). */
static void *resv_take(size_t n, bool writable) {
  if (!meta.resv_tried) {
    meta.resv_tried = true;
    meta.resv = meta.resv_cur = hci_os_reserve(HC_META_RESERVE);
    if (meta.resv) meta.resv_end = meta.resv + HC_META_RESERVE;
  }
  if (!meta.resv || (size_t)(meta.resv_end - meta.resv_cur) < n ||
      !(writable ? hci_os_commit(meta.resv_cur, n) : hci_os_commit_ro(meta.resv_cur, n)))
    return NULL;
  void *p = meta.resv_cur;
  __atomic_store_n(&meta.resv_cur, meta.resv_cur + n, __ATOMIC_RELEASE); /* hci_meta_owns reads it unlocked */
  __atomic_fetch_add(&meta.mapped, n, __ATOMIC_RELAXED);
  return p;
}

/* Unlocked: a block in the reservation lies below resv_cur, which never
 * passes resv_end, so a cut (hci_meta_unreserve) changes no answer for
 * the blocks the arena handed out from it. */
static bool in_resv(const void *p) {
  return meta.resv && (const uint8_t *)p >= meta.resv &&
         (const uint8_t *)p < __atomic_load_n(&meta.resv_end, __ATOMIC_ACQUIRE);
}

/* An address-space limit (RLIMIT_AS, `ulimit -v`) counts the reservation's
 * PROT_NONE part as if it were memory: a program that runs into its limit
 * gets it back for its heap, as it would have without us (page_heap.c's
 * growth calls this when its mapping is refused, and maps again).  From
 * then on the arena maps plain chunks, as when the reservation is full. */
bool hci_meta_unreserve(void) {
  hci_lock(&meta.lock);
  bool cut = meta.resv && meta.resv_end > meta.resv_cur;
  if (cut) {
    size_t keep = (size_t)(meta.resv_cur - meta.resv), size = (size_t)(meta.resv_end - meta.resv);
    uint8_t *base = meta.resv;
    __atomic_store_n(&meta.resv_end, meta.resv_cur, __ATOMIC_RELEASE);
    if (!keep) meta.resv = NULL; /* none of it committed: none of it left */
    hci_os_unreserve(base, keep, size);
  }
  hci_unlock(&meta.lock);
  return cut;
}

/* A large request: its own pages, from the reservation or mapped. */
static void *alloc_pages(size_t size, bool writable) {
  size_t n = (size + 4095) & ~(size_t)4095;
  hci_lock(&meta.lock);
  void *p = resv_take(n, writable);
  hci_unlock(&meta.lock);
  if (p) return p; /* fresh: zero */
  p = writable ? hci_os_map(n) : hci_os_map_ro(n);
  if (p) {
    __atomic_fetch_add(&meta.mapped, n, __ATOMIC_RELAXED);
    hci_lock(&meta.lock);
    add_range(p, n);
    hci_unlock(&meta.lock);
  }
  return p;
}

void *hci_meta_alloc_ro(size_t size) { return alloc_pages(size, false); }

void *hci_meta_alloc(size_t size) {
  if (size == 0) size = 16;
  if (size > BIN_MAX) return alloc_pages(size, true);
  size_t rounded;
  size_t b = bin_of(size, &rounded);
  hci_lock(&meta.lock);
  void *p = meta.bins[b];
  if (p) {
    meta.bins[b] = *(void **)p;
    hci_unlock(&meta.lock);
    memset(p, 0, rounded);
    return p;
  }
  if ((size_t)(meta.bump_end - meta.bump) < rounded) {
    uint8_t *chunk = resv_take(HC_META_CHUNK, true);
    if (!chunk) {
      chunk = hci_os_map(HC_META_CHUNK);
      if (!chunk) {
        hci_unlock(&meta.lock);
        return NULL;
      }
      add_range(chunk, HC_META_CHUNK);
      __atomic_fetch_add(&meta.mapped, HC_META_CHUNK, __ATOMIC_RELAXED);
    }
    /* The tail of the old chunk is simply abandoned (at most 64 KiB). */
    meta.bump = meta.populated = chunk;
    meta.bump_end = chunk + HC_META_CHUNK;
  }
  if (meta.window && meta.bump + rounded > meta.populated) {
    /* Checker mode: bumped memory is written through in order (span
     * records, the per-object records): its pages made resident a window
     * at a time cost about half their page faults (12-20 us each in a
     * virtual machine; docs/performance.md, "session 12").  The window
     * doubles from 16 KiB to 256 KiB. */
    if (meta.window < ((size_t)256 << 10)) meta.window *= 2;
    uint8_t *e = meta.bump + rounded + meta.window;
    e = e < meta.bump_end ? e : meta.bump_end;
    hci_os_populate(meta.populated, (size_t)(e - meta.populated));
    meta.populated = e;
  }
  p = meta.bump;
  meta.bump += rounded;
  hci_unlock(&meta.lock);
  return p; /* fresh mapping: already zero */
}

void hci_meta_free(void *p, size_t size) {
  if (!p) return;
  if (size == 0) size = 16;
  if (size > BIN_MAX) {
    size_t n = (size + 4095) & ~(size_t)4095;
    if (in_resv(p)) { /* the range stays mapped, not reused: see the top */
      hci_os_release(p, n);
      __atomic_fetch_sub(&meta.mapped, n, __ATOMIC_RELAXED);
      return;
    }
    hci_lock(&meta.lock);
    remove_range(p);
    hci_unlock(&meta.lock);
    hci_os_unmap(p, n);
    __atomic_fetch_sub(&meta.mapped, n, __ATOMIC_RELAXED);
    return;
  }
  size_t rounded;
  size_t b = bin_of(size, &rounded);
  hci_lock(&meta.lock);
  *(void **)p = meta.bins[b];
  meta.bins[b] = p;
  hci_unlock(&meta.lock);
}

void *hci_meta_grow(void *old, size_t *bytes, size_t used, size_t min_bytes) {
  size_t nbytes = *bytes ? *bytes * 2 : min_bytes;
  void *v = hci_meta_alloc(nbytes);
  if (v == NULL) return NULL;
  if (used) memcpy(v, old, used);
  hci_meta_free(old, *bytes);
  *bytes = nbytes;
  return v;
}

/* From now on the bump memory is made resident ahead of its use, a window
 * at a time (checker mode, whose metadata grows with the heap; outside it
 * a small process keeps its RSS). */
void hci_meta_populate(void) {
  hci_lock(&meta.lock);
  if (!meta.window) meta.window = (size_t)8 << 10;
  if (meta.populated < meta.bump) meta.populated = meta.bump;
  hci_unlock(&meta.lock);
}

size_t hci_meta_bytes(void) { return __atomic_load_n(&meta.mapped, __ATOMIC_RELAXED); }

void hci_meta_locks(hci_lock_fn *each) { each(&meta.lock); }
