/* heap_profile.c - heap profiles from heapcheck's sampled stacks.
 *
 * Three call sites build a heap of about 12 MB; a fourth churns through
 * short-lived buffers.  The program writes a profile, prints the top call
 * sites, frees one site's objects and exits (which writes a last profile).
 *
 *   cc -fno-omit-frame-pointer heap_profile.c -o heap_profile -lheapcheck
 *   HEAPPROFILE=/tmp/hp ./heap_profile
 *       Starting tracking the heap
 *       Dumping heap profile to /tmp/hp.<pid>.0001.heap (all sites live)
 *       Dumping heap profile to /tmp/hp.<pid>.0002.heap (Exiting, 8 MB in use)
 *   google-pprof --text ./heap_profile /tmp/hp.<pid>.0001.heap
 *   google-pprof --svg ./heap_profile /tmp/hp.<pid>.0001.heap > hp.svg
 *
 * Without HEAPPROFILE it starts the profiler itself with the prefix given as
 * its argument (default "heap_profile" in the current directory).
 * The allocations are sampled (one per 512 KiB on average; set
 * HEAPCHECK_SAMPLE_PARAMETER lower for more detail); pprof scales the
 * samples back up, so the totals it shows are estimates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapcheck.h>

#define NSTRINGS 20000
#define STRING_SIZE 100
#define NBUFFERS 100
#define BUFFER_SIZE 40000
#define NTABLES 6
#define TABLE_SIZE (1 << 20)

/* Global (not static) so the compiler cannot prove nobody reads them and
 * drop the allocations. */
char *strings[NSTRINGS];
char *buffers[NBUFFERS];
double *tables[NTABLES];

/* Many small objects. */
__attribute__((noinline)) static void make_strings(void) {
  for (int i = 0; i < NSTRINGS; i++) {
    strings[i] = malloc(STRING_SIZE);
    snprintf(strings[i], STRING_SIZE, "string number %d", i);
  }
}

/* Medium-sized buffers. */
__attribute__((noinline)) static void make_buffers(void) {
  for (int i = 0; i < NBUFFERS; i++) buffers[i] = calloc(1, BUFFER_SIZE);
}

/* A few big tables. */
__attribute__((noinline)) static void make_tables(void) {
  for (int i = 0; i < NTABLES; i++) {
    tables[i] = malloc(TABLE_SIZE);
    memset(tables[i], 0, TABLE_SIZE);
  }
}

/* Short-lived memory: allocated and freed, so it shows in the allocated
 * columns (google-pprof --alloc_space) but not in the live heap. */
char *volatile last_churned; /* keeps the compiler from eliding malloc+free */

__attribute__((noinline)) static void churn(void) {
  for (int i = 0; i < 2000; i++) {
    char *p = malloc(8192 + (size_t)i);
    last_churned = p;
    free(p);
  }
}

int main(int argc, char **argv) {
  if (!hc_heap_profile_running() && hc_heap_profile_start(argc > 1 ? argv[1] : "heap_profile") != 0) {
    fprintf(stderr, "cannot start the heap profiler\n");
    return 1;
  }
  make_strings();
  churn();
  make_buffers();
  make_tables();
  size_t live = (size_t)NSTRINGS * STRING_SIZE + (size_t)NBUFFERS * BUFFER_SIZE + (size_t)NTABLES * TABLE_SIZE;
  printf("heap_profile: %zu bytes live in %d objects from 3 call sites\n", live, NSTRINGS + NBUFFERS + NTABLES);
  fflush(stdout);

  hc_heap_profile_dump("all sites live");
  hc_report_top(2, 3);

  for (int i = 0; i < NBUFFERS; i++) free(buffers[i]);
  return 0; /* the profiler writes a last profile at exit */
}
