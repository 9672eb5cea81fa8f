/* bench_xmalloc.c - allocating threads and freeing threads
 * (shaped like Lever & Boreham's xmalloc-test as run by mimalloc-bench).
 *
 * Purpose: bulk cross-thread freeing with a big in-flight set.  W allocator
 * threads fill batches of `batch` objects (64 bytes by default, or a size mix
 * with -s 0; the first bytes are written) and put them on one shared queue
 * that holds at most `limit` batches; W releaser threads take batches off the
 * queue and free every object.  Every object is freed by a thread that never
 * allocates, so an allocator whose thread caches send remote frees through
 * central locked lists (the tcmalloc design) moves every object through that
 * lock twice, while one with per-page remote-free lists does not.  Unlike the
 * original (which runs for a fixed time), the work is fixed: each allocator
 * thread makes `batches` batches, so runs are comparable by wall time.
 *
 * Invariants: deterministic sizes per thread; the queue bounds the live set
 * at (limit + 2W) batches; every allocated object is freed before exit.
 * Locks: one mutex with two condition variables around the queue, taken once
 * per batch.
 *
 * Usage: bench_xmalloc [-w allocator threads (= releaser threads)] [-n batches per allocator]
 *                      [-b objects per batch] [-l queue limit] [-s size, 0 = mix]
 * Prints one line: elapsed seconds, ops/s (op = one object allocated and freed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct batch {
  struct batch *next;
  void *obj[];
};

static int workers = 2;
static long batches = 1000;
static long batch_len = 4096;
static long limit = 100;
static long objsize = 64;

/* Power-of-two and 1.5x sizes from 8 bytes to 2 KiB, as a typical size mix. */
static const size_t size_mix[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
                                  384, 512, 768, 1024, 1536, 2048};

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qnotempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t qnotfull = PTHREAD_COND_INITIALIZER;
static struct batch *qhead;   /* LIFO, as in the original */
static long qlen;
static long producers_left;

static void *allocator_thread(void *arg) {
  uint64_t rng = 0x853C49E6748FEA9Bull * ((uint64_t)(uintptr_t)arg + 1);
  for (long k = 0; k < batches; k++) {
    struct batch *b = malloc(sizeof *b + (size_t)batch_len * sizeof b->obj[0]);
    if (!b) { fprintf(stderr, "malloc failed\n"); exit(1); }
    for (long i = 0; i < batch_len; i++) {
      size_t sz = objsize > 0 ? (size_t)objsize
                              : size_mix[rng_next(&rng) % (sizeof size_mix / sizeof size_mix[0])];
      void *p = malloc(sz);
      if (!p) { fprintf(stderr, "malloc(%zu) failed\n", sz); exit(1); }
      memset(p, (int)(i & 0xff), sz > 128 ? 128 : sz);
      b->obj[i] = p;
    }
    pthread_mutex_lock(&qlock);
    while (qlen >= limit) pthread_cond_wait(&qnotfull, &qlock);
    b->next = qhead;
    qhead = b;
    qlen++;
    pthread_cond_signal(&qnotempty);
    pthread_mutex_unlock(&qlock);
  }
  pthread_mutex_lock(&qlock);
  if (--producers_left == 0) pthread_cond_broadcast(&qnotempty);
  pthread_mutex_unlock(&qlock);
  return NULL;
}

static void *releaser_thread(void *arg) {
  unsigned long *sum = arg;
  for (;;) {
    pthread_mutex_lock(&qlock);
    while (qhead == NULL && producers_left > 0) pthread_cond_wait(&qnotempty, &qlock);
    struct batch *b = qhead;
    if (b) {
      qhead = b->next;
      qlen--;
      pthread_cond_signal(&qnotfull);
    }
    pthread_mutex_unlock(&qlock);
    if (!b) return NULL;
    for (long i = 0; i < batch_len; i++) {
      *sum += *(unsigned char *)b->obj[i];
      free(b->obj[i]);
    }
    free(b);
  }
}

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [-w allocator threads (2)] [-n batches each (1000)] [-b objects per batch (4096)] "
          "[-l queue limit (100)] [-s size (64; 0 = mix of 8..2048)]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  int opt;
  while ((opt = getopt(argc, argv, "w:n:b:l:s:h")) != -1) {
    switch (opt) {
    case 'w': workers = atoi(optarg); break;
    case 'n': batches = atol(optarg); break;
    case 'b': batch_len = atol(optarg); break;
    case 'l': limit = atol(optarg); break;
    case 's': objsize = atol(optarg); break;
    default: usage(argv[0]);
    }
  }
  if (workers < 1 || batches < 0 || batch_len < 1 || limit < 1 || objsize < 0) usage(argv[0]);

  pthread_t *tids = calloc((size_t)workers * 2, sizeof *tids);
  unsigned long *sums = calloc((size_t)workers, sizeof *sums * 8);  /* 64 B apart */
  if (!tids || !sums) { perror("calloc"); return 1; }
  producers_left = workers;

  double t0 = now_s();
  for (int i = 0; i < workers; i++) {
    if (pthread_create(&tids[2 * i], NULL, releaser_thread, &sums[8 * i]) != 0 ||
        pthread_create(&tids[2 * i + 1], NULL, allocator_thread, (void *)(uintptr_t)i) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  unsigned long sum = 0;
  for (int i = 0; i < 2 * workers; i++) pthread_join(tids[i], NULL);
  double el = now_s() - t0;
  for (int i = 0; i < workers; i++) sum += sums[8 * i];
  free(tids);
  free(sums);
  double total = (double)workers * (double)batches * (double)batch_len;
  printf("bench_xmalloc: %.3f s, %.0f ops/s (allocators=%d releasers=%d batches=%ld batch=%ld limit=%ld size=%ld check=%lu)\n",
         el, total / el, workers, workers, batches, batch_len, limit, objsize, sum & 0xff);
  return 0;
}
