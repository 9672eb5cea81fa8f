/* thread_cache.c - per-thread caches of free objects.
 *
 * hci_tc is one initial-exec TLS pointer.  Every thread starts pointing at
 * hci_tc_empty, a shared cache whose lists are empty and whose capacities
 * are 0, so both fast paths fall into their slow paths on first use, which
 * create the real cache: the fast paths never test "initialised?".
 * The free fast path never writes the empty cache (it stops at start_lim
 * 0); malloc's only write is to smp.left, its head word (below).
 *
 * Capacity per class starts at 0, gets a batch at the first refill and
 * grows by a batch at each overflow up to a limit (slow start, as in
 * tcmalloc).  A list that
 * overflows at its capacity goes to central whole, in O(1): a chain needs
 * its head and length only (central keeps chains whole and hands them out
 * whole), so no tail is tracked and a push onto an empty list is the free
 * fast path's like any other.  The bytes a
 * cache can hold are bounded structurally: the sum of capacity x size over
 * the classes (cap_bytes) never exceeds the cache's budget
 * (HC_TC_BUDGET_TOTAL shared among the live caches); growing one class
 * cuts other ones when needed, their capacity above a batch first
 * (steal_capacity).  So the
 * fast paths count nothing, and a cache holds at most its budget plus one
 * chain received from central.  With two threads or more, what a list
 * did not use between two scavenges (its low-water mark, seen from the
 * slow paths) goes back by halves (the scavenger, below).  At thread exit a pthread key destructor returns
 * everything to the central lists; allocations made after that (by later
 * TLS destructors) bypass the cache.
 *
 * Lock: hci_tc_registry_lock guards the registry list only. */
#include <pthread.h>
#include <stddef.h>

#include "alloc_inline.h"
#include "usdt.h"

HC_TLS hc_tcache_t *hci_tc = &hci_tc_empty;
/* All zeros, so in .bss: a trivial program's start-up reads it (the first
 * malloc's direct[size], the first free's list) and a .data object of 42 KiB
 * would be mapped, page by page, from the file.  direct[] offset 0 reads a "list" at the cache's start, the
 * sampler's words: its head is smp.left, 0, which passes the malloc fast
 * path's test of the head (lists end at HC_FL_END, free_list.h), but the
 * sampler's subtraction from the same word then leaves it <= 0, so malloc
 * misses; from then on it is negative, a bad head.  The only writes to this
 * cache; lists[] have start_lim 0, so free misses; is_real false. */
hc_tcache_t hci_tc_empty;
_Static_assert(offsetof(hc_tcache_t, smp.left) == offsetof(hc_tc_list_t, head),
               "direct[] offset 0 in the empty cache reads smp.left as a list head");
_Static_assert(offsetof(hc_tcache_t, fl.lists[HC_NUM_CLASSES]) <= UINT16_MAX, "direct[] offsets fit 16 bits");
HC_PRIVATE_STATE(hci_tc_empty);
hci_lock_t hci_tc_registry_lock = HCI_LOCK_INIT(HC_RANK_TC_REGISTRY);
hc_tcache_t *hci_tc_registry;

static HC_TLS int tc_dead;       /* this thread's cache was flushed at exit */
static pthread_key_t tc_key;
static bool tc_key_ok;
static size_t tc_live;           /* live caches; guarded by the registry lock */
static bool fastpath_enabled = true;

static uint32_t cap_limit(unsigned cls) {
  uint32_t size = hci_classes[cls].size;
  uint32_t lim = (uint32_t)((1u << 20) / size); /* at most 1 MiB of one class */
  if (lim > 2048) lim = 2048;
  if (lim < hci_classes[cls].batch) lim = hci_classes[cls].batch;
  return lim;
}

/* The capacity of a one-way class (hci_tc_push): HC_TC_ONEWAY_BYTES of
 * objects, at least a batch, at most the class's limit. */
static uint32_t oneway_cap(unsigned cls) {
  uint32_t n = (uint32_t)(HC_TC_ONEWAY_BYTES / hci_classes[cls].size), lim = cap_limit(cls);
  if (n < hci_classes[cls].batch) n = hci_classes[cls].batch;
  return n < lim ? n : lim;
}

/* Overflows in a row a class may take before it is one-way: 1, or
 * HC_TC_ONEWAY_RUNS when the one-way capacity is no more than a batch. */
static uint8_t oneway_runs(unsigned cls) { return oneway_cap(cls) > hci_classes[cls].batch ? 1 : HC_TC_ONEWAY_RUNS; }

static size_t budget_total = HC_TC_BUDGET_TOTAL; /* tcmalloc.max_total_thread_cache_bytes */

void hci_tc_set_budget_total(size_t bytes) {
  if (bytes < HC_TC_BUDGET_MIN) bytes = HC_TC_BUDGET_MIN;
  if (bytes > ((size_t)1 << 30)) bytes = (size_t)1 << 30;
  __atomic_store_n(&budget_total, bytes, __ATOMIC_RELAXED);
}

size_t hci_tc_budget_total(void) { return __atomic_load_n(&budget_total, __ATOMIC_RELAXED); }

/* Read without the page heap's lock: a size of a moment is enough. */
size_t hci_tc_budget_max(void) {
  size_t share = __atomic_load_n(&hci_pageheap.inuse_bytes, __ATOMIC_RELAXED) / HC_TC_HEAP_SHARE;
  return share < HC_TC_BUDGET_MAX ? HC_TC_BUDGET_MAX : share > HC_TC_BUDGET_HEAP_MAX ? HC_TC_BUDGET_HEAP_MAX : share;
}

static size_t budget_now(void) {
  size_t n = __atomic_load_n(&tc_live, __ATOMIC_RELAXED);
  size_t b = hci_tc_budget_total() / (n ? n : 1), max = hci_tc_budget_max();
  if (b < HC_TC_BUDGET_MIN) b = HC_TC_BUDGET_MIN;
  if (b > max) b = max;
  return b;
}

static void tc_destructor(void *arg);

/* lists[c].start_lim: the class's, or 0 with the free fast path off (see
 * hc_tc_list_t).  requires: the registry lock. */
static inline uint64_t start_lim_of(unsigned c) { return fastpath_enabled ? hc_start_lim(&hci_classes[c]) : 0; }

void hci_tc_thread_init(void) {
  if (!tc_key_ok && pthread_key_create(&tc_key, tc_destructor) == 0) tc_key_ok = true;
}

static inline uintptr_t thread_pointer(void) { return (uintptr_t)__builtin_thread_pointer(); }

/* A cache of an exited thread, for a new thread to adopt: its lists are
 * empty (flushed at exit) and its inboxes may have received objects since
 * (remote.c), which become the new thread's.  A cache is never freed, so
 * a remote free never writes into freed memory.  Guarded by the registry
 * lock. */
static hc_tcache_t *tc_pool;

static hc_tcache_t *tc_adopt(void) {
  hci_lock(&hci_tc_registry_lock);
  hc_tcache_t *tc = tc_pool;
  if (tc) tc_pool = tc->remote.pool_next;
  hci_unlock(&hci_tc_registry_lock);
  if (!tc) return hci_meta_alloc(sizeof *tc); /* zeroed */
  __builtin_memset(tc, 0, offsetof(hc_tcache_t, remote));
  /* Batches are empty after a normal exit; a cache dropped in a fork
   * child may have been mid-update, its objects lost as its lists'. */
  __builtin_memset(tc->remote.batch, 0, sizeof tc->remote.batch);
  __builtin_memset(tc->remote.batch_owner, 0, sizeof tc->remote.batch_owner);
  tc->remote.pool_next = NULL;
  atomic_store_explicit(&tc->remote.dead, 0, memory_order_seq_cst);
  return tc;
}

/* hci_tc_get's first use of the thread (or after its exit: NULL). */
hc_tcache_t *hci_tc_adopt(void) {
  hc_tcache_t *tc;
  if (tc_dead) return NULL;
  hci_ensure_init();
  tc = tc_adopt();
  if (!tc) return NULL;
  tc->is_real = true;
  tc->fl.otag = hci_owner_tag(tc); /* the pagemap's tag of the spans it owns (remote.c) */
  tc->fl.notag = (uint16_t)~tc->fl.otag;
  /* Capacities start at 0: a class gets capacity when the thread uses it.
   * Empty lists end at HC_FL_END (free_list.h), not NULL. */
  for (unsigned c = 0; c < HC_NUM_CLASSES; c++) hc_tc_set_first(&tc->fl.lists[c], NULL);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) tc->fl.lists[c].recip = hci_classes[c].recip;
  for (size_t size = 0; size <= HC_TC_DIRECT_MAX; size++)
    tc->fl.direct[size] = (uint16_t)((char *)&tc->fl.lists[hci_size_class(size)] - (char *)tc);
  tc->tid = hci_os_tid();
  tc->tp = thread_pointer();
  hci_tc_sampler(tc)->rng = ((uint64_t)tc->tid << 32) ^ (uintptr_t)tc ^ 0x9e3779b97f4a7c15ull;
  hci_sampler_reset(tc);
  hci_lock(&hci_tc_registry_lock);
  /* Under the lock: hci_tc_set_fastpath sees this cache or we see its switch. */
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) tc->fl.lists[c].start_lim = start_lim_of(c);
  tc->next = hci_tc_registry;
  if (hci_tc_registry) hci_tc_registry->prev = tc;
  hci_tc_registry = tc;
  tc_live++;
  hci_unlock(&hci_tc_registry_lock);
  tc->fl.budget = budget_now();
  tc->fl.scav_left = HC_TC_SCAVENGE_BYTES;
  HC_USDT_MEMORY_ARENA_NEW(tc, sizeof *tc); /* glibc: a new arena for this thread */
  hci_tc = tc;
  /* May allocate (keys >= 32 use a calloc'ed array): hci_tc is set already,
   * so that allocation is served by this cache. */
  if (tc_key_ok) pthread_setspecific(tc_key, tc);
  return tc;
}

static void release_list(hc_tcache_t *tc, unsigned cls);

/* Keeps the newest `keep` objects of list cls (walking only those, which
 * were just freed and are in cache) and hands the rest to central in O(1).
 * Keeping some avoids a list that oscillates between 0 and 1 objects, which
 * would send every other malloc to central for a refill. */
static void release_tail(hc_tcache_t *tc, unsigned cls, uint32_t keep) {
  hc_tc_list_t *l = &tc->fl.lists[cls];
  if (keep == 0 || hc_tc_len(l) <= keep) {
    if (keep == 0) release_list(tc, cls);
    return;
  }
  void *cut = hc_tc_first(l, hci_classes[cls].size, 0);
  for (uint32_t i = 1; i < keep; i++) cut = hc_fl_next(cut, 0);
  hc_chain_t ch = {hc_fl_next(cut, 0), NULL, hc_tc_len(l) - keep};
  hc_fl_link(cut, NULL);
  hc_tc_set_len(l, keep);
  hci_central_insert(cls, &ch);
}

/* Hands the whole list cls to central in O(1). */
static void release_list(hc_tcache_t *tc, unsigned cls) {
  hc_tc_list_t *l = &tc->fl.lists[cls];
  if (!hc_tc_len(l)) return;
  hc_chain_t ch = {hc_tc_first(l, hci_classes[cls].size, 0), NULL, hc_tc_len(l)};
  hc_tc_set_first(l, NULL);
  hc_tc_set_len(l, 0);
  hci_central_insert(cls, &ch);
}

static void set_cap(hc_tcache_t *tc, unsigned cls, uint32_t cap) {
  tc->fl.cap_bytes -= (size_t)hc_tc_cap(&tc->fl, cls) * hci_classes[cls].size;
  tc->fl.cap_bytes += (size_t)cap * hci_classes[cls].size;
  tc->fl.cap_kib[cls] = (uint32_t)(((size_t)cap * hci_classes[cls].size) >> 10);
  uint32_t batch = hci_classes[cls].batch;
  tc->fl.over_kib[cls] = cap > batch ? (uint32_t)(((size_t)(cap - batch) * hci_classes[cls].size) >> 10) : 0;
  hc_tc_set_lim(&tc->fl.lists[cls], cap); /* the one copy of the capacity (hc_tc_cap) */
}

/* The class steal_capacity takes from (not keep), and the capacity it
 * leaves it: the one with the most KiB above its batch, cut to half but
 * not below the batch.  Only when `deep`: if no class has a KiB above its
 * batch, the one with the most KiB, halved; if none has a KiB, the lowest
 * with capacity, halved.  Returns 0 when there is none. */
static unsigned steal_victim(hc_tcache_t *tc, unsigned keep, bool deep, uint32_t *cap) {
  uint32_t saved_over = tc->fl.over_kib[keep], saved_cap = tc->fl.cap_kib[keep];
  tc->fl.over_kib[keep] = tc->fl.cap_kib[keep] = 0;
  unsigned best = hci_kib_max_class(tc->fl.over_kib);
  if (best) {
    uint32_t half = hc_tc_cap(&tc->fl, best) / 2, batch = hci_classes[best].batch;
    *cap = half > batch ? half : batch;
  } else if (deep) {
    best = hci_kib_max_class(tc->fl.cap_kib);
    for (unsigned c = 1; c < HC_NUM_CLASSES && !best; c++)
      if (c != keep && hc_tc_cap(&tc->fl, c)) best = c;
    if (best) *cap = hc_tc_cap(&tc->fl, best) / 2;
  }
  tc->fl.over_kib[keep] = saved_over;
  tc->fl.cap_kib[keep] = saved_cap;
  return best;
}

/* Makes room for `need` more bytes of capacity by cutting the capacity of
 * other classes (steal_victim), giving back a list that no longer fits,
 * until an eighth of the budget is free beyond `need`: taking just enough
 * made every later growth steal again.  Capacity above a batch goes
 * first, and a class that grows beyond its own batch takes only that: a
 * class cut below its batch comes back for a batch at its next refill
 * (grow_cap's slow start) and steals in turn, so with more classes in use
 * than the budget holds a batch of, every growth stole (random_live: a
 * steal per 2.5 refills, 43 % of its instructions; docs/performance.md,
 * "Thread-cache capacity (session 12)").  Classes go below their batch
 * for a class's slow start and for a cache over its budget (the budget
 * shrinks as threads start).  Returns whether `need` fits when no class
 * can give more. */
static bool steal_capacity(hc_tcache_t *tc, unsigned keep, size_t need) {
  size_t target = tc->fl.budget - tc->fl.budget / 8;
  if (tc->fl.cap_bytes + need <= tc->fl.budget) return true;
  bool deep = hc_tc_cap(&tc->fl, keep) < hci_classes[keep].batch || tc->fl.cap_bytes > tc->fl.budget;
  while (tc->fl.cap_bytes + need > target) {
    /* The scan runs at every steal: arrays of small integers (cap_kib,
     * over_kib, kept by set_cap) keep it at a few instructions per class. */
    uint32_t cap = 0;
    unsigned best = steal_victim(tc, keep, deep, &cap);
    if (!best) return tc->fl.cap_bytes + need <= tc->fl.budget;
    if (hc_tc_len(&tc->fl.lists[best]) > cap) release_list(tc, best);
    set_cap(tc, best, cap);
  }
  return true;
}

/* Slow start: a class's capacity grows by a batch at each overflow (grow),
 * up to its limit, within the cache's budget; a refill asks for growth only
 * while the capacity is below a batch (as tcmalloc's slow start: capacity
 * helps a list that overflows, not one that runs empty).  Growing at every
 * refill too kept a cache at its budget stealing all the time: in
 * bench_server 4 712 of 26 793 calls stole, halving 7 classes each and
 * giving back 21 075 lists (docs/performance.md, "grow_cap").  Every call
 * refreshes the budget, which shrinks when threads start; a cache over it
 * gives capacity back, from the other classes first and from this one
 * last. */
static void grow_cap(hc_tcache_t *tc, unsigned cls, bool grow) {
  tc->fl.budget = budget_now();
  uint32_t batch = hci_classes[cls].batch;
  size_t need = grow && hc_tc_cap(&tc->fl, cls) < cap_limit(cls) ? (size_t)batch * hci_classes[cls].size : 0;
  if (tc->fl.cap_bytes + need > tc->fl.budget && !steal_capacity(tc, cls, need)) {
    need = 0;
    while (tc->fl.cap_bytes > tc->fl.budget && hc_tc_cap(&tc->fl, cls)) {
      uint32_t cap = hc_tc_cap(&tc->fl, cls) / 2;
      if (hc_tc_len(&tc->fl.lists[cls]) > cap) release_tail(tc, cls, cap);
      set_cap(tc, cls, cap);
    }
  }
  if (need) set_cap(tc, cls, hc_tc_cap(&tc->fl, cls) + batch);
}

/* A chain longer than the list's capacity is another thread's overflow
 * (or its list at exit).  A thread that allocates a class it never frees
 * (the consumer side of a producer/consumer pair: xmalloc) kept a batch of
 * it, gave the rest back and came back for it a batch later: two central
 * locks and a cold walk of a batch per batch, where one lock per chain
 * does (docs/performance.md, "Long chains kept").  So the capacity grows to
 * hold the chain, up to the class's limit, when the budget has room for it
 * as it is, short of the eighth steal_capacity keeps free, and within
 * HC_TC_FIT_MAX (hc_config.h: larson's memory): a refill never takes
 * capacity from another class (grow_cap's slow start). */
static void fit_chain(hc_tcache_t *tc, unsigned cls, uint32_t n) {
  uint32_t lim = cap_limit(cls), want = n < lim ? n : lim;
  if (want <= hc_tc_cap(&tc->fl, cls)) return;
  size_t need = (size_t)(want - hc_tc_cap(&tc->fl, cls)) * hci_classes[cls].size;
  size_t b = tc->fl.budget < HC_TC_FIT_MAX ? tc->fl.budget : HC_TC_FIT_MAX;
  if (tc->fl.cap_bytes + need <= b - b / 8) set_cap(tc, cls, want);
}

/* The scavenger.  A list's low-water mark between two scavenges is what
 * its class did not use in that time: tcmalloc gives half of it back at
 * each scavenge, so a class the thread stopped using drains in a few
 * rounds while a busy one keeps its objects (and every class keeps its
 * capacity: random_live needs it, docs/performance.md "Thread-cache
 * capacity (session 12)").  tcmalloc keeps the mark on its pop fast path;
 * here the fast paths stay as they are, and the mark is the least length
 * seen at slow-path points: the last scavenge, a refill (0: the one store
 * the scavenger adds to the slow paths) and this scavenge.  Between those
 * points a list may dip lower unseen: then the scavenge gave back objects
 * the class still wanted, its next refill fetches them (a central
 * operation), and the next scavenge, finding the mark at 0 after a
 * give-back, doubles the number of scavenges the class sits out after
 * its next one (up to 2^HC_TC_SCAVENGE_BACKOFF), so a busy class costs a
 * refill now and then, not one per scavenge; a give-back nobody missed
 * halves it again.  Given back through central's transfer slots, where
 * another thread's refill of the class finds it whole. */

/* The newest n objects of list cls (0 < n <= its length) to central. */
static void release_head(hc_tcache_t *tc, unsigned cls, uint32_t n) {
  hc_tc_list_t *l = &tc->fl.lists[cls];
  void *first = hc_tc_first(l, hci_classes[cls].size, 0), *last = first;
  for (uint32_t i = 1; i < n; i++) last = hc_fl_next(last, 0);
  hc_tc_set_first(l, hc_fl_next(last, 0));
  hc_tc_set_len(l, hc_tc_len(l) - n);
  hc_fl_link(last, NULL);
  hc_chain_t ch = {first, last, n};
  hci_central_insert(cls, &ch);
}

static void scavenge(hc_tcache_t *tc) {
  hc_tc_free_t *fl = &tc->fl;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    if (!fl->lists[c].lim) continue; /* never used: nothing to give */
    uint32_t len = hc_tc_len(&fl->lists[c]), low = fl->lowater[c] < len ? fl->lowater[c] : len;
    if (fl->scav_gave[c]) { /* missed (a refill since: mark 0) or not */
      fl->scav_gave[c] = 0;
      if (!low) fl->scav_backoff[c] += fl->scav_backoff[c] < HC_TC_SCAVENGE_BACKOFF;
      else if (fl->scav_backoff[c]) fl->scav_backoff[c]--;
    }
    if (fl->scav_wait[c]) fl->scav_wait[c]--;
    else if (low && (size_t)(low + 1) / 2 * hci_classes[c].size >= HC_TC_SCAVENGE_MIN) {
      release_head(tc, c, (low + 1) / 2);
      fl->scav_gave[c] = 1;
      fl->scav_wait[c] = (uint8_t)((1u << fl->scav_backoff[c]) - 1);
    }
    uint32_t n = hc_tc_len(&fl->lists[c]);
    fl->lowater[c] = (uint16_t)(n < UINT16_MAX ? n : UINT16_MAX);
  }
}

void hci_tc_scavenge_tick(hc_tcache_t *tc, uint64_t bytes) {
  tc->fl.scav_left -= (int64_t)(bytes < (uint64_t)HC_TC_SCAVENGE_BYTES ? bytes : (uint64_t)HC_TC_SCAVENGE_BYTES);
  if (tc->fl.scav_left > 0) return;
  tc->fl.scav_left = HC_TC_SCAVENGE_BYTES;
  /* One thread: what a scavenge gives back could only come back to this
   * same class (a transfer slot), or, in spans, serve another class only
   * once a span empties, which a random free order rarely does
   * (docs/performance.md, "Memory, seventh pass"): the refills it costs
   * buy nothing then. */
  if (hci_tc_count() < 2) return;
  scavenge(tc);
}

void *hci_tc_refill(hc_tcache_t *tc, unsigned cls) {
  hc_tc_list_t *l = &tc->fl.lists[cls];
  tc->fl.lowater[cls] = 0; /* the scavenger's mark (one store: the rest is its own) */
  if (hc_unlikely((++tc->fl.refills & 255) == 0)) {
    hci_ph_tick(); /* idle pages go back (page_heap.c) */
    /* With sampling off, the scavenger's clock is 256 refills a quarter
     * (this class's mark is 0: its list is not touched). */
    if (!hci_sampler_interval()) hci_tc_scavenge_tick(tc, HC_TC_SCAVENGE_BYTES / 4);
  }
  /* Objects of our spans freed by other threads first (remote.c), then central. */
  /* A class this cache has no capacity for yet (its first use) takes what
   * one 4 KiB page holds, not a batch: carving links, and so touches, every
   * object it hands out, and a class a thread uses once (stdio's 4 KiB
   * buffer: 8 objects, 32 KiB, were touched) should not make a batch of
   * pages resident.  From the next refill on, a batch. */
  uint32_t want = hci_classes[cls].batch;
  if (hc_tc_cap(&tc->fl, cls) == 0) {
    uint32_t page = (uint32_t)(4096 / hci_classes[cls].size);
    want = page == 0 ? 1 : page < want ? page : want;
  }
  /* From a new span, up to the capacity: the list is empty, so all of it
   * fits (a class that grew beyond a batch takes a span in one central
   * lock, carved outside it; central.c). */
  hc_chain_t ch;
  if (!hci_remote_collect(tc, cls, &ch) && !hci_central_remove_fresh(cls, want, hc_tc_cap(&tc->fl, cls), &ch, tc))
    return NULL;
  tc->fl.local_runs[cls] = oneway_runs(cls);
  /* The list is empty here: the chain becomes the list, minus its head. */
  void *p = ch.head;
  hc_tc_set_first(l, hc_fl_next(p, 0));
  hc_tc_set_len(l, ch.n - 1);
  grow_cap(tc, cls, hc_tc_cap(&tc->fl, cls) < hci_classes[cls].batch);
  if (hc_tc_len(l) > hc_tc_cap(&tc->fl, cls)) fit_chain(tc, cls, hc_tc_len(l));
  /* A chain from another thread may still exceed our capacity: keep what
   * fits, give the rest back (walking only the part kept), so a cache
   * never holds more than its budget. */
  uint32_t keep = hc_tc_cap(&tc->fl, cls) > hci_classes[cls].batch ? hc_tc_cap(&tc->fl, cls) : hci_classes[cls].batch;
  if (hc_tc_len(l) > keep) release_tail(tc, cls, keep);
  return p;
}

void hci_tc_push(hc_tcache_t *tc, unsigned cls, void *p) {
  hc_tc_list_t *l = &tc->fl.lists[cls];
  if (hc_tc_len(l) >= hc_tc_cap(&tc->fl, cls)) {
    /* One-way: a class this thread frees and does not allocate (the
     * consumer of a producer/consumer pair) overflows again and again
     * with no refill between (twice, or HC_TC_ONEWAY_RUNS + 1 times:
     * oneway_runs).  Capacity there only holds memory back from
     * the thread that allocates it, which meanwhile takes new spans
     * (prodcons held ~2 MiB per side this way: docs/performance.md,
     * "Memory, second pass"), so such a class grows only up to
     * oneway_cap() and is cut back to it; a class the thread also
     * allocates grows as before. */
    uint32_t ow = oneway_cap(cls);
    bool local = tc->fl.local_runs[cls] > 0;
    if (local) tc->fl.local_runs[cls]--;
    grow_cap(tc, cls, local || hc_tc_cap(&tc->fl, cls) < ow);
    if (!local && hc_tc_cap(&tc->fl, cls) > ow) set_cap(tc, cls, ow);
    if (hc_tc_len(l) >= hc_tc_cap(&tc->fl, cls)) {
      uint32_t keep = hc_tc_cap(&tc->fl, cls) / 4;
      if (keep > 16) keep = 16;
      release_tail(tc, cls, keep);
    }
  }
  if (hc_tc_cap(&tc->fl, cls) == 0) { /* no capacity at all: straight back to central */
    hc_fl_link(p, NULL);
    hc_chain_t ch = {p, p, 1};
    hci_central_insert(cls, &ch);
    return;
  }
  hc_tc_list_push(l, p);
}

void hci_tc_flush(hc_tcache_t *tc) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) release_list(tc, c);
  hci_remote_flush(tc);
  hci_remote_drain(tc);
}

static void tc_destructor(void *arg) {
  hc_tcache_t *tc = arg;
  if (!tc || !tc->is_real) return;
  hci_tc = &hci_tc_empty;
  tc_dead = 1;
  /* Checker mode: the thread's quarantine batch joins the others' (what
   * leaves the quarantine lands in the lists, released just below). */
  if (hci_quarantine_budget) hci_alloc_quarantine_flush(tc, false);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) release_list(tc, c);
  hci_remote_exit(tc); /* batches to their owners; dead; inboxes to central */
  hci_lock(&hci_tc_registry_lock);
  if (tc->prev) tc->prev->next = tc->next;
  else hci_tc_registry = tc->next;
  if (tc->next) tc->next->prev = tc->prev;
  tc_live--;
  tc->remote.pool_next = tc_pool; /* never freed: see tc_pool */
  tc_pool = tc;
  hci_unlock(&hci_tc_registry_lock);
}

void hci_tc_set_fastpath(bool enabled) {
  hci_lock(&hci_tc_registry_lock);
  fastpath_enabled = enabled;
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
    for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
      __atomic_store_n(&tc->fl.lists[c].start_lim, start_lim_of(c), __ATOMIC_RELAXED);
  hci_unlock(&hci_tc_registry_lock);
}

size_t hci_tc_bytes(const hc_tcache_t *tc) {
  size_t total = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) { /* racy for another thread's cache: room and lim
                                                     may be of two moments */
    int64_t n = (int64_t)__atomic_load_n(&tc->fl.lists[c].lim, __ATOMIC_RELAXED) -
                __atomic_load_n(&tc->fl.lists[c].room, __ATOMIC_RELAXED);
    total += n > 0 ? (size_t)n * hci_classes[c].size : 0;
  }
  return total + hci_remote_bytes(tc);
}

size_t hci_tc_total_bytes(void) {
  size_t total = 0;
  hci_lock(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) total += hci_tc_bytes(tc);
  for (hc_tcache_t *tc = tc_pool; tc; tc = tc->remote.pool_next) total += hci_remote_bytes(tc);
  hci_unlock(&hci_tc_registry_lock);
  return total;
}

void hci_tc_drain_remote(void) {
  hci_lock(&hci_tc_registry_lock); /* then central locks, to its right */
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) hci_remote_drain(tc);
  for (hc_tcache_t *tc = tc_pool; tc; tc = tc->remote.pool_next) hci_remote_drain(tc);
  hci_unlock(&hci_tc_registry_lock);
}

size_t hci_tc_count(void) { return __atomic_load_n(&tc_live, __ATOMIC_RELAXED); }

/* In the child of fork only the forking thread exists.  The other threads'
 * caches may have been mid-update: their objects are lost to the child (as
 * in tcmalloc), the caches go to the pool for the child's new threads, dead
 * (so the child's frees of their objects stay local; their inboxes are
 * consistent, a push is one CAS) and keep ours.  When prepare took no
 * locks and the registry's is held, this thread was interrupted inside the
 * registry (a signal handler's fork): the list is the interrupted code's
 * to finish, so only the identity is taken. */
void hci_tc_fork_child(bool locks_taken) {
  hc_tcache_t *self = hci_tc;
  if (!locks_taken && atomic_load_explicit(&hci_tc_registry_lock.xstate, memory_order_relaxed) != 0) {
    if (self->is_real) self->tid = hci_os_tid();
    return;
  }
  hci_lock_reset(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry, *next; tc; tc = next) {
    next = tc->next;
    if (tc == self) continue;
    atomic_store_explicit(&tc->remote.dead, 1, memory_order_relaxed);
    tc->remote.pool_next = tc_pool;
    tc_pool = tc;
  }
  hci_tc_registry = NULL;
  tc_live = 0;
  if (self->is_real) {
    self->next = self->prev = NULL;
    self->tid = hci_os_tid();
    hci_tc_registry = self;
    tc_live = 1;
  }
}
