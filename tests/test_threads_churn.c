/* test_threads_churn.c - 2000 short-lived threads must not grow the heap.
 *
 * Threads start in waves of 20..50; each allocates and frees a few MB in
 * blocks of mixed sizes (keeping some alive until it exits, and freeing a
 * few blocks that another thread of the previous wave allocated).  Thread
 * caches must be flushed at exit: after everything joined, the number of
 * live caches is back to (at most) the main thread's and the RSS (from
 * /proc/self/statm) is within 64 MB of what it was after a warm-up wave. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_internal.h"
#include "heapcheck.h"

#define TOTAL_THREADS 2000
#define HANDOFF 64

#include "hc_check.h"

/* Blocks handed from one wave to the next (freed by another thread). */
static _Atomic(char *) handoff[HANDOFF];
static atomic_int thread_errors;

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (!f || fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
  if (f) fclose(f);
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

static void *worker(void *arg) {
  uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
  enum { KEEP = 64 };
  char *keep[KEEP] = {0};
  size_t total = 0;
  for (int i = 0; total < (3u << 20); i++) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    size_t n = (rng >> 8) % 100 < 90 ? 16 + (rng >> 16) % 2048 : 4096 + (rng >> 16) % (60 << 10);
    char *p = malloc(n);
    if (!p) {
      atomic_fetch_add(&thread_errors, 1);
      break;
    }
    memset(p, (int)(i & 0xff), n);
    total += n;
    int k = (int)((rng >> 32) % KEEP);
    if (keep[k]) free(keep[k]);
    keep[k] = p;
  }
  /* hand a block to a later thread, free one from an earlier thread */
  int h = (int)((uintptr_t)arg % HANDOFF);
  char *mine = malloc(333);
  memset(mine, 0x5c, 333);
  char *theirs = atomic_exchange(&handoff[h], mine);
  if (theirs) {
    for (int i = 0; i < 333; i++)
      if ((unsigned char)theirs[i] != 0x5c) {
        atomic_fetch_add(&thread_errors, 1);
        break;
      }
    free(theirs);
  }
  for (int k = 0; k < KEEP; k++) free(keep[k]);
  return NULL;
}

static void run_wave(int first, int n) {
  pthread_t t[64];
  for (int i = 0; i < n; i++) {
    int rc = pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(first + i));
    CHECK(rc == 0, "pthread_create: %d", rc);
    if (rc) t[i] = 0;
  }
  for (int i = 0; i < n; i++)
    if (t[i]) pthread_join(t[i], NULL);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  free(malloc(1));
  /* warm-up wave: stacks cached by glibc, heap grown once */
  run_wave(0, 50);
  size_t rss0 = rss_bytes();
  size_t caches0 = hci_tc_count();
  int started = 50, wave = 0;
  size_t rss_max = rss0;
  while (started < TOTAL_THREADS) {
    int n = 20 + (wave * 7) % 31; /* 20..50 */
    if (started + n > TOTAL_THREADS) n = TOTAL_THREADS - started;
    run_wave(started, n);
    started += n;
    wave++;
    size_t r = rss_bytes();
    if (r > rss_max) rss_max = r;
  }
  for (int i = 0; i < HANDOFF; i++) free(atomic_exchange(&handoff[i], NULL));
  size_t rss1 = rss_bytes();
  size_t caches = hci_tc_count();
  hc_stats_t st;
  hc_get_stats(&st);
  printf("%d threads in %d waves; RSS %zu MB after warm-up, %zu MB at the end (max %zu MB); caches %zu -> %zu; "
         "thread-cache bytes %zu\n",
         started, wave, rss0 >> 20, rss1 >> 20, rss_max >> 20, caches0, caches, st.thread_cache_free);
  CHECK(atomic_load(&thread_errors) == 0, "%d errors in threads (allocation failure or corrupted hand-off)",
        atomic_load(&thread_errors));
  CHECK(caches <= 1, "%zu thread caches alive after all threads exited", caches);
  CHECK(st.thread_caches <= 1, "hc_get_stats reports %zu thread caches", st.thread_caches);
  CHECK(rss1 < rss0 + (64u << 20), "RSS grew from %zu MB to %zu MB", rss0 >> 20, rss1 >> 20);
  CHECK(rss_max < rss0 + (64u << 20), "RSS peaked at %zu MB (start %zu MB)", rss_max >> 20, rss0 >> 20);
  CHECK(st.in_use < (4u << 20), "%zu bytes in use after every thread freed its memory", st.in_use);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("threads churn OK\n");
  return 0;
}
