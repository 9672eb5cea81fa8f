/* checker_heap.c - a big reachable heap, for timing the final leak check.
 *
 * Purpose: build `n` (default 10 million) reachable objects of `size` bytes
 * (default 100, about 1 GiB in all) and return from main, so a leak checker
 * that runs at exit has to flood the whole heap.  Shapes:
 *   array - a malloc'd table of n pointers, held by a global (wide, flat);
 *   list  - a singly linked list through the objects' first word, its head
 *           in a global (deep: one long chain, worst case for a recursive
 *           flood, easy for an explicit frontier stack).
 * Nothing leaks, so a correct checker exits 0.  The scripts time the whole
 * process twice (final check on / off) and take the difference.
 *
 * Invariants: deterministic; every object is written (so its pages are
 * resident and a checker really scans them) and stays reachable until exit.
 * Locks: none.
 *
 * Usage: checker_heap [-n objects] [-s size] [-m array|list]
 * Prints one line: time to build the heap.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The roots: globals, so the objects are reachable from the data segment. */
void **g_table;
void *g_list;

int main(int argc, char **argv) {
  long n = 10000000;
  size_t size = 100;
  int list = 0;
  int opt;
  while ((opt = getopt(argc, argv, "n:s:m:h")) != -1) {
    switch (opt) {
    case 'n': n = atol(optarg); break;
    case 's': size = (size_t)atol(optarg); break;
    case 'm':
      if (strcmp(optarg, "list") == 0) list = 1;
      else if (strcmp(optarg, "array") == 0) list = 0;
      else goto bad;
      break;
    default:
      goto bad;
    }
  }
  if (n < 1 || size < sizeof(void *)) goto bad;

  double t0 = now_s();
  if (!list) {
    g_table = malloc((size_t)n * sizeof *g_table);
    if (!g_table) { perror("malloc"); return 1; }
  }
  for (long i = 0; i < n; i++) {
    unsigned char *p = malloc(size);
    if (!p) { fprintf(stderr, "malloc(%zu) failed at %ld\n", size, i); return 1; }
    memset(p, 0, size);
    p[size - 1] = (unsigned char)i;
    if (list) {
      memcpy(p, &g_list, sizeof g_list);
      g_list = p;
    } else {
      g_table[i] = p;
    }
  }
  double el = now_s() - t0;
  printf("checker_heap: built %ld objects of %zu bytes (%s) in %.3f s\n",
         n, size, list ? "list" : "array", el);
  fflush(stdout);
  return 0;

bad:
  fprintf(stderr, "usage: %s [-n objects (10000000)] [-s size (100)] [-m array|list]\n", argv[0]);
  return 2;
}
