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
 *    within its capacity (tc_check.h), checked at the end. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_inline.h"
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
  if (!failures) printf("thread cache steal OK\n");
  return failures ? 1 : 0;
}
