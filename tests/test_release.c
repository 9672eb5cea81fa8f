/* test_release.c - freed memory goes back to the OS.
 *
 * Allocates 500 MB in 1 MiB and 64 KiB blocks, touches every page, frees
 * everything, and reads the RSS from /proc/self/statm:
 *  (a) without malloc_trim, what stays resident is bounded by the policies:
 *      transfer slots <= HC_SLOT_BYTES_TOTAL_MAX (16 MiB), thread caches <=
 *      their budget (<= HC_TC_BUDGET_MAX, 4 MiB, each), committed free
 *      pages in the page heap <= its release threshold once the 500 MB
 *      are no longer in demand (page_heap.c, "release by demand": the test
 *      runs with 1 ms epochs, waits 100 ms after the frees and makes one
 *      more call, as an idle program would), plus the spans the cached objects keep alive (each
 *      cached object can keep its whole span: span size / object size times
 *      the cached bytes, and one all-free span per class that central
 *      keeps).  Each part is checked from the allocator's own counters,
 *      and the RSS against the sum of the bounds (plus the metadata mapped
 *      meanwhile) and against the measured parts;
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

#include "hc_internal.h"
#include "heapcheck.h"

#define MB ((size_t)1 << 20)
#define N_BIG 250              /* 250 x 1 MiB */
#define N_MED 4000             /* 4000 x 64 KiB = 250 MiB */

#include "hc_check.h"

static size_t rss(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (!f || fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
  if (f) fclose(f);
  return res * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t cache_bytes_self(void) {
  size_t b = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) b += (size_t)hc_tc_len(&hci_tc->fl.lists[c]) * hci_classes[c].size;
  return b;
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

/* Size classes the test's small blocks use. */
static unsigned used_classes(unsigned *cls) {
  unsigned n = 0;
  if (mixed)
    for (int i = 0; i < 8; i++) cls[n++] = hci_size_class(mixed_sizes[i]);
  else
    cls[n++] = hci_size_class(64 << 10);
  return n;
}

/* Checks what stays after freeing everything against the policies; returns
 * the RSS bound they give. */
static size_t check_after_free(size_t rss_start, size_t meta_start, size_t rss_now) {
  hc_stats_t st;
  hc_get_stats(&st);
  unsigned cls[8];
  unsigned ncls = used_classes(cls);
  /* how much of its span a cached object can keep resident, at most */
  size_t ratio_x100 = 100, all_free_spans = 0;
  for (unsigned i = 0; i < ncls; i++) {
    const hc_class_info_t *ci = &hci_classes[cls[i]];
    size_t r = (size_t)ci->pages * HC_PAGE_SIZE * 100 / ci->size;
    if (r > ratio_x100) ratio_x100 = r;
    all_free_spans += (size_t)ci->pages * HC_PAGE_SIZE;
  }
  size_t ncaches = st.thread_caches ? st.thread_caches : 1;
  size_t cached_max = HC_SLOT_BYTES_TOTAL_MAX + ncaches * HC_TC_BUDGET_MAX;
  size_t spans_max = cached_max * ratio_x100 / 100 + all_free_spans;
  size_t committed_max = hci_ph_release_threshold(); /* no demand left: HC_RELEASE_SLACK */
  CHECK(committed_max <= 2 * HC_RELEASE_SLACK, "release threshold %zu MB after the idle time", committed_max / MB);
  /* the parts, from the allocator's counters */
  size_t slots = hci_central_slot_bytes(), spans = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) spans += hci_central[c].nspans * hci_classes[c].pages * HC_PAGE_SIZE;
  CHECK(slots <= HC_SLOT_BYTES_TOTAL_MAX, "transfer slots hold %zu bytes", slots);
  CHECK(st.thread_cache_free <= ncaches * HC_TC_BUDGET_MAX, "%zu caches hold %zu bytes", ncaches,
        st.thread_cache_free);
  CHECK(hci_tc->fl.cap_bytes <= hci_tc->fl.budget && cache_bytes_self() <= hci_tc->fl.budget,
        "this thread's cache holds %zu bytes, capacity %zu, budget %zu", cache_bytes_self(), hci_tc->fl.cap_bytes,
        hci_tc->fl.budget);
  CHECK(st.page_heap_free <= committed_max, "%zu MB of committed free pages", st.page_heap_free / MB);
  CHECK(spans <= spans_max, "%zu MB of small spans alive, bound %zu MB (%zu MB cached at most, x%zu.%02zu)",
        spans / MB, spans_max / MB, cached_max / MB, ratio_x100 / 100, ratio_x100 % 100);
  CHECK(st.large_in_use == 0, "%zu bytes of large objects in use", st.large_in_use);
  size_t meta = st.metadata > meta_start ? st.metadata - meta_start : 0;
  size_t slack = 8 * MB; /* stdio, stacks, the pagemap root: not the heap */
  size_t measured = rss_start + meta + spans + st.page_heap_free + slack;
  size_t bound = rss_start + meta + spans_max + committed_max + slack;
  printf("%-28s small spans %zu MB (bound %zu), committed free %zu MB (bound %zu), slots %zu MB, metadata +%zu MB: "
         "RSS bound %zu MB (measured parts %zu MB)\n",
         "", spans / MB, spans_max / MB, st.page_heap_free / MB, committed_max / MB, slots / MB, meta / MB,
         bound / MB, measured / MB);
  CHECK(rss_now <= measured, "RSS %zu MB, more than the parts the allocator keeps (%zu MB)", rss_now / MB,
        measured / MB);
  return bound;
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
  hci_ph_set_release_delay(1000000); /* 1 ms epochs */
  report("start");
  size_t rss_start = rss();
  hc_stats_t st0;
  hc_get_stats(&st0);
  for (int round = 0; round < 2; round++) {
    if (mixed) allocate_mixed(round == 1);
    else allocate_all(round == 1);
    size_t full = rss();
    report("allocated");
    CHECK(full >= 470 * MB, "RSS only %zu MB with 500 MB allocated and touched", full / MB);
    free_all();
    usleep(100000); /* idle: many epochs pass (this only lets time pass) */
    free(malloc(1 << 20)); /* the next call gives back what is no longer in demand */
    size_t after_free = rss();
    report("freed");
    size_t bound = check_after_free(rss_start, st0.metadata, after_free);
    CHECK(bound < full / 2, "round %d: the policies' bound %zu MB is not well below the %zu MB allocated", round,
          bound / MB, full / MB);
    CHECK(after_free <= bound, "round %d: RSS %zu MB after freeing %zu MB without malloc_trim, bound %zu MB", round,
          after_free / MB, full / MB, bound / MB);
    malloc_trim(0);
    size_t after_trim = rss();
    report("malloc_trim(0)");
    CHECK(after_trim < 40 * MB, "round %d: RSS %zu MB after malloc_trim(0)", round, after_trim / MB);
    hc_stats_t st;
    hc_get_stats(&st);
    /* A sampled object freed since the trim (stdio) waits in the stash of
     * sample spans, which the stats count as page-heap free bytes. */
    CHECK(st.page_heap_free <= hci_sample_stash_bytes(), "%zu bytes of committed free pages after malloc_trim(0)",
          st.page_heap_free);
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
