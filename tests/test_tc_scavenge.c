/* test_tc_scavenge.c - the thread-cache scavenger gives an idle class's
 * objects back and leaves a busy class's alone (thread_cache.c,
 * hci_tc_scavenge_tick).
 *
 * With a second thread alive (the scavenger is off in a one-thread
 * process):
 *  - idle: 4 KiB objects freed into the cache and never asked for again
 *    lose half of the list's low-water mark at each scavenge, down to 0,
 *    and the class keeps its capacity; hc_get_stats' thread-cache bytes
 *    fall by what the list held;
 *  - busy: a class whose list runs empty (a refill) between two
 *    scavenges gives nothing back;
 *  - backoff: a class whose give-back was missed (a refill came after
 *    it) sits out the scavenge after its next give-back;
 *  - the clock: the same idle list drains while the thread only
 *    allocates and frees 64-byte objects (the sampler's ticks, every
 *    ~512 KiB allocated, at the default interval), and with sampling
 *    switched off, by refills (256 a quarter of the interval).
 * Then with the second thread gone, a scavenge gives nothing back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_inline.h"
#include "hc_check.h"
#include "hc_internal.h"
#include "heapcheck.h"

#define IDLE_SIZE 4096
#define IDLE_N 48
#define BUSY_SIZE 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int helper_ready, helper_go;

static void *helper(void *arg) {
  (void)arg;
  free(malloc(32)); /* a cache of its own: two caches live */
  pthread_mutex_lock(&mu);
  helper_ready = 1;
  pthread_cond_signal(&cv);
  while (!helper_go) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static uint32_t len_of(hc_tcache_t *tc, size_t size) { return hc_tc_len(&tc->fl.lists[hci_size_class(size)]); }

/* Fills the cache's list of IDLE_SIZE with objects freed here; returns its length. */
static uint32_t fill_idle(hc_tcache_t *tc) {
  void *p[IDLE_N];
  for (int i = 0; i < IDLE_N; i++) p[i] = malloc(IDLE_SIZE);
  for (int i = 0; i < IDLE_N; i++) free(p[i]);
  return len_of(tc, IDLE_SIZE);
}

/* Allocates more BUSY_SIZE objects than the list holds (it runs empty:
 * a refill) and frees them. */
static void run_empty(hc_tcache_t *tc) {
  static void *b[4096];
  uint32_t k = len_of(tc, BUSY_SIZE) + 8;
  CHECK(k <= 4096, "busy list of %u objects", k - 8);
  for (uint32_t i = 0; i < k; i++) b[i] = malloc(BUSY_SIZE);
  for (uint32_t i = 0; i < k; i++) free(b[i]);
}

static void scavenge_now(hc_tcache_t *tc) { hci_tc_scavenge_tick(tc, (uint64_t)HC_TC_SCAVENGE_BYTES); }

int main(void) {
  pthread_t th;
  /* Sampling off but where the sampler is the clock under test: a sampled
   * object never enters a list, and every sampler tick may scavenge, so
   * the counts below hold only without it (with HEAPCHECK_SAMPLE_PARAMETER
   * at 64 the busy and backoff cases failed). */
  size_t interval = hci_sampler_set_interval(0);
  free(malloc(1));
  hc_tcache_t *tc = hci_tc_get();
  CHECK(tc && tc->is_real, "no thread cache");
  unsigned idle = hci_size_class(IDLE_SIZE), busy = hci_size_class(BUSY_SIZE);
  CHECK(pthread_create(&th, NULL, helper, NULL) == 0, "pthread_create");
  pthread_mutex_lock(&mu);
  while (!helper_ready) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  CHECK(hci_tc_count() >= 2, "two caches live: %zu", hci_tc_count());

  /* Idle: halved at each scavenge, to 0; the capacity stays. */
  scavenge_now(tc); /* a mark taken from here on */
  uint32_t n = fill_idle(tc), cap = hc_tc_cap(&tc->fl, idle);
  CHECK(n >= 8, "idle list holds %u objects after %d frees", n, IDLE_N);
  hc_stats_t before, after;
  hc_get_stats(&before);
  CHECK(before.thread_cache_free >= (size_t)n * IDLE_SIZE, "stats: thread caches hold %zu, the list %u objects",
        before.thread_cache_free, n);
  /* The first scavenge only takes the mark (the list grew since the last
   * one: its mark was what it held then); each later one gives half. */
  scavenge_now(tc);
  uint32_t want = n, rounds = 0;
  while (want) {
    scavenge_now(tc);
    want -= (want + 1) / 2;
    rounds++;
    CHECK(len_of(tc, IDLE_SIZE) == want, "idle list after scavenge %u: %u objects, expected %u", rounds,
          len_of(tc, IDLE_SIZE), want);
  }
  CHECK(hc_tc_cap(&tc->fl, idle) == cap, "idle class's capacity %u -> %u", cap, hc_tc_cap(&tc->fl, idle));
  hc_get_stats(&after);
  CHECK(before.thread_cache_free - after.thread_cache_free >= (size_t)n * IDLE_SIZE,
        "stats: thread caches %zu -> %zu bytes, the idle list held %zu", before.thread_cache_free,
        after.thread_cache_free, (size_t)n * IDLE_SIZE);

  /* Busy: a refill between two scavenges (the list ran empty) keeps it whole. */
  for (int round = 0; round < 4; round++) {
    run_empty(tc);
    uint32_t held = len_of(tc, BUSY_SIZE);
    scavenge_now(tc);
    CHECK(held > 0 && len_of(tc, BUSY_SIZE) == held, "busy list round %d: %u -> %u objects", round, held,
          len_of(tc, BUSY_SIZE));
  }

  /* Backoff: a give-back followed by a refill (missed) doubles the wait
   * after the next give-back. */
  CHECK(tc->fl.scav_backoff[busy] == 0, "busy class's backoff %u before any give-back", tc->fl.scav_backoff[busy]);
  n = len_of(tc, BUSY_SIZE);
  scavenge_now(tc); /* idle since the last scavenge: half goes */
  CHECK(len_of(tc, BUSY_SIZE) == n - (n + 1) / 2, "busy list idle for a scavenge: %u -> %u", n, len_of(tc, BUSY_SIZE));
  run_empty(tc);    /* the give-back was missed */
  scavenge_now(tc); /* the mark is 0 (the refill): nothing, and a longer backoff */
  CHECK(tc->fl.scav_backoff[busy] == 1, "backoff after a missed give-back: %u", tc->fl.scav_backoff[busy]);
  n = len_of(tc, BUSY_SIZE);
  scavenge_now(tc); /* gives half, then sits out one */
  CHECK(len_of(tc, BUSY_SIZE) == n - (n + 1) / 2, "busy list after its wait: %u -> %u", n, len_of(tc, BUSY_SIZE));
  n = len_of(tc, BUSY_SIZE);
  scavenge_now(tc);
  CHECK(len_of(tc, BUSY_SIZE) == n, "busy list in its backoff: %u -> %u", n, len_of(tc, BUSY_SIZE));

  /* The clock: a 64-byte pair loop drains the idle list by itself, at
   * the default interval whatever the environment says (a sample's
   * weight is the interval it was drawn with: at 1 byte the loop's 64 MiB
   * would count as 1 MiB). */
  n = fill_idle(tc);
  hci_sampler_set_interval(HC_DEFAULT_SAMPLE_INTERVAL);
  for (long i = 0; i < (64l << 20) / BUSY_SIZE; i++) {
    void *p = malloc(BUSY_SIZE);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
  }
  hci_sampler_set_interval(0);
  CHECK(len_of(tc, IDLE_SIZE) == 0, "idle list of %u objects after 64 MiB of 64-byte pairs: %u", n,
        len_of(tc, IDLE_SIZE));
  /* With sampling off, 256 refills are a quarter of the interval: runs of
   * mallocs longer than the 64-byte list (each a few refills) drain it. */
  n = fill_idle(tc);
  uint32_t refills0 = tc->fl.refills;
  while (len_of(tc, IDLE_SIZE) && tc->fl.refills - refills0 < 64 * 256) run_empty(tc);
  CHECK(len_of(tc, IDLE_SIZE) == 0, "sampling off: idle list of %u objects after %u refills: %u", n,
        tc->fl.refills - refills0, len_of(tc, IDLE_SIZE));

  /* One thread: nothing is given back. */
  pthread_mutex_lock(&mu);
  helper_go = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(th, NULL);
  CHECK(hci_tc_count() == 1, "one cache live: %zu", hci_tc_count());
  n = fill_idle(tc);
  for (int i = 0; i < 4; i++) scavenge_now(tc);
  CHECK(len_of(tc, IDLE_SIZE) == n, "one thread: idle list %u -> %u", n, len_of(tc, IDLE_SIZE));
  hci_sampler_set_interval(interval);
  printf("test_tc_scavenge: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
