/* test_stress.c - 4 threads, random sizes, cross-thread frees, content checks.
 *
 * Threads share an array of slots.  Each operation takes a random slot: if
 * it holds a block, the block's contents are verified and the block is
 * freed (often by a thread other than the one that allocated it);
 * otherwise a block of a random size (mostly small, some medium, a few up
 * to 1 MiB) is allocated, filled with a pattern derived from its address
 * and size, and published.  Occasionally realloc moves a block (contents
 * re-verified).  Any overlap between live blocks, or any block handed out
 * twice, corrupts a pattern and is reported.  At the end every block is
 * freed and the heap must hold (almost) nothing. */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_internal.h"
#include "heapcheck.h"

#define NTHREADS 4
#define NSLOTS 8192
#define OPS_PER_THREAD 750000

static _Atomic(uint64_t *) slots[NSLOTS];
static atomic_int failures;
static atomic_long checked;

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static size_t random_size(uint64_t *rng) {
  uint64_t r = xorshift(rng);
  unsigned pick = (unsigned)(r % 1000);
  r >>= 10;
  if (pick < 880) return 16 + r % 1009;               /* small: 16 B .. 1 KiB */
  if (pick < 985) return 1024 + r % (64 << 10);       /* medium: up to 65 KiB */
  if (pick < 997) return (64 << 10) + r % (200 << 10); /* the top classes */
  return (256 << 10) + r % (768 << 10);               /* large: up to 1 MiB */
}

/* Layout: word 0 = size, word 1 = size ^ address ^ key, then pattern words.
 * Blocks up to 4 KiB are filled entirely; bigger ones in their first and
 * last 512 bytes and one word per 512 bytes in between (every page). */
static const uint64_t key = 0x9e3779b97f4a7c15ull;
static inline uint64_t pattern(const uint64_t *base, size_t i) { return ((uintptr_t)base * 31 + i) ^ key; }

static void fill_block(uint64_t *b, size_t size) {
  size_t nw = size / 8;
  b[0] = size;
  b[1] = size ^ (uintptr_t)b ^ key;
  if (size <= 4096) {
    for (size_t i = 2; i < nw; i++) b[i] = pattern(b, i);
  } else {
    for (size_t i = 2; i < 64; i++) b[i] = pattern(b, i);
    for (size_t i = 64; i < nw - 64; i += 64) b[i] = pattern(b, i);
    for (size_t i = nw - 64; i < nw; i++) b[i] = pattern(b, i);
  }
}

static bool verify_block(const uint64_t *b, const char *when) {
  size_t size = b[0];
  bool ok = size >= 16 && size <= (1 << 20) + (64 << 10) && b[1] == (size ^ (uintptr_t)b ^ key);
  size_t nw = size / 8;
  if (ok && size <= 4096) {
    for (size_t i = 2; i < nw && ok; i++) ok = b[i] == pattern(b, i);
  } else if (ok) {
    for (size_t i = 2; i < 64 && ok; i++) ok = b[i] == pattern(b, i);
    for (size_t i = 64; i < nw - 64 && ok; i += 64) ok = b[i] == pattern(b, i);
    for (size_t i = nw - 64; i < nw && ok; i++) ok = b[i] == pattern(b, i);
  }
  if (!ok) {
    if (atomic_fetch_add(&failures, 1) < 10)
      fprintf(stderr, "FAIL: block %p (header size %zu) corrupted (%s)\n", (const void *)b, size, when);
    return false;
  }
  if (malloc_usable_size((void *)b) < size) {
    if (atomic_fetch_add(&failures, 1) < 10)
      fprintf(stderr, "FAIL: block %p usable size %zu < %zu\n", (const void *)b, malloc_usable_size((void *)b), size);
    return false;
  }
  atomic_fetch_add_explicit(&checked, 1, memory_order_relaxed);
  return true;
}

static void *worker(void *arg) {
  uint64_t rng = 0x1234567ull * ((uintptr_t)arg + 1) + 99;
  for (long op = 0; op < OPS_PER_THREAD; op++) {
    uint64_t r = xorshift(&rng);
    size_t i = (size_t)(r % NSLOTS);
    uint64_t *b = atomic_exchange_explicit(&slots[i], NULL, memory_order_acq_rel);
    if (b) {
      verify_block(b, "before free");
      if ((r >> 20) % 16 == 0) { /* realloc: the contents move with the block */
        size_t old = b[0], n = random_size(&rng);
        uint64_t *q = realloc(b, n);
        if (!q) {
          atomic_fetch_add(&failures, 1);
          continue;
        }
        /* the old words (pattern of the old address) survive the move */
        size_t keep = (old < n ? old : n) / 8;
        if (keep > 64) keep = 64;
        bool ok = q[0] == old && q[1] == (old ^ (uintptr_t)b ^ key);
        for (size_t w = 2; w < keep && ok; w++) ok = q[w] == pattern(b, w);
        if (!ok && atomic_fetch_add(&failures, 1) < 10)
          fprintf(stderr, "FAIL: realloc(%p, %zu) -> %p lost the contents\n", (void *)b, n, (void *)q);
        fill_block(q, n);
        uint64_t *expected = NULL;
        if (!atomic_compare_exchange_strong(&slots[i], &expected, q)) free(q);
      } else {
        free(b);
      }
    } else {
      size_t n = random_size(&rng);
      uint64_t *nb = malloc(n);
      if (!nb) {
        atomic_fetch_add(&failures, 1);
        fprintf(stderr, "FAIL: malloc(%zu) returned NULL\n", n);
        continue;
      }
      fill_block(nb, n);
      uint64_t *expected = NULL;
      if (!atomic_compare_exchange_strong(&slots[i], &expected, nb)) {
        verify_block(nb, "unpublished");
        free(nb);
      }
    }
  }
  return NULL;
}

int main(void) {
  hc_stats_t before, after;
  free(malloc(1));
  hc_get_stats(&before);
  pthread_t t[NTHREADS];
  for (long i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  size_t live = 0;
  for (size_t i = 0; i < NSLOTS; i++) {
    uint64_t *b = atomic_exchange(&slots[i], NULL);
    if (b) {
      live++;
      verify_block(b, "final");
      free(b);
    }
  }
  hc_get_stats(&after);
  printf("%ld blocks verified, %zu live at the end; in use %zu -> %zu bytes, mapped %zu MiB\n", (long)checked, live,
         before.in_use, after.in_use, after.heap_mapped >> 20);
  if (after.in_use > before.in_use + (1 << 20)) {
    fprintf(stderr, "FAIL: %zu bytes still in use after freeing everything (%zu before)\n", after.in_use,
            before.in_use);
    failures++;
  }
  if (after.thread_caches > 1) {
    fprintf(stderr, "FAIL: %zu thread caches alive after the workers exited\n", after.thread_caches);
    failures++;
  }
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("stress OK\n");
  return 0;
}
