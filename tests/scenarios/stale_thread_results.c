// EXPECT: bytes=2068000 objects=4008
// COMPARE-RECORDS
/* stale_thread_results.c - 8 threads each build an array of 1000 pointers
 * to blocks of 1..1000 bytes, free the even half and return the array; main
 * joins them, keeps the results in a local array, prints and returns.  After
 * main returned its frame is dead, so every array (8000 bytes, direct) and
 * its 500 blocks (2..1000 bytes, indirect) leak: 8 x (8000 + 250500) bytes
 * in 8 x 501 objects, as valgrind says.  Linked statically, the final
 * check once found 3,015-3,038 of the 4,008 objects through main's dead
 * frame (libc.a's exit cannot be interposed to learn where the program
 * ended; docs/leak-checking.md, "Static links"). */
#include <stdio.h>

#include "sc_thread.h"

#define NTHREADS 8
#define NPTRS 1000

static void *worker(void *arg) {
  (void)arg;
  void **v = malloc(NPTRS * sizeof *v);
  for (int i = 0; i < NPTRS; i++) v[i] = malloc((size_t)i + 1);
  for (int i = 0; i < NPTRS; i += 2) {
    free(v[i]);
    v[i] = NULL;
  }
  return v;
}

int main(void) {
  pthread_t t[NTHREADS];
  void *r[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) t[i] = sc_spawn(worker, NULL);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], &r[i]);
  int kept = 0;
  for (int i = 0; i < NTHREADS; i++) kept += r[i] != NULL;
  printf("stale_thread_results: %d results\n", kept);
  return 0;
}
