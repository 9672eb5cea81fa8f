/* test_verify_concurrent.c - MallocExtension_VerifyAllMemory while other
 * threads make and give back spans finds nothing wrong.
 *
 * VerifyAllMemory holds every allocator lock, so what it walks must be
 * consistent at every point where the page-heap lock is free: a span's
 * state, class and its pages' pagemap entries change together
 * (hci_ph_alloc_small, hci_ph_free_small), and so does a one-object class's span that realloc
 * grows in place (hci_ph_grow_class).  Before session 15 new_span set a
 * span SMALL before its pages had their class, and free_span cleared the
 * class of a span still SMALL: a verifier running beside threads that
 * take and return spans reported "page with a wrong class" (2 runs of 3
 * of this shape).  Three threads grow buffers through the one-object
 * classes by realloc and allocate and free blocks of every class from
 * 36 KiB up (each a span of its own, back to the page heap beyond the
 * one a class keeps) while the main thread verifies. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gperftools/malloc_extension_c.h"
#include "hc_check.h"

#define THREADS 3
#define ROUNDS 600

static atomic_int done;

static void *worker(void *arg) {
  uint32_t s = (uint32_t)(uintptr_t)arg * 2654435761u;
  for (int r = 0; r < ROUNDS; r++) {
    size_t n = 30000;
    unsigned char *p = malloc(n);
    if (!p) break;
    memset(p, r & 255, n);
    while (n < 250000) {
      s = s * 1103515245u + 12345u;
      size_t m = n + 1 + (s >> 8) % 20000;
      unsigned char *q = realloc(p, m);
      if (!q) break;
      CHECK(q[0] == (unsigned char)(r & 255) && q[n - 1] == (unsigned char)(r & 255), "realloc lost contents");
      memset(q + n, r & 255, m - n);
      p = q;
      n = m;
      if ((s >> 3) % 5 == 0) free(malloc(36864 + (s >> 5) % 200000));
    }
    free(p);
  }
  atomic_fetch_add(&done, 1);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
  int verifies = 0, bad = 0;
  while (atomic_load(&done) < THREADS) {
    if (!MallocExtension_VerifyAllMemory()) bad++;
    verifies++;
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  CHECK(bad == 0, "VerifyAllMemory failed %d times of %d while threads took and returned spans", bad, verifies);
  CHECK(MallocExtension_VerifyAllMemory(), "VerifyAllMemory at the end");
  printf("test_verify_concurrent: %d verifies, %d failed checks\n", verifies, failures);
  return failures != 0;
}
