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
#include "bench_common.h"

struct batch {
  struct batch *next;
  void *obj[];
};

static long workers = 2;
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
    struct batch *b = bench_malloc(sizeof *b + (size_t)batch_len * sizeof b->obj[0]);
    for (long i = 0; i < batch_len; i++) {
      size_t sz = objsize > 0 ? (size_t)objsize
                              : size_mix[bench_rng_next(&rng) % (sizeof size_mix / sizeof size_mix[0])];
      void *p = bench_malloc(sz);
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

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'w', &workers, 1, "allocator threads (2)", NULL},
    {'n', &batches, 0, "batches each (1000)", NULL},
    {'b', &batch_len, 1, "objects per batch (4096)", NULL},
    {'l', &limit, 1, "queue limit (100)", NULL},
    {'s', &objsize, 0, "size (64; 0 = mix of 8..2048)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  pthread_t *tids = bench_calloc((size_t)workers * 2, sizeof *tids);
  unsigned long *sums = bench_calloc((size_t)workers, sizeof *sums * 8);  /* 64 B apart */
  producers_left = workers;

  double t0 = bench_now_s();
  for (long i = 0; i < workers; i++) {
    if (pthread_create(&tids[2 * i], NULL, releaser_thread, &sums[8 * i]) != 0 ||
        pthread_create(&tids[2 * i + 1], NULL, allocator_thread, (void *)(uintptr_t)i) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  unsigned long sum = 0;
  for (long i = 0; i < 2 * workers; i++) pthread_join(tids[i], NULL);
  double el = bench_now_s() - t0;
  for (long i = 0; i < workers; i++) sum += sums[8 * i];
  free(tids);
  free(sums);
  double total = (double)workers * (double)batches * (double)batch_len;
  bench_report("bench_xmalloc", el, total,
               "allocators=%ld releasers=%ld batches=%ld batch=%ld limit=%ld size=%ld check=%lu", workers,
               workers, batches, batch_len, limit, objsize, sum & 0xff);
  return 0;
}
