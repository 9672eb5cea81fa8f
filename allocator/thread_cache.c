/* thread_cache.c - per-thread caches of free objects.
 *
 * hci_tc is one initial-exec TLS pointer.  Every thread starts pointing at
 * hci_tc_empty, a shared cache whose lists are empty and whose capacities
 * are 0, so both fast paths fall into their slow paths on first use, which
 * create the real cache: the fast paths never test "initialised?".
 * The empty cache is never written by a fast path (malloc stops at the NULL
 * head, free at len >= max).
 *
 * Capacity per class starts at one batch and grows by a batch at each
 * overflow or refill up to a limit (slow start, as in tcmalloc); the bytes a
 * cache holds are bounded by a budget that shares HC_TC_BUDGET_TOTAL among
 * the live caches.  At thread exit a pthread key destructor returns
 * everything to the central lists; allocations made after that (by later
 * TLS destructors) bypass the cache.
 *
 * Lock: hci_tc_registry_lock guards the registry list only. */
#include <pthread.h>

#include "hc_internal.h"

HC_TLS hc_tcache_t *hci_tc = &hci_tc_empty;
hc_tcache_t hci_tc_empty = {.is_static = true};
hci_lock_t hci_tc_registry_lock;
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

static size_t budget_now(void) {
  size_t n = __atomic_load_n(&tc_live, __ATOMIC_RELAXED);
  size_t b = HC_TC_BUDGET_TOTAL / (n ? n : 1);
  if (b < HC_TC_BUDGET_MIN) b = HC_TC_BUDGET_MIN;
  if (b > HC_TC_BUDGET_MAX) b = HC_TC_BUDGET_MAX;
  return b;
}

static void tc_destructor(void *arg);

void hci_tc_thread_init(void) {
  if (!tc_key_ok && pthread_key_create(&tc_key, tc_destructor) == 0) tc_key_ok = true;
}

static inline uintptr_t thread_pointer(void) { return (uintptr_t)__builtin_thread_pointer(); }

hc_tcache_t *hci_tc_get(void) {
  hc_tcache_t *tc = hci_tc;
  if (hc_likely(!tc->is_static)) return tc;
  if (tc_dead) return NULL;
  hci_ensure_init();
  tc = hci_meta_alloc(sizeof *tc);
  if (!tc) return NULL;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    tc->cap[c] = hci_classes[c].batch;
    tc->lists[c].max = fastpath_enabled ? tc->cap[c] : 0;
  }
  tc->tid = hci_os_tid();
  tc->tp = thread_pointer();
  tc->rng = ((uint64_t)tc->tid << 32) ^ (uintptr_t)tc ^ 0x9e3779b97f4a7c15ull;
  hci_sampler_reset(tc);
  hci_lock(&hci_tc_registry_lock);
  tc->next = hci_tc_registry;
  if (hci_tc_registry) hci_tc_registry->prev = tc;
  hci_tc_registry = tc;
  tc_live++;
  hci_unlock(&hci_tc_registry_lock);
  tc->budget = budget_now();
  hci_tc = tc;
  /* May allocate (keys >= 32 use a calloc'ed array): hci_tc is set already,
   * so that allocation is served by this cache. */
  if (tc_key_ok) pthread_setspecific(tc_key, tc);
  return tc;
}

/* Moves n objects from the head of list cls to central. */
static void release_objects(hc_tcache_t *tc, unsigned cls, uint32_t n) {
  hc_tc_list_t *l = &tc->lists[cls];
  if (n > l->len) n = l->len;
  if (!n) return;
  void *head = l->head, *last = head;
  for (uint32_t i = 1; i < n; i++) last = *(void **)last;
  l->head = *(void **)last;
  *(void **)last = NULL;
  l->len -= n;
  hci_central_insert(cls, head, (int)n);
}

/* Brings tc->bytes up to date for list cls. */
static inline void account(hc_tcache_t *tc, unsigned cls) {
  uint32_t len = tc->lists[cls].len;
  tc->bytes += ((size_t)len - tc->acct[cls]) * hci_classes[cls].size;
  tc->acct[cls] = len;
}

/* Gives back half of every list (at least the low half of the cache). */
static void scavenge(hc_tcache_t *tc) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    hc_tc_list_t *l = &tc->lists[c];
    if (l->len) {
      release_objects(tc, c, (l->len + 1) / 2);
      uint32_t b = hci_classes[c].batch;
      if (tc->cap[c] > b) tc->cap[c] -= b; /* shrink what proved too big */
      if (l->max) l->max = tc->cap[c];
    }
    account(tc, c);
  }
  tc->budget = budget_now();
}

void *hci_tc_refill(hc_tcache_t *tc, unsigned cls) {
  hc_tc_list_t *l = &tc->lists[cls];
  uint32_t batch = hci_classes[cls].batch;
  void *head;
  int got = hci_central_remove(cls, &head, (int)batch);
  if (!got) return NULL;
  void *p = head;
  l->head = *(void **)p;
  l->len = (uint32_t)got - 1;
  if (tc->cap[cls] < cap_limit(cls)) {
    tc->cap[cls] += batch;
    if (l->max) l->max = tc->cap[cls];
  }
  account(tc, cls);
  if (tc->bytes > tc->budget) scavenge(tc);
  return p;
}

void hci_tc_overflow(hc_tcache_t *tc, unsigned cls) {
  hc_tc_list_t *l = &tc->lists[cls];
  uint32_t batch = hci_classes[cls].batch;
  if (l->len >= tc->cap[cls]) {
    if (tc->cap[cls] < cap_limit(cls)) {
      tc->cap[cls] += batch;
      if (l->max) l->max = tc->cap[cls];
    } else {
      release_objects(tc, cls, batch);
    }
  }
  account(tc, cls);
  if (tc->bytes > tc->budget) scavenge(tc);
}

void hci_tc_flush(hc_tcache_t *tc) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    hc_tc_list_t *l = &tc->lists[c];
    uint32_t batch = hci_classes[c].batch;
    while (l->len >= batch) release_objects(tc, c, batch);
    release_objects(tc, c, l->len);
    account(tc, c);
  }
}

static void tc_destructor(void *arg) {
  hc_tcache_t *tc = arg;
  if (!tc || tc->is_static) return;
  hci_tc = &hci_tc_empty;
  tc_dead = 1;
  hci_tc_flush(tc);
  hci_lock(&hci_tc_registry_lock);
  if (tc->prev) tc->prev->next = tc->next;
  else hci_tc_registry = tc->next;
  if (tc->next) tc->next->prev = tc->prev;
  tc_live--;
  hci_unlock(&hci_tc_registry_lock);
  hci_meta_free(tc, sizeof *tc);
}

void hci_tc_set_fastpath(bool enabled) {
  hci_lock(&hci_tc_registry_lock);
  fastpath_enabled = enabled;
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
    for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
      __atomic_store_n(&tc->lists[c].max, enabled ? tc->cap[c] : 0, __ATOMIC_RELAXED);
  hci_unlock(&hci_tc_registry_lock);
}

size_t hci_tc_total_bytes(void) {
  size_t total = 0;
  hci_lock(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
    for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
      total += (size_t)__atomic_load_n(&tc->lists[c].len, __ATOMIC_RELAXED) * hci_classes[c].size;
  hci_unlock(&hci_tc_registry_lock);
  return total;
}

size_t hci_tc_count(void) { return __atomic_load_n(&tc_live, __ATOMIC_RELAXED); }

/* In the child of fork only the forking thread exists.  The other threads'
 * caches may have been mid-update: drop them (their objects are lost to the
 * child, as in tcmalloc) and keep ours. */
void hci_tc_fork_child(void) {
  hci_lock_reset(&hci_tc_registry_lock);
  hc_tcache_t *self = hci_tc;
  hci_tc_registry = NULL;
  tc_live = 0;
  if (!self->is_static) {
    self->next = self->prev = NULL;
    self->tid = hci_os_tid();
    hci_tc_registry = self;
    tc_live = 1;
  }
}
