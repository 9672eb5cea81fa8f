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
#include "bench_common.h"

/* The roots: globals, so the objects are reachable from the data segment. */
void **g_table;
void *g_list;

int main(int argc, char **argv) {
  long n = 10000000;
  long size = 100;
  long list = 0;            /* 0: array shape; 1: list shape */
  static const char *const shapes[] = {"array", "list", NULL};
  const struct bench_opt opts[] = {
    {'n', &n, 1, "objects (10000000)", NULL},
    {'s', &size, (long)sizeof(void *), "size (100)", NULL},
    {'m', &list, 0, "array|list", shapes},
  };
  bench_parse_opts(argc, argv, opts, BENCH_NOPTS(opts));

  double t0 = bench_now_s();
  if (!list) g_table = bench_malloc((size_t)n * sizeof *g_table);
  for (long i = 0; i < n; i++) {
    unsigned char *p = bench_malloc((size_t)size);
    memset(p, 0, (size_t)size);
    p[size - 1] = (unsigned char)i;
    if (list) {
      memcpy(p, &g_list, sizeof g_list);
      g_list = p;
    } else {
      g_table[i] = p;
    }
  }
  double el = bench_now_s() - t0;
  printf("checker_heap: built %ld objects of %ld bytes (%s) in %.3f s\n", n, size, shapes[list], el);
  fflush(stdout);
  return 0;
}
