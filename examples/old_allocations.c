/* old_allocations.c - a "server" with a slow, reachable leak: a cache that
 * nobody clears.  The leak checker cannot see it (the cache is reachable);
 * reports of old live samples can (docs/profiling.md, "Old allocations").
 *
 * For 4 seconds, every 50 ms it handles a request (memory allocated and
 * freed at once: churn, never old) and adds a 64 KiB entry to the cache:
 * from cache_insert_early() for the first 1.5 s, then cache_insert_late().
 * With the argument "signals" it raises SIGUSR1 at 1 s and SIGUSR2 at 2.6 s.
 *
 * Build:  cc -g -fno-omit-frame-pointer old_allocations.c -o old_allocations -lheapcheck
 * Run:
 *   HEAPCHECK_REPORT=old:1s:1s ./old_allocations
 *       every second, the live sampled allocations older than 1 s, per stack:
 *       the cache's entries, never the requests
 *   HEAPCHECK_REPORT=old:1s:1s HEAPCHECK_LIVE_SIGNAL=10 HEAPCHECK_ACK_SIGNAL=12 ./old_allocations signals
 *       SIGUSR1 prints every live sample; SIGUSR2 acknowledges the old ones,
 *       so the reports after it show only cache_insert_late's newer entries
 *   HEAPCHECK_REPORT=peak,json:live.json ./old_allocations
 *       a snapshot each time the heap passes its high-water mark, also as JSON
 * (In a real server: old:5m:10m, and kill -USR1 <pid> when you want to look.)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct entry {
  struct entry *next;
  char data[65536 - 16];
};
static struct entry *cache; /* reachable: never a leak for the leak checker */
static void *volatile sink;

__attribute__((noinline)) static void cache_insert_early(void) {
  struct entry *e = malloc(sizeof *e);
  if (!e) return;
  memset(e->data, 1, 64);
  e->next = cache;
  cache = e;
}

__attribute__((noinline)) static void cache_insert_late(void) {
  struct entry *e = malloc(sizeof *e);
  if (!e) return;
  memset(e->data, 2, 64);
  e->next = cache;
  cache = e;
}

__attribute__((noinline)) static void handle_request(int i) {
  char *buf = malloc(32768 + (size_t)(i % 7) * 1000);
  if (!buf) return;
  memset(buf, i, 100);
  sink = buf;
  free(buf);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int signals = argc > 1 && strcmp(argv[1], "signals") == 0;
  double t0 = now();
  int live_sent = 0, ack_sent = 0, i = 0;
  for (double t = 0; t < 4.0; t = now() - t0, i++) {
    handle_request(i);
    if (t < 1.5) cache_insert_early();
    else cache_insert_late();
    if (signals && !live_sent && t >= 1.0) live_sent = !raise(SIGUSR1);
    if (signals && !ack_sent && t >= 2.6) ack_sent = !raise(SIGUSR2);
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  size_t n = 0;
  for (struct entry *e = cache; e; e = e->next) n++;
  printf("old_allocations: %zu cache entries after %d requests\n", n, i);
  return 0;
}
