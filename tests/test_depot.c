/* test_depot.c - the stack depot: deduplication, distinct ids, exact frames
 * back, the reserved ids, depth clamping, a million distinct stacks (several
 * table growths), and two threads inserting the same and different stacks
 * at the same time (same stack -> same id in both).
 * The allocator under the test may record stacks of its own (sampled
 * allocations), so depot counts are checked with a little slack. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_stacks.h"

#include "hc_check.h"
#define SLACK 64 /* stacks the allocator itself may record meanwhile */

/* Stack number i of family f: depth 1..12, frames derived from (f, i). */
static int make_stack(uint64_t f, uint64_t i, uintptr_t *pcs) {
  int n = 1 + (int)(i % 12);
  for (int k = 0; k < n; k++) pcs[k] = (uintptr_t)(0x400000 + (f << 40) + (i << 6) + (uint64_t)k * 0x10 + 3);
  return n;
}

static bool same_frames(uint32_t id, const uintptr_t *pcs, int n) {
  const uintptr_t *got;
  int m = hci_depot_get(id, &got);
  return m == n && got != NULL && memcmp(got, pcs, (size_t)n * sizeof *pcs) == 0;
}

static void test_basic(void) {
  const uintptr_t *got;
  CHECK(hci_depot_put(NULL, 0) == HC_STACK_UNKNOWN, "n == 0");
  uintptr_t a[3] = {0x1000, 0x2000, 0x3000};
  CHECK(hci_depot_put(a, 0) == HC_STACK_UNKNOWN, "n == 0 with frames");
  CHECK(hci_depot_put(a, -1) == HC_STACK_UNKNOWN, "n < 0");
  CHECK(hci_depot_get(HC_STACK_NONE, &got) == 0 && got == NULL, "get(NONE)");
  CHECK(hci_depot_get(HC_STACK_UNKNOWN, &got) == 0 && got == NULL, "get(UNKNOWN)");
  CHECK(hci_depot_get(123456789, &got) == 0, "get of an id never handed out");

  size_t count0 = hci_depot_count();
  uint32_t id = hci_depot_put(a, 3);
  CHECK(id >= 2, "first id %u", id);
  CHECK(hci_depot_put(a, 3) == id, "same frames, same id");
  uintptr_t copy[3] = {0x1000, 0x2000, 0x3000};
  CHECK(hci_depot_put(copy, 3) == id, "equal frames elsewhere in memory, same id");
  CHECK(same_frames(id, a, 3), "get returns the frames");
  /* Prefixes, suffixes and one-frame changes are different stacks. */
  uint32_t p2 = hci_depot_put(a, 2);
  uint32_t s2 = hci_depot_put(a + 1, 2);
  uintptr_t b[3] = {0x1000, 0x2001, 0x3000};
  uint32_t idb = hci_depot_put(b, 3);
  CHECK(p2 >= 2 && s2 >= 2 && idb >= 2 && p2 != id && s2 != id && idb != id && p2 != s2 && p2 != idb &&
            s2 != idb,
        "distinct ids %u %u %u %u", id, p2, s2, idb);
  CHECK(same_frames(p2, a, 2) && same_frames(s2, a + 1, 2) && same_frames(idb, b, 3), "frames of the others");
  CHECK(hci_depot_count() >= count0 + 4 && hci_depot_count() <= count0 + 4 + SLACK, "count %zu",
        hci_depot_count() - count0);
  CHECK(hci_depot_bytes() > 0, "bytes");

  /* Deeper than HC_MAX_STACK_DEPTH: kept to the first 64 frames. */
  uintptr_t deep[HC_MAX_STACK_DEPTH + 10];
  for (int i = 0; i < HC_MAX_STACK_DEPTH + 10; i++) deep[i] = 0x7000 + (uintptr_t)i;
  uint32_t idd = hci_depot_put(deep, HC_MAX_STACK_DEPTH + 10);
  CHECK(idd >= 2 && same_frames(idd, deep, HC_MAX_STACK_DEPTH), "deep stack clamped to 64");
  CHECK(hci_depot_put(deep, HC_MAX_STACK_DEPTH) == idd, "clamped equals the 64-frame prefix");
}

static void test_million(void) {
  enum { N = 1000000 };
  uint32_t *ids = malloc(N * sizeof *ids);
  CHECK(ids != NULL, "malloc");
  size_t count0 = hci_depot_count();
  uintptr_t pcs[16];
  for (uint64_t i = 0; i < N; i++) {
    int n = make_stack(1, i, pcs);
    ids[i] = hci_depot_put(pcs, n);
  }
  CHECK(hci_depot_count() >= count0 + N && hci_depot_count() <= count0 + N + SLACK, "count after a million: %zu",
        hci_depot_count() - count0);
  /* New stacks get increasing (so distinct) ids. */
  int bad = 0;
  for (uint64_t i = 1; i < N; i++)
    if (ids[i] <= ids[i - 1]) bad++;
  CHECK(bad == 0 && ids[0] >= 2, "%d ids out of sequence", bad);
  bad = 0;
  for (uint64_t i = 0; i < N; i++) {
    int n = make_stack(1, i, pcs);
    if (hci_depot_put(pcs, n) != ids[i] || !same_frames(ids[i], pcs, n)) bad++;
  }
  CHECK(bad == 0, "%d of a million stacks changed id or frames", bad);
  fprintf(stderr, "depot: %zu stacks, %zu bytes (%.1f per stack)\n", hci_depot_count(), hci_depot_bytes(),
          (double)hci_depot_bytes() / (double)hci_depot_count());
  free(ids);
}

/* ---- two threads ---- */

enum { SHARED = 200000, OWN = 200000 };

typedef struct thr {
  int family;            /* private stacks: family 10 + index */
  uint32_t *shared_ids;  /* SHARED entries */
  uint32_t *own_ids;     /* OWN entries */
} thr_t;

static pthread_barrier_t start;

static void *inserter(void *p) {
  thr_t *t = p;
  uintptr_t pcs[16];
  pthread_barrier_wait(&start);
  /* Interleave shared stacks (both threads, same order: they race on the
   * same new stack all the time) and private ones. */
  for (int i = 0; i < SHARED; i++) {
    int k = i;
    int n = make_stack(2, (uint64_t)k, pcs);
    t->shared_ids[k] = hci_depot_put(pcs, n);
    n = make_stack((uint64_t)t->family, (uint64_t)i, pcs);
    t->own_ids[i] = hci_depot_put(pcs, n);
  }
  return NULL;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void test_threads(void) {
  thr_t t[2];
  pthread_t th[2];
  size_t count0 = hci_depot_count();
  pthread_barrier_init(&start, NULL, 2);
  for (int i = 0; i < 2; i++) {
    t[i].family = 10 + i;
    t[i].shared_ids = calloc(SHARED, sizeof(uint32_t));
    t[i].own_ids = calloc(OWN, sizeof(uint32_t));
    CHECK(pthread_create(&th[i], NULL, inserter, &t[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);

  int bad = 0;
  for (int i = 0; i < SHARED; i++)
    if (t[0].shared_ids[i] != t[1].shared_ids[i] || t[0].shared_ids[i] < 2) bad++;
  CHECK(bad == 0, "%d shared stacks got different ids in the two threads", bad);
  CHECK(hci_depot_count() >= count0 + SHARED + 2 * OWN && hci_depot_count() <= count0 + SHARED + 2 * OWN + SLACK,
        "count %zu, want %d", hci_depot_count() - count0, SHARED + 2 * OWN);
  /* All ids distinct across the three sets. */
  size_t total = SHARED + 2 * (size_t)OWN;
  uint32_t *all = malloc(total * sizeof *all);
  memcpy(all, t[0].shared_ids, SHARED * sizeof *all);
  memcpy(all + SHARED, t[0].own_ids, OWN * sizeof *all);
  memcpy(all + SHARED + OWN, t[1].own_ids, OWN * sizeof *all);
  qsort(all, total, sizeof *all, cmp_u32);
  int dups = 0;
  for (size_t i = 1; i < total; i++)
    if (all[i] == all[i - 1]) dups++;
  CHECK(dups == 0, "%d duplicate ids", dups);
  /* Frames come back right. */
  uintptr_t pcs[16];
  bad = 0;
  for (int i = 0; i < SHARED; i++) {
    int n = make_stack(2, (uint64_t)i, pcs);
    if (!same_frames(t[0].shared_ids[i], pcs, n)) bad++;
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < OWN; i++) {
      int n = make_stack((uint64_t)(10 + k), (uint64_t)i, pcs);
      if (!same_frames(t[k].own_ids[i], pcs, n)) bad++;
    }
  CHECK(bad == 0, "%d stacks with wrong frames after concurrent insertion", bad);
  free(all);
  for (int i = 0; i < 2; i++) {
    free(t[i].shared_ids);
    free(t[i].own_ids);
  }
}

int main(void) {
  test_basic();
  test_million();
  test_threads();
  if (failures) {
    fprintf(stderr, "test_depot: %d failures\n", failures);
    return 1;
  }
  printf("test_depot: ok\n");
  return 0;
}
