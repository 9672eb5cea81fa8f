/* test_thread_cache_steal.c - a cache at its budget keeps a batch of every
 * class it uses (thread_cache.c, steal_capacity).
 *
 * One thread replaces random objects of a live set whose sizes are spread
 * log-uniformly over 16 B .. 64 KiB (bench_random_live's shape, smaller):
 * every class up to 64 KiB is in use at once, and their batches take
 * about 3.4 MiB of capacity.  The cache's budget (HC_TC_BUDGET_MAX with
 * this one cache) holds a batch of each, so once every class has had its
 * first refill:
 *  - no class in use is below its batch after any malloc or free: growth
 *    beyond a batch takes only other classes' capacity above their batch.
 *    (Halving the biggest class instead put it below its batch, its next
 *    refill took a batch back from another one, and so on: a steal at
 *    every other refill, 43 % of random_live's instructions.  With a
 *    2 MiB budget the batches do not fit and classes go below theirs.)
 *  - the capacities add up to cap_bytes within the budget, each list
 *    within its capacity (tc_check.h), checked at the end;
 *  - and (fit_thread) a chain from another thread makes the capacity grow
 *    to hold it only within HC_TC_FIT_MAX, not the whole budget. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_inline.h"
#include "free_list.h"
#include "hc_internal.h"
#include "tc_check.h"

#define SLOTS 1500
#define WARM 20000     /* replacements before the check: every class used */
#define CHECKED 100000 /* replacements checked after each malloc and free */
#define MAX_SIZE 65536

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* log-uniform in [16, 64 KiB]: an octave 16 << k (k = 0..11), then a size inside it */
static size_t pick_size(void) {
  uint64_t r = next_rand();
  size_t lo = (size_t)16 << (r % 12);
  return lo + (size_t)((r >> 8) % (lo + 1));
}

static bool used[HC_NUM_CLASSES];

/* The classes in use below their batch, and the first of them. */
static unsigned below_batch(const hc_tcache_t *tc, unsigned *first) {
  unsigned n = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (used[c] && hc_tc_cap(&tc->fl, c) < hci_classes[c].batch && !n++) *first = c;
  return n;
}

/* A chain from another thread, received with the capacity between an
 * eighth short of HC_TC_FIT_MAX and of the budget: the capacity does not
 * grow to hold it (fit_chain), the list keeps a batch.  Grows the 16, 32
 * and 64 KiB classes to their limits first (refills between overflows). */
static void *fit_thread(void *arg) {
  (void)arg;
  static void *v[4096];
  static const size_t sizes[] = {16384, 32768, 65536};
  size_t held = 0; /* kept until the end: freeing them would overflow twice in a row (one-way) */
  free(malloc(16));
  hc_tcache_t *tc = hci_tc;
  for (int s = 0; s < 3; s++) { /* rounds: a refill, then frees up to one overflow, which grows the class */
    unsigned c = hci_size_class(sizes[s]);
    for (uint32_t cap = 0; hc_tc_cap(&tc->fl, c) > cap || cap == 0;) {
      cap = hc_tc_cap(&tc->fl, c);
      size_t base = held;
      for (uint32_t i = 0; i < cap + hci_classes[c].batch + 1; i++) v[held++] = malloc(sizes[s]);
      bool over = false;
      while (held > base && !over) {
        over = hc_tc_len(&tc->fl.lists[c]) >= hc_tc_cap(&tc->fl, c);
        free(v[--held]);
      }
    }
  }
  unsigned c = hci_size_class(1024);
  uint32_t batch = hci_classes[c].batch, n = batch + 16;
  size_t b = tc->fl.budget, need = (size_t)n * 1024;
  CHECK(hc_tc_cap(&tc->fl, c) == 0 && tc->fl.cap_bytes + need > HC_TC_FIT_MAX - HC_TC_FIT_MAX / 8 &&
            tc->fl.cap_bytes + need <= b - b / 8,
        "capacity %zu, budget %zu, 1 KiB capacity %u: not what this test needs", tc->fl.cap_bytes, b,
        hc_tc_cap(&tc->fl, c));
  hci_central_drain(); /* the chain below is the only one */
  hc_chain_t ch;
  void *chain[64];
  for (uint32_t i = 0; i < n; i++) {
    CHECK(hci_central_remove(c, 1, &ch, NULL) && ch.n == 1, "an object of 1 KiB from central");
    chain[i] = ch.head;
    hc_fl_link(chain[i], i ? chain[i - 1] : NULL);
  }
  ch = (hc_chain_t){chain[n - 1], chain[0], n};
  hci_central_insert(c, &ch);
  void *p = malloc(1024); /* a refill: the chain */
  printf("a chain of %u received with capacity %zu KB (budget %zu KB): 1 KiB capacity %u, list %u\n", n,
         tc->fl.cap_bytes >> 10, b >> 10, hc_tc_cap(&tc->fl, c), hc_tc_len(&tc->fl.lists[c]));
  CHECK(hc_tc_cap(&tc->fl, c) == batch && hc_tc_len(&tc->fl.lists[c]) == batch,
        "1 KiB: capacity %u, list %u after a chain of %u: want a batch (%u), the rest back in central",
        hc_tc_cap(&tc->fl, c), hc_tc_len(&tc->fl.lists[c]), n, batch);
  free(p);
  while (held) free(v[--held]);
  return NULL;
}

int main(void) {
  atomic_store(&hci_sample_interval, 0); /* no sampled (page-granular) objects */
  static void *obj[SLOTS];
  for (int i = 0; i < SLOTS; i++) obj[i] = malloc(pick_size());
  hc_tcache_t *tc = hci_tc;
  CHECK(tc->is_real && hci_tc_count() == 1, "one real cache wanted, %zu", hci_tc_count());
  size_t batches = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES && hci_classes[c].size <= MAX_SIZE; c++)
    batches += (size_t)hci_classes[c].batch * hci_classes[c].size;
  CHECK(budget_model() - budget_model() / 8 >= batches,
        "budget %zu: no room for a batch of every class up to 64 KiB (%zu bytes), not what this test needs",
        budget_model(), batches);
  unsigned worst = 0, first = 0, when = 0;
  size_t at_budget = 0; /* operations with the capacity within an eighth of the budget */
  for (long i = 0; i < WARM + CHECKED; i++) {
    long k = (long)(next_rand() % SLOTS);
    free(obj[k]);
    unsigned n = i >= WARM ? below_batch(tc, &first) : 0;
    size_t size = pick_size();
    obj[k] = malloc(size);
    CHECK(obj[k] != NULL, "malloc(%zu)", size);
    used[hci_size_class(size)] = true;
    if (i >= WARM) {
      unsigned m = below_batch(tc, &first);
      if (m > n) n = m;
      if (n > worst) worst = n, when = (unsigned)(i - WARM);
      at_budget += tc->fl.cap_bytes + tc->fl.budget / 8 > tc->fl.budget;
    }
  }
  unsigned classes = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) classes += used[c];
  printf("%u classes in use, their batches %zu KB, budget %zu KB, capacity %zu KB; %zu of %d checked replacements "
         "within an eighth of the budget; at most %u classes below their batch\n",
         classes, batches >> 10, tc->fl.budget >> 10, tc->fl.cap_bytes >> 10, at_budget, CHECKED, worst);
  CHECK(at_budget > CHECKED / 2, "the cache was at its budget in %zu of %d replacements: nothing to steal", at_budget,
        CHECKED);
  CHECK(worst == 0, "%u classes in use below their batch at replacement %u (class %u of %u bytes: capacity %u, batch %u)",
        worst, when, first, hci_classes[first].size, hc_tc_cap(&tc->fl, first), hci_classes[first].batch);
  check_caps(tc, "after the replacements", NULL);
  for (int i = 0; i < SLOTS; i++) free(obj[i]);
  pthread_t t;
  pthread_create(&t, NULL, fit_thread, NULL);
  pthread_join(t, NULL);
  if (!failures) printf("thread cache steal OK\n");
  return failures ? 1 : 0;
}
