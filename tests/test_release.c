/* test_release.c - freed memory goes back to the OS.
 *
 * Allocates 500 MB in 1 MiB and 64 KiB blocks, touches every page, frees
 * everything, and reads the RSS from /proc/self/statm:
 *  (a) without malloc_trim the page heap releases by itself once committed
 *      free memory passes its threshold: RSS must fall below 150 MB;
 *  (b) after malloc_trim(0) (thread cache flushed, central drained, every
 *      free page released) RSS must fall below 40 MB.
 * Then the same memory is allocated again (it must be reusable, and zero
 * when calloc'ed) and the cycle repeats, so release/reuse is exercised
 * twice.
 * With the argument "mixed" the 500 MB are blocks of eight medium sizes
 * (20 KB .. 260 KB, eight size classes) instead: free objects of many
 * classes must not stay cached (thread cache, central transfer cache)
 * without bound either.
 * Faulting 500 MB in costs seconds: the test is in the 'slow' suite. */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapcheck.h"

#define MB ((size_t)1 << 20)
#define N_BIG 250              /* 250 x 1 MiB */
#define N_MED 4000             /* 4000 x 64 KiB = 250 MiB */

static int failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      failures++;                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

static size_t rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (!f || fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
  if (f) fclose(f);
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

static char *big[N_BIG];
static char *med[N_MED];
static bool mixed;
static const size_t mixed_sizes[8] = {20000, 40000, 70000, 100000, 140000, 180000, 230000, 260000};
#define N_MIXED 3800 /* 3800 blocks of 130 KB on average: 495 MB */
static char *mix[N_MIXED];

static void allocate_mixed(bool zeroed) {
  for (int i = 0; i < N_MIXED; i++) {
    size_t n = mixed_sizes[i % 8];
    mix[i] = zeroed ? calloc(1, n) : malloc(n);
    CHECK(mix[i] != NULL, "allocation of %zu bytes", n);
    if (!mix[i]) continue;
    if (zeroed && (mix[i][0] || mix[i][n / 2] || mix[i][n - 1])) CHECK(0, "calloc'ed %zu-byte block not zero", n);
    memset(mix[i], 0x3c, n);
  }
}

static void allocate_all(bool zeroed) {
  /* interleaved, so the two sizes share the heap */
  for (int i = 0, j = 0; i < N_BIG || j < N_MED;) {
    if (i < N_BIG) {
      big[i] = zeroed ? calloc(1, MB) : malloc(MB);
      CHECK(big[i] != NULL, "allocation of 1 MiB block %d", i);
      if (zeroed && big[i])
        for (size_t k = 0; k < MB; k += 4096)
          if (big[i][k] || big[i][k + 4095]) {
            CHECK(0, "calloc'ed 1 MiB block %d not zero at %zu", i, k);
            break;
          }
      if (big[i]) memset(big[i], 0x5a, MB);
      i++;
    }
    for (int k = 0; k < 16 && j < N_MED; k++, j++) {
      med[j] = zeroed ? calloc(64, 1024) : malloc(64 << 10);
      CHECK(med[j] != NULL, "allocation of 64 KiB block %d", j);
      if (zeroed && med[j] && (med[j][0] || med[j][(64 << 10) - 1])) CHECK(0, "calloc'ed 64 KiB block %d not zero", j);
      if (med[j]) memset(med[j], 0xa5, 64 << 10);
    }
  }
}

static void free_all(void) {
  if (mixed) {
    for (int i = 0; i < N_MIXED; i++) free(mix[i]);
    return;
  }
  for (int i = 0; i < N_BIG; i++) free(big[i]);
  for (int j = 0; j < N_MED; j++) free(med[j]);
}

static void report(const char *when) {
  hc_stats_t st;
  hc_get_stats(&st);
  printf("%-28s RSS %4zu MB | in use %4zu MB, page heap free %4zu MB, released %4zu MB, central %3zu MB, "
         "thread cache %3zu MB, mapped %4zu MB\n",
         when, rss() / MB, st.in_use / MB, st.page_heap_free / MB, st.heap_released / MB, st.central_free / MB,
         st.thread_cache_free / MB, st.heap_mapped / MB);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  mixed = argc > 1 && strcmp(argv[1], "mixed") == 0;
  report("start");
  for (int round = 0; round < 2; round++) {
    if (mixed) allocate_mixed(round == 1);
    else allocate_all(round == 1);
    size_t full = rss();
    report("allocated");
    CHECK(full >= 470 * MB, "RSS only %zu MB with 500 MB allocated and touched", full / MB);
    free_all();
    size_t after_free = rss();
    report("freed");
    CHECK(after_free < 150 * MB, "round %d: RSS %zu MB after freeing 500 MB without malloc_trim", round,
          after_free / MB);
    malloc_trim(0);
    size_t after_trim = rss();
    report("malloc_trim(0)");
    CHECK(after_trim < 40 * MB, "round %d: RSS %zu MB after malloc_trim(0)", round, after_trim / MB);
    hc_stats_t st;
    hc_get_stats(&st);
    CHECK(st.page_heap_free == 0, "%zu bytes of committed free pages after malloc_trim(0)", st.page_heap_free);
    CHECK(st.heap_mapped < 700 * MB, "round %d: %zu MB mapped for a 500 MB peak (memory not reused?)", round,
          st.heap_mapped / MB);
  }
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("release OK\n");
  return 0;
}
