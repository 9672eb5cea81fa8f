/* bench_prodcons.c - one thread allocates, another frees everything.
 *
 * Purpose: the pure remote-free path.  The producer allocates objects of
 * random size (16..256 bytes, touched), groups them in batches (the batch
 * header is malloc'd by the producer too) and pushes each batch on a bounded
 * FIFO; the consumer pops batches, reads and frees every object and the batch.
 * Every free is therefore a cross-thread free.
 *
 * Invariants: deterministic sizes; at most `depth` batches are queued, so the
 * live set is bounded (depth * batch objects); the consumer frees exactly
 * what the producer allocated.
 * Locks: one mutex + two condition variables around the FIFO, taken once per
 * batch (not per object) so the queue is not what is being measured.
 *
 * Usage: bench_prodcons [-n objects] [-b batch size] [-d queue depth]
 * Prints one line: elapsed seconds, ops/s (op = one object allocated and freed).
 */
#include "bench_common.h"

struct batch {
  struct batch *next;
  long n;
  unsigned char *obj[];
};

static long total_objs = 10000000;
static long batch_len = 256;
static long depth = 64;

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qnotempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t qnotfull = PTHREAD_COND_INITIALIZER;
static struct batch *qhead, *qtail;
static long qlen;
static int qdone;

static void push(struct batch *b) {
  pthread_mutex_lock(&qlock);
  while (qlen >= depth) pthread_cond_wait(&qnotfull, &qlock);
  b->next = NULL;
  if (qtail) qtail->next = b; else qhead = b;
  qtail = b;
  qlen++;
  pthread_cond_signal(&qnotempty);
  pthread_mutex_unlock(&qlock);
}

static struct batch *pop(void) {
  pthread_mutex_lock(&qlock);
  while (qlen == 0 && !qdone) pthread_cond_wait(&qnotempty, &qlock);
  struct batch *b = qhead;
  if (b) {
    qhead = b->next;
    if (!qhead) qtail = NULL;
    qlen--;
    pthread_cond_signal(&qnotfull);
  }
  pthread_mutex_unlock(&qlock);
  return b;
}

static void *producer(void *arg) {
  (void)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  long made = 0;
  while (made < total_objs) {
    long n = total_objs - made < batch_len ? total_objs - made : batch_len;
    struct batch *b = bench_malloc(sizeof *b + (size_t)n * sizeof b->obj[0]);
    b->n = n;
    for (long i = 0; i < n; i++) {
      size_t sz = bench_size_in(bench_rng_next(&rng), 16, 256);
      unsigned char *p = bench_malloc(sz);
      p[0] = (unsigned char)sz;
      p[sz - 1] = (unsigned char)i;
      b->obj[i] = p;
    }
    made += n;
    push(b);
  }
  pthread_mutex_lock(&qlock);
  qdone = 1;
  pthread_cond_broadcast(&qnotempty);
  pthread_mutex_unlock(&qlock);
  return NULL;
}

static void *consumer(void *arg) {
  unsigned long *sum = arg;
  struct batch *b;
  while ((b = pop()) != NULL) {
    for (long i = 0; i < b->n; i++) {
      *sum += b->obj[i][0];
      free(b->obj[i]);
    }
    free(b);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
    {'n', &total_objs, 1, "objects (10000000)", NULL},
    {'b', &batch_len, 1, "batch (256)", NULL},
    {'d', &depth, 1, "depth (64)", NULL},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  unsigned long sum = 0;
  pthread_t pt, ct;
  double t0 = bench_now_s();
  if (pthread_create(&ct, NULL, consumer, &sum) != 0 ||
      pthread_create(&pt, NULL, producer, NULL) != 0) {
    perror("pthread_create");
    return 1;
  }
  pthread_join(pt, NULL);
  pthread_join(ct, NULL);
  double el = bench_now_s() - t0;
  bench_report("bench_prodcons", el, (double)total_objs, "objects=%ld batch=%ld depth=%ld check=%lu",
               total_objs, batch_len, depth, sum & 0xff);
  return 0;
}
