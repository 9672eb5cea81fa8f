/* page_heap.c - runs of pages: allocation, splitting, coalescing, growth and
 * release to the OS.
 *
 * Free runs of n <= 128 pages sit on exact[n]; longer ones on `large`, where
 * allocation takes the best fit (lowest address on ties, which keeps the
 * heap compact).  A freed span merges with free neighbours found through
 * the pagemap.  Free spans are either committed (backed by memory) or
 * released (MADV_DONTNEED).  Release follows demand (see "release by
 * demand" below): committed free memory is kept while the program had that
 * much in use recently, and all of it goes at malloc_trim(0).
 *
 * Invariant: every page of every span (free or not) maps to its span.
 * Lock: hci_pageheap.lock; takes only the metadata arena lock inside. */
#include <string.h>

#include "hc_internal.h"
#include "usdt.h"

hc_pageheap_t hci_pageheap = {.lock = HCI_LOCK_INIT(HC_RANK_PAGE_HEAP)};
HC_PRIVATE_STATE(hci_pageheap);

/* Release by demand.  The page heap keeps committed free memory up to
 *
 *     demand - in use + HC_RELEASE_SLACK,   demand = max(peak_cur, peak_prev)
 *
 * where peak_cur is the most memory in use (spans handed out) during the
 * current epoch and peak_prev during the one before; an epoch lasts
 * release_delay (HC_RELEASE_DELAY_NS, 1 s) and ends on the page heap's own
 * calls and the thread caches' refills (hci_ph_tick), never by a timer or a
 * signal.  So a program that frees memory and allocates as much again
 * within an epoch or two finds its pages committed (no page faults), and
 * memory the program has not needed for one to two epochs is given back,
 * longest runs first, down to half the slack below the bound (hysteresis)
 * at its next free, allocation or refill.  A program that makes no call at
 * all keeps what it has until malloc_trim.  (The fixed 64 MiB threshold
 * before this re-faulted the malloc-large workload: 2.76 M page faults
 * against tcmalloc's 127 k, docs/performance.md.) */
static hc_pageheap_t *const ph = &hci_pageheap;

/* Span records and their ids.  Layers above key side tables by a span's id
 * (the checker's marks: one table entry per id, docs/design.md "The heap
 * view"), so ids are dense: a deleted record goes on `spare` with its id
 * and is handed out again before a new one is made, and every id is below
 * span_ids, the most records alive at once.  Guarded by the page-heap lock
 * (every record is made and deleted under it). */
static struct {
  hc_span_t *spare; /* deleted records, linked through next */
  uint32_t ids;     /* ids handed out so far */
} span_recs;
HC_PRIVATE_STATE(span_recs); /* metadata pointers: not a root */

hc_span_t *hci_span_new(void) {
  hc_span_t *s = span_recs.spare;
  if (s) {
    span_recs.spare = s->next;
    uint32_t id = s->id;
    memset(s, 0, sizeof *s);
    s->id = id;
    return s;
  }
  s = hci_meta_alloc(sizeof(hc_span_t)); /* zeroed */
  if (s) s->id = span_recs.ids++;
  return s;
}

void hci_span_delete(hc_span_t *s) {
  s->next = span_recs.spare;
  span_recs.spare = s;
}

uint32_t hci_heap_span_ids(void) { return span_recs.ids; }

/* The free lists' sentinels are set up when a span first goes on them: a
 * list whose next is NULL is empty.  Set up all at once, the 130 sentinels
 * (160 bytes each) made 21 KiB of .bss resident in every process, most of
 * it never used (docs/performance.md, "Start-up overhead"). */
static bool list_empty(const hc_span_t *h) { return !h->next || hci_span_list_empty(h); }

static hc_span_t *list_for(size_t npages) {
  return npages <= HC_PH_EXACT_LISTS ? &ph->exact[npages] : &ph->large;
}

/* requires: lock; s not on a list; its pages already map to it. */
static void put_free(hc_span_t *s) {
  s->state = HC_SPAN_FREE;
  s->cls = 0;
  if (s->is_released) ph->released_pages += s->npages;
  else ph->free_pages += s->npages;
  hc_span_t *h = list_for(s->npages);
  if (!h->next) hci_span_list_init(h);
  hci_span_list_push(h, s);
  if (s->npages <= HC_PH_EXACT_LISTS) ph->exact_used[s->npages >> 6] |= (uint64_t)1 << (s->npages & 63);
}

static void take_free(hc_span_t *s) {
  hci_span_list_remove(s);
  if (s->npages <= HC_PH_EXACT_LISTS && list_empty(&ph->exact[s->npages]))
    ph->exact_used[s->npages >> 6] &= ~((uint64_t)1 << (s->npages & 63));
  if (s->is_released) ph->released_pages -= s->npages;
  else ph->free_pages -= s->npages;
}

/* requires: lock.  Smallest free span of at least n pages, or NULL. */
static hc_span_t *find_fit(size_t n) {
  /* The first non-empty exact list from n on, by its bit (walking the
   * lists was ~370 instructions a call on random_live's mixed sizes). */
  enum { WORDS = sizeof ph->exact_used / sizeof ph->exact_used[0] };
  for (size_t w = n >> 6; w < WORDS; w++) {
    uint64_t bits = ph->exact_used[w] & (w == n >> 6 ? ~(uint64_t)0 << (n & 63) : ~(uint64_t)0);
    if (!bits) continue;
    /* Prefer committed spans: reusing them costs no page faults. */
    hc_span_t *h = &ph->exact[w * 64 + (size_t)__builtin_ctzll(bits)], *best = h->next;
    for (hc_span_t *s = h->next; s != h; s = s->next)
      if (!s->is_released) { best = s; break; }
    return best;
  }
  hc_span_t *best = NULL;
  for (hc_span_t *s = ph->large.next; s && s != &ph->large; s = s->next)
    if (s->npages >= n && (!best || s->npages < best->npages ||
                           (s->npages == best->npages && s->start < best->start)))
      best = s;
  return best;
}

/* gperftools' SysAllocator (MallocExtension::SetSystemAllocator): the
 * program's function that the heap grows from instead of mmap, called with
 * the page-heap lock held (as tcmalloc does); it must not allocate. */
static hci_sys_alloc_fn sys_alloc;
static void *sys_alloc_ctx;

void hci_ph_set_sys_alloc(hci_sys_alloc_fn fn, void *ctx) {
  hci_lock(&ph->lock);
  sys_alloc = fn;
  sys_alloc_ctx = ctx;
  hci_unlock(&ph->lock);
}

/* requires: lock.  Memory for the heap: `*bytes` or more (updated), aligned. */
static void *sys_map(size_t *bytes, size_t need, size_t align) {
  if (!sys_alloc) {
    /* Right below the heap's lowest mapping, where the kernel's top-down
     * placement usually puts it anyway: there its free run merges with the
     * heap's (hci_os_map_near). */
    uintptr_t hint = ph->lo > *bytes ? ph->lo - *bytes : 0;
    void *mem = hci_os_map_near(*bytes, align, hint);
    if (!mem && *bytes > need) { /* near an address-space limit: only what is needed */
      *bytes = need;
      mem = hci_os_map_near(*bytes, align, ph->lo > need ? ph->lo - need : 0);
    }
    return mem;
  }
  for (;;) { /* the grow size, then only what is needed, as tcmalloc */
    size_t actual = *bytes;
    void *mem = sys_alloc(sys_alloc_ctx, *bytes, &actual, align);
    if (mem && ((uintptr_t)mem & (align - 1)) == 0 && actual >= *bytes) {
      *bytes = actual & ~(size_t)(HC_PAGE_SIZE - 1);
      return mem;
    }
    if (*bytes <= need) return NULL;
    *bytes = need;
  }
}

/* tcmalloc.heap_limit_mb and tcmalloc.aggressive_memory_decommit
 * (MallocExtension::SetNumericProperty).  Guarded by the lock. */
static size_t heap_limit; /* bytes backed by memory the heap may reach; 0 = none */
static bool aggressive;   /* every freed span goes back to the OS at once */

static size_t release_locked(size_t max_bytes);
static size_t release_span(hc_span_t *s);

static size_t committed(void) { return ph->mapped_bytes - (ph->released_pages << HC_PAGE_SHIFT); }

/* requires: lock.  False when growing by `bytes` would pass the heap
 * limit even after every free page went back to the OS (as tcmalloc's
 * EnsureLimit). */
static bool within_limit(size_t bytes) {
  if (!heap_limit || committed() + bytes <= heap_limit) return true;
  release_locked(0);
  return committed() + bytes <= heap_limit;
}

void hci_ph_set_limits(size_t limit_bytes, bool aggressive_decommit) {
  hci_lock(&ph->lock);
  heap_limit = limit_bytes;
  aggressive = aggressive_decommit; /* from the next free on, as tcmalloc */
  hci_unlock(&ph->lock);
}

void hci_ph_get_limits(size_t *limit_bytes, bool *aggressive_decommit) {
  hci_lock(&ph->lock);
  *limit_bytes = heap_limit;
  *aggressive_decommit = aggressive;
  hci_unlock(&ph->lock);
}

/* Told of each growth from the OS (heap_growth.c records them), after the
 * lock is dropped. */
static _Atomic(hci_growth_fn) growth_listener;

void hci_ph_set_growth_listener(hci_growth_fn fn) {
  atomic_store_explicit(&growth_listener, fn, memory_order_release);
}

static void growth_notify(size_t bytes) {
  hci_growth_fn fn = atomic_load_explicit(&growth_listener, memory_order_acquire);
  if (fn) fn(bytes, hci_alloc_growth_stack());
}

/* requires: lock.  Maps at least n pages from the OS as one free span;
 * adds the bytes mapped to *grown. */
static bool grow(size_t n, size_t align, size_t *grown) {
  size_t bytes = n << HC_PAGE_SHIFT;
  /* Small growths map about 2 MiB, to map seldom: the most requests of this
   * size that fit in it, not 2 MiB itself.  The rest of a 2 MiB mapping
   * could not serve the next request of the same size, and the next
   * mapping (mmap goes down) does not touch that rest, so each block of
   * 1-2 MiB took 2 MiB of address space: python's 1 MiB bytearrays (1 MiB
   * and a header) got 45 % of glibc's heap under `ulimit -v`. */
  if (bytes < HC_HEAP_GROW_MIN) bytes = HC_HEAP_GROW_MIN / bytes * bytes;
  if (align < HC_PAGE_SIZE) align = HC_PAGE_SIZE;
  if (!within_limit(bytes)) {
    bytes = n << HC_PAGE_SHIFT; /* only what is needed */
    if (!within_limit(bytes)) return false;
  }
  /* The record first: the metadata arena's first use reserves its address
   * space (base/meta.c) before the heap's first mapping, so the heap's
   * mappings follow each other with no metadata between them. */
  hc_span_t *s = hci_span_new();
  if (!s) return false;
  void *mem = sys_map(&bytes, n << HC_PAGE_SHIFT, align);
  /* Refused: under an address-space limit the metadata's reserved,
   * unused address space is the program's (base/meta.c); once. */
  if (!mem && !sys_alloc && hci_meta_unreserve()) mem = sys_map(&bytes, n << HC_PAGE_SHIFT, align);
  if (!mem) {
    hci_span_delete(s);
    return false;
  }
  uintptr_t start = (uintptr_t)mem;
  if (!hci_pagemap_set(start >> HC_PAGE_SHIFT, bytes >> HC_PAGE_SHIFT, s, 0)) {
    hci_span_delete(s);
    if (!sys_alloc) hci_os_unmap(mem, bytes); /* the program's memory stays the program's */
    return false;
  }
  s->start = start;
  s->npages = bytes >> HC_PAGE_SHIFT;
  s->is_released = 1; /* untouched pages are not resident */
  ph->mapped_bytes += bytes;
  *grown += bytes;
  HC_USDT_MEMORY_HEAP_NEW(start, bytes);
  if (!ph->lo || start < ph->lo) ph->lo = start;
  if (start + bytes > ph->hi) ph->hi = start + bytes;
  /* Coalesce with neighbouring mappings so the heap stays in big runs. */
  hci_ph_free_locked(s);
  return true;
}

/* requires: lock; s free and on a list.  Returns an in-use span for the n
 * pages at page offset k of s; the k pages before it and whatever follows
 * stay free.  A free run's pages and a large span's have the same entries
 * but for the span word, so only the pages that change struct are
 * relabelled: the k pages before (a struct of their own), and then the
 * smaller of the span and the rest after it, the larger keeping s's
 * struct.  O(k + min(n, rest)) writes, not O(s->npages): relabelling the
 * rest of a 64 MiB run on every one-page allocation made each sampled
 * object cost microseconds and serialised threads on the page-heap lock,
 * and a 2 MiB block freed and taken again (bench_large) rewrote its 256
 * entries at each. */
static hc_span_t *carve_at(hc_span_t *s, size_t k, size_t n) {
  take_free(s);
  if (k) {
    hc_span_t *h = hci_span_new();
    if (!h) {
      put_free(s);
      return NULL;
    }
    h->start = s->start;
    h->npages = k;
    h->is_released = s->is_released;
    s->start += k << HC_PAGE_SHIFT;
    s->npages -= k;
    hci_pagemap_relabel(h->start >> HC_PAGE_SHIFT, k, h);
    put_free(h);
  }
  hc_span_t *a = s;
  size_t rest = s->npages - n;
  hc_span_t *r = rest ? hci_span_new() : NULL;
  if (r) {
    r->is_released = s->is_released;
    if (rest < n) { /* s is the span, r the rest after it */
      r->start = s->start + (n << HC_PAGE_SHIFT);
      r->npages = rest;
      s->npages = n;
      hci_pagemap_relabel(r->start >> HC_PAGE_SHIFT, rest, r);
      put_free(r);
    } else { /* r is the span, s the rest */
      a = r;
      a->start = s->start;
      a->npages = n;
      s->start += n << HC_PAGE_SHIFT;
      s->npages = rest;
      hci_pagemap_relabel(a->start >> HC_PAGE_SHIFT, n, a);
      put_free(s);
    }
  } /* else the whole span (no struct for the rest: wasteful but correct) */
  a->is_zeroed = a->is_released; /* released pages fault back in as zeros */
  a->is_released = 0;
  a->state = HC_SPAN_LARGE;
  ph->inuse_bytes += a->npages << HC_PAGE_SHIFT;
  if (ph->inuse_bytes > ph->peak_cur) ph->peak_cur = ph->inuse_bytes;
  return a;
}

static void roll_epoch(uint64_t now);
static void release_excess(void);

/* requires: lock.  Every allocation ends the epoch when its time is up and
 * gives back what demand no longer covers (the idle part of the heap). */
static void alloc_tick(void) {
  uint64_t now = hci_os_now_coarse_ns();
  if (hc_likely(now < ph->epoch_end)) return;
  roll_epoch(now);
  release_excess();
}

/* requires: lock.  An in-use span of npages pages, NULL when the heap
 * cannot grow; the bytes a growth mapped are added to *grown (told to the
 * growth listener after the lock is dropped). */
static hc_span_t *alloc_locked(size_t npages, size_t *grown) {
  alloc_tick();
  hc_span_t *s = find_fit(npages);
  if (!s && grow(npages, 0, grown)) s = find_fit(npages);
  return s ? carve_at(s, 0, npages) : NULL;
}

hc_span_t *hci_ph_alloc(size_t npages) {
  size_t grown = 0;
  hci_lock(&ph->lock);
  hc_span_t *s = alloc_locked(npages, &grown);
  hci_unlock(&ph->lock);
  if (grown) growth_notify(grown);
  return s;
}

static void set_class_locked(hc_span_t *s, unsigned cls);

hc_span_t *hci_ph_alloc_small(size_t npages, unsigned cls, hc_objmeta_t *records) {
  size_t grown = 0;
  hci_lock(&ph->lock);
  hc_span_t *s = alloc_locked(npages, &grown);
  if (s) {
    s->freelist = NULL;
    s->allocated = s->carved = s->opened = 0;
    s->owner = NULL; /* as the pagemap's owner words (hci_pagemap_set) */
    s->objmeta = records;
    set_class_locked(s, cls);
  }
  hci_unlock(&ph->lock);
  if (grown) growth_notify(grown);
  return s;
}

/* The heap's first growth, made by start-up (hci_alloc_reserve_heap) rather
 * than by the program's first allocation; nothing when the heap has grown. */
void hci_ph_reserve(void) {
  hci_lock(&ph->lock);
  size_t grown = 0;
  if (ph->mapped_bytes == 0) grow(1, 0, &grown);
  hci_unlock(&ph->lock);
  if (grown) growth_notify(grown);
}

/* requires: lock.  A free span shorter than n + extra pages that still
 * holds n pages from an address aligned to align (committed ones first),
 * or NULL.  find_fit(n + extra) finds only runs that fit at any
 * alignment: a block freed where an aligned request had put it sits
 * beside released pages it does not merge with (runs merge only in the
 * same state), so every later request of that shape mapped new address
 * space (posix_memalign(2 MiB, 100) and free in a loop: 2 GB of address
 * space after 1000 rounds, ENOMEM under a 1 GiB RLIMIT_AS after 500; glibc
 * none).  Every shorter free run is looked at: aligned requests above a
 * page are rare. */
static uintptr_t align_up(uintptr_t a, size_t align) { return (a + align - 1) & ~(uintptr_t)(align - 1); }

/* Whether free span s holds n pages from an address aligned to align. */
static bool holds_aligned(const hc_span_t *s, size_t n, size_t align) {
  return align_up(s->start, align) + (n << HC_PAGE_SHIFT) <= s->start + (s->npages << HC_PAGE_SHIFT);
}

static hc_span_t *aligned_fit(size_t n, size_t extra, size_t align) {
  hc_span_t *any = NULL;
  for (size_t k = n; k < n + extra && k <= HC_PH_EXACT_LISTS; k++) {
    if (!(ph->exact_used[k >> 6] >> (k & 63) & 1)) continue;
    hc_span_t *h = &ph->exact[k];
    for (hc_span_t *s = h->next; s != h; s = s->next) {
      if (!holds_aligned(s, n, align)) continue;
      if (!s->is_released) return s;
      if (!any) any = s;
    }
  }
  for (hc_span_t *s = ph->large.next; s && s != &ph->large; s = s->next) {
    if (s->npages < n || s->npages >= n + extra || !holds_aligned(s, n, align)) continue;
    if (!s->is_released) return s;
    if (!any) any = s;
  }
  return any;
}

hc_span_t *hci_ph_alloc_aligned(size_t npages, size_t align) {
  if (align <= HC_PAGE_SIZE) return hci_ph_alloc(npages);
  size_t extra = (align >> HC_PAGE_SHIFT) - 1;
  if (npages + extra < npages) return NULL;
  hci_lock(&ph->lock);
  alloc_tick();
  hc_span_t *s = aligned_fit(npages, extra, align);
  if (!s) s = find_fit(npages + extra);
  size_t grown = 0;
  if (!s && grow(npages + extra, align, &grown)) s = find_fit(npages + extra);
  if (s) {
    s = carve_at(s, (align_up(s->start, align) - s->start) >> HC_PAGE_SHIFT, npages);
  }
  hci_unlock(&ph->lock);
  if (grown) growth_notify(grown);
  return s;
}

/* requires: lock.  The free span that starts exactly at addr, or NULL. */
static hc_span_t *free_span_at(uintptr_t addr) {
  hc_span_t *s = hci_pagemap_span(addr);
  return s && s->state == HC_SPAN_FREE && s->start == addr ? s : NULL;
}

/* requires: lock.  hci_ph_grow's work. */
static bool grow_locked(hc_span_t *s, size_t npages) {
  if (npages <= s->npages) return true;
  size_t extra = npages - s->npages;
  uintptr_t end = s->start + (s->npages << HC_PAGE_SHIFT);
  hc_span_t *next = free_span_at(end);
  bool ok = next && next->npages >= extra;
  if (ok) {
    take_free(next);
    hci_pagemap_relabel(end >> HC_PAGE_SHIFT, extra, s);
    if (next->npages == extra) {
      hci_span_delete(next);
    } else { /* the rest keeps next's struct: only the pages taken were relabelled */
      next->start += extra << HC_PAGE_SHIFT;
      next->npages -= extra;
      put_free(next);
    }
    s->npages = npages;
    ph->inuse_bytes += extra << HC_PAGE_SHIFT;
    if (ph->inuse_bytes > ph->peak_cur) ph->peak_cur = ph->inuse_bytes;
  }
  return ok;
}

bool hci_ph_grow(hc_span_t *s, size_t npages) {
  hci_lock(&ph->lock);
  bool ok = grow_locked(s, npages);
  hci_unlock(&ph->lock);
  return ok;
}

bool hci_ph_grow_class(hc_span_t *s, size_t npages, unsigned cls) {
  hci_lock(&ph->lock);
  bool ok = grow_locked(s, npages);
  if (ok) { /* one critical section: VerifyAllMemory (every lock) sees the span as one class */
    hci_pagemap_set(s->start >> HC_PAGE_SHIFT, s->npages, s, cls);
    s->cls = (uint8_t)cls;
  }
  hci_unlock(&ph->lock);
  return ok;
}

/* requires: lock; lo and hi adjacent (lo ends where hi starts), neither on a
 * list.  Joins them into the struct of the longer one and relabels the
 * shorter one's pages, so a page is relabelled O(log) times over its life
 * (union by size) instead of once per merge with a huge neighbour. */
static hc_span_t *join(hc_span_t *lo, hc_span_t *hi) {
  hc_span_t *keep = lo->npages >= hi->npages ? lo : hi;
  hc_span_t *gone = keep == lo ? hi : lo;
  hci_pagemap_relabel(gone->start >> HC_PAGE_SHIFT, gone->npages, keep);
  keep->start = lo->start;
  keep->npages = lo->npages + hi->npages;
  hci_span_delete(gone);
  return keep;
}

/* requires: lock; s in use (not on a list). Merges with free neighbours. */
void hci_ph_free_locked(hc_span_t *s) {
  uintptr_t first = s->start >> HC_PAGE_SHIFT;
  hc_span_t *prev = first ? hci_pagemap_span((first - 1) << HC_PAGE_SHIFT) : NULL;
  /* Only runs in the same state merge: a run is wholly committed or wholly
   * released, so the accounting is exact and a freed committed run is not
   * released early because a released neighbour made it look bigger. */
  if (prev && prev->state == HC_SPAN_FREE && prev->start + (prev->npages << HC_PAGE_SHIFT) == s->start &&
      prev->is_released == s->is_released) {
    take_free(prev);
    s = join(prev, s);
  }
  hc_span_t *next = free_span_at(s->start + (s->npages << HC_PAGE_SHIFT));
  if (next && next->is_released == s->is_released) {
    take_free(next);
    s = join(s, next);
  }
  s->objmeta = NULL;
  s->freelist = NULL;
  s->allocated = s->carved = s->opened = 0;
  s->is_sampled = 0;
  s->req_size = 0;
  s->meta.stack_id = 0;
  put_free(s);
}

/* Room for fragmentation: free runs that do not fit the next request. */
static size_t slack_for(size_t demand) { return demand > HC_RELEASE_SLACK ? demand : HC_RELEASE_SLACK; }

static size_t release_threshold(void) {
  size_t demand = ph->peak_cur > ph->peak_prev ? ph->peak_cur : ph->peak_prev;
  if (demand < ph->inuse_bytes) demand = ph->inuse_bytes;
  return demand - ph->inuse_bytes + slack_for(demand);
}

size_t hci_ph_release_threshold(void) {
  hci_lock(&ph->lock);
  size_t t = release_threshold();
  hci_unlock(&ph->lock);
  return t;
}

static uint64_t release_delay(void) { return ph->release_delay ? ph->release_delay : HC_RELEASE_DELAY_NS; }

/* requires: lock.  Ends the epoch when its time is up: the epoch before
 * becomes the current one's peak, or, when a whole epoch passed without a
 * call, what is in use now (nothing more was in use meanwhile). */
static void roll_epoch(uint64_t now) {
  if (now < ph->epoch_end) return;
  ph->peak_prev = now >= ph->epoch_end + release_delay() ? ph->inuse_bytes : ph->peak_cur;
  ph->peak_cur = ph->inuse_bytes;
  ph->epoch_end = now + release_delay();
}

/* requires: lock.  Gives back committed free memory above the bound. */
static void release_excess(void) {
  size_t threshold = release_threshold();
  if ((ph->free_pages << HC_PAGE_SHIFT) > threshold)
    release_locked((ph->free_pages << HC_PAGE_SHIFT) - (threshold - HC_RELEASE_SLACK / 2));
}

void hci_ph_tick(void) {
  uint64_t now = hci_os_now_coarse_ns();
  if (now < __atomic_load_n(&ph->epoch_end, __ATOMIC_RELAXED)) return;
  hci_lock(&ph->lock);
  roll_epoch(now);
  release_excess();
  hci_unlock(&ph->lock);
}

void hci_ph_set_release_delay(uint64_t ns) {
  hci_lock(&ph->lock);
  ph->release_delay = ns;
  ph->epoch_end = 0; /* the next call starts an epoch of the new length */
  hci_unlock(&ph->lock);
}

void hci_ph_forget_demand(void) {
  hci_lock(&ph->lock);
  ph->peak_prev = ph->peak_cur = ph->inuse_bytes;
  release_excess();
  hci_unlock(&ph->lock);
}

/* requires: lock.  hci_ph_free's work. */
static void free_in_use(hc_span_t *s) {
  roll_epoch(hci_os_now_coarse_ns()); /* first: s was in use until now */
  ph->inuse_bytes -= s->npages << HC_PAGE_SHIFT;
  uintptr_t start = s->start;
  hci_ph_free_locked(s); /* s may be merged into a neighbour */
  hc_span_t *f = aggressive ? hci_pagemap_span(start) : NULL; /* the run holding it now */
  if (f && f->state == HC_SPAN_FREE && !f->is_released) release_span(f); /* aggressive decommit: this run, at once */
  else release_excess();
}

void hci_ph_free(hc_span_t *s) {
  hci_lock(&ph->lock);
  free_in_use(s);
  hci_unlock(&ph->lock);
}

void hci_ph_free_small(hc_span_t *s) {
  hci_lock(&ph->lock);
  set_class_locked(s, 0);
  free_in_use(s);
  hci_unlock(&ph->lock);
}

/* requires: lock; s free, committed, on a list.  Returns its bytes. */
static size_t release_span(hc_span_t *s) {
  size_t bytes = s->npages << HC_PAGE_SHIFT;
  take_free(s);
  hci_os_release((void *)s->start, bytes);
  HC_USDT_MEMORY_HEAP_LESS(s->start, bytes);
  s->is_released = 1;
  hci_ph_free_locked(s); /* merges with released neighbours */
  return bytes;
}

/* requires: lock.  Releases committed free spans, longest runs first.
 * Rescans a list from its head after each release, because merging may
 * delete the span that would have come next. */
static size_t release_locked(size_t max_bytes) {
  size_t done = 0;
  ph->release_calls++;
  for (size_t i = HC_PH_EXACT_LISTS + 1; i >= 1 && (max_bytes == 0 || done < max_bytes); i--) {
    hc_span_t *h = i > HC_PH_EXACT_LISTS ? &ph->large : &ph->exact[i];
    for (;;) {
      hc_span_t *s = h->next;
      if (!s) break; /* never used */
      while (s != h && s->is_released) s = s->next;
      if (s == h || (max_bytes && done >= max_bytes)) break;
      done += release_span(s);
    }
  }
  return done;
}

size_t hci_ph_release(size_t max_bytes) {
  hci_lock(&ph->lock);
  size_t n = release_locked(max_bytes);
  hci_unlock(&ph->lock);
  return n;
}

/* requires: lock.  Makes the allocated span s SMALL of class cls, or LARGE
 * with no class (0).  The span's state and class change with its pages'
 * entries, in one critical section: VerifyAllMemory (every lock held) saw
 * a SMALL span whose pages had no class yet (new_span) or no longer
 * (free_span), and reported "page with a wrong class" while other threads
 * allocated.  The entries first when the class goes: a SMALL span's fast
 * entries are cleared (hci_pagemap_set). */
static void set_class_locked(hc_span_t *s, unsigned cls) {
  if (cls) {
    s->state = HC_SPAN_SMALL;
    s->cls = (uint8_t)cls;
  }
  hci_pagemap_set(s->start >> HC_PAGE_SHIFT, s->npages, s, cls);
  if (!cls) s->state = HC_SPAN_LARGE;
}
