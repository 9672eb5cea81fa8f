/* probe_events.c - makes every event that fires one of glibc's malloc
 * probes in heapcheck (allocator/usdt.h), for test_usdt_trace.sh.
 *
 * usage: probe_events GOFILE
 * Waits (up to 60 s) until GOFILE exists, so a tracer can attach first, then
 * prints one line per event it causes and, last, frees a block twice (the
 * process dies of SIGABRT there).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;

static void *thread_main(void *arg) {
  sink = malloc(64); /* the thread's first allocation creates its cache */
  free(sink);
  return arg;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  for (int i = 0; i < 600 && access(argv[1], F_OK) != 0; i++) usleep(100000);
  setvbuf(stdout, NULL, _IONBF, 0);
  mallopt(M_ARENA_MAX, 3);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  printf("mallopt done\n");
  pthread_t t;
  pthread_create(&t, NULL, thread_main, NULL);
  pthread_join(t, NULL);
  printf("thread done\n");
  /* 256 MiB: a new mapping for the page heap, then given back by malloc_trim */
  char *big = malloc((size_t)256 << 20);
  memset(big, 1, 1 << 20);
  free(big);
  malloc_trim(0);
  printf("heap done\n");
  static volatile size_t huge_v = (size_t)1 << 62; /* volatile: no compile-time size warnings */
  size_t huge = huge_v;
  sink = malloc(huge);
  sink = calloc(huge, 16);
  sink = memalign(4096, huge);
  void *p = malloc(16);
  sink = realloc(p, huge);
  printf("enomem done %d\n", errno == ENOMEM);
  free(p);
  void *q = malloc(48);
  free(q);
  free(q); /* double free: heapcheck aborts */
  return 0;
}
