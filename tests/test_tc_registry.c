/* test_tc_registry.c - thread caches as a set: the budget they share, the
 * registry and the flush at thread exit, and the fast-path switch.
 *
 *  - budget: threads that allocate and free a lot of every class keep at
 *    most their budget, measured while they are all alive: each list at
 *    most its capacity, cap_bytes <= budget;
 *  - a thread's cache joins the registry on first use and is flushed and
 *    unregistered when the thread exits: the count drops back and every
 *    object it held is free in central again (conservation of objects);
 *  - hci_tc_set_fastpath(false) forces every live cache (and caches made
 *    later) onto the slow path (lim == 0) while allocation keeps working;
 *    set_fastpath(true) restores lim = cap.
 * The capacity policy itself, op by op, is test_thread_cache.c's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_inline.h"
#include "hc_internal.h"

#include "tc_check.h"

#define NTHREADS 4

/* Objects of all classes that are neither free in central nor in a cache:
 * constant while nobody allocates or frees. */
static size_t objects_in_use(void) {
  size_t n = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    n += (hci_central[c].nspans * hci_classes[c].objs - hci_central_free_objects(c)) * hci_classes[c].size;
  return n - hci_tc_total_bytes();
}

// ---- budget ----

static pthread_barrier_t barrier;
static size_t own_bytes[NTHREADS];
static size_t own_budget[NTHREADS];
static size_t own_cap_bytes[NTHREADS];

static void churn_all_classes(unsigned seed) {
  static _Thread_local void *v[4096];
  for (unsigned c = 1 + seed % 3; c < HC_NUM_CLASSES; c++) {
    size_t size = hci_classes[c].size;
    size_t n = ((size_t)2 << 20) / size; /* 2 MiB of each class */
    if (n > 4096) n = 4096;
    if (n < 4) n = 4;
    for (size_t i = 0; i < n; i++) {
      v[i] = malloc(size);
      if (v[i]) memset(v[i], (int)i, 16);
    }
    for (size_t i = 0; i < n; i++) free(v[i]);
  }
}

static void *budget_thread(void *arg) {
  int id = (int)(uintptr_t)arg;
  churn_all_classes((unsigned)id);
  churn_all_classes((unsigned)id + 1);
  /* every class's last operation was a free: no list beyond its capacity */
  check_caps(hci_tc, "after churning every class", NULL);
  own_bytes[id] = cache_bytes(hci_tc);
  own_budget[id] = hci_tc->fl.budget;
  own_cap_bytes[id] = hci_tc->fl.cap_bytes;
  pthread_barrier_wait(&barrier); /* all caches full */
  pthread_barrier_wait(&barrier); /* main has measured */
  return NULL;
}

static void test_budget(void) {
  size_t count0 = hci_tc_count();
  pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, budget_thread, (void *)(uintptr_t)i);
  pthread_barrier_wait(&barrier);
  size_t total = hci_tc_total_bytes();
  size_t count = hci_tc_count();
  size_t live = count;
  CHECK(count == count0 + NTHREADS, "%zu caches with %d threads alive (%zu before)", count, NTHREADS, count0);
  /* lists within the budget; besides them, inboxes and batches of remote
   * frees (remote.c: spans change owner as threads take from them) */
  size_t limit = (hci_tc_budget_max() + HC_REMOTE_INBOX_MAX + HC_NUM_CLASSES * HC_REMOTE_BATCH_BYTES) * live;
  printf("budget: %zu caches hold %zu KB (limit %zu KB); held/capacity/budget:", live, total >> 10, limit >> 10);
  for (int i = 0; i < NTHREADS; i++)
    printf(" %zu/%zu/%zu", own_bytes[i] >> 10, own_cap_bytes[i] >> 10, own_budget[i] >> 10);
  printf(" KB\n");
  CHECK(total <= limit, "thread caches hold %zu bytes, more than %zu caches x budget %zu", total, live,
        hci_tc_budget_max());
  for (int i = 0; i < NTHREADS; i++) {
    CHECK(own_budget[i] == budget_model(), "thread %d: budget %zu, want %zu with %zu caches", i, own_budget[i],
          budget_model(), live);
    CHECK(own_bytes[i] <= own_cap_bytes[i] && own_cap_bytes[i] <= own_budget[i],
          "thread %d holds %zu bytes, capacity %zu, budget %zu", i, own_bytes[i], own_cap_bytes[i], own_budget[i]);
    CHECK(own_cap_bytes[i] > own_budget[i] / 2, "thread %d: capacity %zu after churning every class, budget %zu", i,
          own_cap_bytes[i], own_budget[i]);
  }
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&barrier);
  CHECK(hci_tc_count() == count0, "%zu caches after the threads exited, %zu before", hci_tc_count(), count0);
}

// ---- flush at thread exit ----

static atomic_int phase;
static hc_tcache_t *child_cache;

static void *holding_thread(void *arg) {
  (void)arg;
  while (atomic_load(&phase) != 1) { /* main takes its snapshot after pthread_create's own allocations */
  }
  void *v[500];
  for (int i = 0; i < 500; i++) v[i] = malloc(16 + (size_t)(i % 40) * 16);
  for (int i = 0; i < 500; i++) free(v[i]);
  child_cache = hci_tc;
  atomic_store(&phase, 2);
  while (atomic_load(&phase) != 3) {
  }
  return NULL;
}

static void test_exit_flush(void) {
  free(malloc(8)); /* the main thread has its cache */
  pthread_t t;
  pthread_create(&t, NULL, holding_thread, NULL); /* allocates the thread's DTV (kept by glibc) */
  size_t count0 = hci_tc_count(), bytes0 = hci_tc_total_bytes(), used0 = objects_in_use();
  atomic_store(&phase, 1);
  while (atomic_load(&phase) != 2) {
  }
  size_t held = cache_bytes(child_cache);
  CHECK(hci_tc_count() == count0 + 1, "a live thread's cache is not registered (%zu, %zu before)", hci_tc_count(),
        count0);
  CHECK(held > 0, "the thread's cache holds nothing after freeing 500 objects");
  CHECK(hci_tc_total_bytes() == bytes0 + held, "total %zu, want %zu + the thread's %zu", hci_tc_total_bytes(), bytes0,
        held);
  bool found = false;
  hci_lock(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) found |= tc == child_cache;
  hci_unlock(&hci_tc_registry_lock);
  CHECK(found, "the thread's cache is not in the registry");
  CHECK(objects_in_use() == used0, "objects in use %zu, %zu before (the thread freed all it allocated)",
        objects_in_use(), used0);
  atomic_store(&phase, 3);
  pthread_join(t, NULL);
  CHECK(hci_tc_count() == count0, "%zu caches after the thread exited, %zu before", hci_tc_count(), count0);
  CHECK(hci_tc_total_bytes() == bytes0, "thread caches hold %zu bytes after the exit, %zu before",
        hci_tc_total_bytes(), bytes0);
  /* what it held is free in central now: nothing lost, nothing duplicated */
  CHECK(objects_in_use() == used0, "objects in use %zu after the exit, %zu before", objects_in_use(), used0);
  hci_lock(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next)
    CHECK(tc != child_cache, "the exited thread's cache is still registered");
  hci_unlock(&hci_tc_registry_lock);
}

// ---- fast path switch ----

static atomic_int fp_phase;
static hc_tcache_t *fp_cache;

static void *fastpath_thread(void *arg) {
  (void)arg;
  free(malloc(100));
  fp_cache = hci_tc;
  atomic_store(&fp_phase, 1);
  while (atomic_load(&fp_phase) != 2) {
  }
  return NULL;
}

static void check_lims(const hc_tcache_t *tc, bool enabled, const char *who) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    uint64_t want = enabled ? hc_start_lim(&hci_classes[c]) : 0;
    /* The switch leaves the capacity alone: lim still agrees with the KiB
     * count set_cap keeps beside it. */
    uint32_t kib = (uint32_t)(((size_t)tc->fl.lists[c].lim * hci_classes[c].size) >> 10);
    if (tc->fl.lists[c].start_lim != want || kib != tc->fl.cap_kib[c]) {
      CHECK(0, "%s: class %u start_lim %#llx, want %#llx (fast path %s); lim %u (%u KiB), cap_kib %u", who, c,
            (unsigned long long)tc->fl.lists[c].start_lim, (unsigned long long)want, enabled ? "on" : "off",
            tc->fl.lists[c].lim, kib, tc->fl.cap_kib[c]);
      return;
    }
  }
}

static void test_fastpath(void) {
  free(malloc(100));
  pthread_t t;
  pthread_create(&t, NULL, fastpath_thread, NULL);
  while (atomic_load(&fp_phase) != 1) {
  }
  check_lims(hci_tc, true, "main");
  check_lims(fp_cache, true, "other thread");
  hci_tc_set_fastpath(false);
  check_lims(hci_tc, false, "main");
  check_lims(fp_cache, false, "other thread");
  /* allocation still works, objects still go through the cache (slow path) */
  void *v[1000];
  for (int i = 0; i < 1000; i++) {
    v[i] = malloc((size_t)(i % 300) + 1);
    CHECK(v[i] != NULL, "malloc with the fast path off");
    memset(v[i], 1, (size_t)(i % 300) + 1);
  }
  for (int i = 0; i < 1000; i++) free(v[i]);
  check_lims(hci_tc, false, "main after malloc/free");
  CHECK(cache_bytes(hci_tc) > 0, "slow-path frees bypassed the cache");
  /* caches made while the fast path is off start with it off */
  pthread_t t2;
  atomic_store(&fp_phase, 0);
  hc_tcache_t *first = fp_cache;
  atomic_store(&fp_phase, 2);
  pthread_join(t, NULL);
  atomic_store(&fp_phase, 0);
  pthread_create(&t2, NULL, fastpath_thread, NULL);
  while (atomic_load(&fp_phase) != 1) {
  }
  (void)first;
  check_lims(fp_cache, false, "thread started with the fast path off");
  hci_tc_set_fastpath(true);
  check_lims(hci_tc, true, "main, re-enabled");
  check_lims(fp_cache, true, "other thread, re-enabled");
  atomic_store(&fp_phase, 2);
  pthread_join(t2, NULL);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  /* Sampling off (whatever HEAPCHECK_SAMPLE_PARAMETER says): a sampled
   * object has a span of its own and never enters a list, and the
   * sampler's ticks run the scavenger, which would shrink the caches this
   * test measures (every case failed with a parameter of 64). */
  hci_sampler_set_interval(0);
  test_exit_flush();
  test_fastpath();
  test_budget();
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("thread cache registry OK\n");
  return 0;
}
