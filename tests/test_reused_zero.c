/* test_reused_zero.c - in checker mode (meson runs it with HEAPCHECK=normal)
 * every block is handed out reading as zeros where the program has not
 * written, however its memory was used before: threads allocate blocks of
 * every small class and some large ones through malloc, memalign and
 * realloc, check every requested byte is zero, fill them with a non-zero
 * pattern that looks like pointers and free them, some on another thread
 * (remote frees), so slots, spans given back to the page heap and large
 * carved from their pages are all reused.  Fails when any path hands out a
 * block with an earlier owner's bytes (docs/design.md, "Checker mode: no
 * stale pointers in reused blocks"); without the checker the allocator
 * makes no such promise and the test exits 77 (skipped). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hc_check.h"

#define THREADS 4
#define ROUNDS 20000
#define KEEP 512

static void *handoff[THREADS][KEEP]; /* freed by the next thread: remote frees */

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static size_t pick_size(uint64_t r) {
  switch (r % 16) {
  case 0: return 256 * 1024 + r % (1 << 20); /* large: a span of its own */
  case 1: return 4096 + r % 65536;
  default: return 1 + r % 1024;
  }
}

/* Every requested byte must read as zero; then written over. */
static void use(unsigned char *p, size_t n, const char *how) {
  size_t bad = n;
  for (size_t i = 0; i < n; i++)
    if (p[i]) {
      bad = i;
      break;
    }
  CHECK(bad == n, "%s(%zu): byte %zu is %#x", how, n, bad, bad < n ? p[bad] : 0);
  memset(p, 0x5a, n);
  if (n >= 8) { /* a pointer-looking word too */
    void *self = p;
    memcpy(p, &self, sizeof self);
  }
}

static void *work(void *arg) {
  int id = (int)(intptr_t)arg;
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
  void *mine[KEEP] = {0};
  for (int r = 0; r < ROUNDS; r++) {
    uint64_t x = next_rand(&s);
    int k = (int)(x % KEEP);
    free(mine[k]);
    size_t n = pick_size(x >> 8);
    unsigned char *p;
    switch ((x >> 40) % 4) {
    case 0:
      p = memalign((size_t)64 << ((x >> 44) % 4), n);
      use(p, n, "memalign");
      break;
    case 1: { /* realloc's grown tail must read as zero too */
      size_t m = n / 2 + 1;
      p = malloc(m);
      use(p, m, "malloc");
      p = realloc(p, n);
      size_t bad = n;
      for (size_t i = m; i < n; i++)
        if (p[i]) {
          bad = i;
          break;
        }
      CHECK(bad == n, "realloc(%zu -> %zu): byte %zu is not zero", m, n, bad);
      memset(p, 0x5a, n);
      break;
    }
    default:
      p = malloc(n);
      use(p, n, "malloc");
    }
    mine[k] = p;
    if (r % 7 == 0) { /* hand one over to be freed by another thread */
      void *old = __atomic_exchange_n(&handoff[id][k], p, __ATOMIC_ACQ_REL);
      mine[k] = NULL;
      free(old);
      void *theirs = __atomic_exchange_n(&handoff[(id + 1) % THREADS][k], NULL, __ATOMIC_ACQ_REL);
      free(theirs);
    }
  }
  for (int k = 0; k < KEEP; k++) free(mine[k]);
  return NULL;
}

int main(void) {
  const char *mode = getenv("HEAPCHECK");
  if (!mode || !*mode) {
    printf("test_reused_zero: not in checker mode, skipped\n");
    return 77;
  }
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++)
    for (int k = 0; k < KEEP; k++) free(handoff[i][k]);
  malloc_trim(0); /* spans back to the page heap, then once more through it */
  for (int r = 0; r < 2000; r++) {
    size_t n = pick_size((uint64_t)r * 0x9e3779b97f4a7c15ull);
    unsigned char *p = malloc(n);
    use(p, n, "malloc after trim");
    free(p);
  }
  printf("test_reused_zero: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
