/* test_stats.c - hc_get_stats, hc_print_stats and mallinfo2 tell the truth.
 *
 * Single-threaded phases, so the numbers can be checked exactly:
 *  - allocating objects of many sizes raises in_use by exactly the sum of
 *    their usable sizes (>= the bytes requested), split correctly between
 *    small_in_use and large_in_use; freeing them brings it back;
 *  - in_use + central + thread cache + page heap free + released + the
 *    tails of small spans (bytes no object covers) == heap_mapped;
 *  - thread_caches counts live threads; sampled_objects follows sampling;
 *    freed sample spans wait in the stash as free bytes until malloc_trim;
 *  - hc_print_stats and malloc_stats print the same numbers;
 *  - mallinfo2 mirrors hc_get_stats. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_internal.h"
#include "heapcheck.h"

#include "hc_check.h"

/* Bytes of small spans that hold no object (pages * 8192 - objs * size). */
static size_t span_tails(void) {
  size_t t = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    t += hci_central[c].nspans *
         ((size_t)hci_classes[c].pages * HC_PAGE_SIZE - (size_t)hci_classes[c].objs * hci_classes[c].size);
  return t;
}

static void check_identity(const char *when) {
  hc_stats_t s;
  hc_get_stats(&s);
  size_t tails = span_tails();
  size_t sum = s.in_use + s.central_free + s.thread_cache_free + s.page_heap_free + s.heap_released;
  CHECK(sum <= s.heap_mapped, "%s: in_use %zu + central %zu + thread caches %zu + page heap %zu + released %zu = %zu > "
        "mapped %zu", when, s.in_use, s.central_free, s.thread_cache_free, s.page_heap_free, s.heap_released, sum,
        s.heap_mapped);
  CHECK(sum + tails == s.heap_mapped, "%s: accounted %zu + span tails %zu != mapped %zu (off by %ld)", when, sum,
        tails, s.heap_mapped, (long)(s.heap_mapped - sum - tails));
  CHECK(s.in_use == s.small_in_use + s.large_in_use, "%s: in_use %zu != small %zu + large %zu", when, s.in_use,
        s.small_in_use, s.large_in_use);
  CHECK(s.heap_released <= s.heap_mapped, "%s: released %zu > mapped %zu", when, s.heap_released, s.heap_mapped);
  CHECK(s.metadata > 0, "%s: no metadata bytes", when);
}

static void *thread_holding_cache(void *arg) {
  pthread_barrier_t *b = arg;
  free(malloc(100)); /* creates this thread's cache */
  pthread_barrier_wait(b);
  pthread_barrier_wait(b);
  return NULL;
}

/* The number after "MALLOC: " on the line with label. */
static size_t number_in(const char *text, const char *label) {
  const char *l = strstr(text, label);
  if (!l) return (size_t)-1;
  while (l > text && l[-1] != '\n') l--;
  size_t v;
  return sscanf(l, "MALLOC: %zu", &v) == 1 ? v : (size_t)-1;
}

static void check_print_stats(void) {
  char path[] = "/tmp/hc_stats_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0) return;
  unlink(path);
  static char buf[1 << 16];
  hc_stats_t s;
  hc_get_stats(&s); /* nothing allocates between this and the report */
  hc_print_stats(fd);
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  CHECK(number_in(buf, "Bytes in use by application") == s.in_use, "printed in use %zu, hc_get_stats %zu",
        number_in(buf, "Bytes in use by application"), s.in_use);
  CHECK(number_in(buf, "Bytes in page heap freelist") == s.page_heap_free, "printed page heap free");
  CHECK(number_in(buf, "Bytes in central cache freelist") == s.central_free, "printed central free");
  CHECK(number_in(buf, "Bytes in thread cache freelists") == s.thread_cache_free, "printed thread cache free");
  CHECK(number_in(buf, "Bytes released to OS") == s.heap_released, "printed released");
  CHECK(strstr(buf, "class") != NULL, "no class table:\n%s", buf);
  /* malloc_stats prints the same report on stderr */
  char path2[] = "/tmp/hc_stats_XXXXXX";
  int fd2 = mkstemp(path2);
  CHECK(fd2 >= 0, "mkstemp");
  if (fd2 < 0) return;
  unlink(path2);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd2, 2);
  malloc_stats();
  dup2(saved, 2);
  close(saved);
  static char buf2[1 << 16];
  n = pread(fd2, buf2, sizeof buf2 - 1, 0);
  buf2[n > 0 ? n : 0] = 0;
  CHECK(number_in(buf2, "Bytes in use by application") == s.in_use, "malloc_stats in use %zu, want %zu",
        number_in(buf2, "Bytes in use by application"), s.in_use);
  close(fd);
  close(fd2);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  /* Sampling moves objects between small and large spans at random: off
   * for the exact phases (the current draw is used up first). */
  atomic_store(&hci_sample_interval, 0);
  for (int i = 0; i < 4000; i++) free(malloc(1000));
  check_identity("start");

  /* Objects of every class plus large ones. */
  enum { N = 3000 };
  static void *v[N];
  hc_stats_t s0, s1, s2;
  hc_get_stats(&s0);
  size_t requested = 0, usable = 0, usable_large = 0;
  for (int i = 0; i < N; i++) {
    size_t n = i % 50 == 49 ? HC_MAX_SMALL + (size_t)i * 1000 : hci_classes[1 + i % (HC_NUM_CLASSES - 1)].size - i % 16;
    v[i] = malloc(n);
    CHECK(v[i] != NULL, "malloc(%zu)", n);
    requested += n;
    usable += malloc_usable_size(v[i]);
    if (hci_pagemap_class((uintptr_t)v[i]) == 0) usable_large += malloc_usable_size(v[i]);
  }
  hc_get_stats(&s1);
  CHECK(s1.in_use >= s0.in_use + requested, "in_use grew by %zu for %zu bytes requested", s1.in_use - s0.in_use,
        requested);
  CHECK(s1.in_use == s0.in_use + usable, "in_use grew by %zu, objects' usable sizes total %zu",
        s1.in_use - s0.in_use, usable);
  CHECK(s1.large_in_use == s0.large_in_use + usable_large, "large_in_use grew by %zu, want %zu",
        s1.large_in_use - s0.large_in_use, usable_large);
  CHECK(s1.small_in_use == s0.small_in_use + usable - usable_large, "small_in_use grew by %zu, want %zu",
        s1.small_in_use - s0.small_in_use, usable - usable_large);
  CHECK(s1.heap_mapped >= s1.in_use, "mapped %zu < in use %zu", s1.heap_mapped, s1.in_use);
  check_identity("objects allocated");
  struct mallinfo2 mi = mallinfo2();
  hc_get_stats(&s1);
  CHECK(mi.uordblks == s1.in_use, "mallinfo2.uordblks %zu, in_use %zu", mi.uordblks, s1.in_use);
  CHECK(mi.arena == s1.heap_mapped, "mallinfo2.arena %zu, mapped %zu", mi.arena, s1.heap_mapped);
  CHECK(mi.hblkhd == s1.large_in_use, "mallinfo2.hblkhd %zu, large_in_use %zu", mi.hblkhd, s1.large_in_use);
  check_print_stats();

  for (int i = 0; i < N; i++) free(v[i]);
  hc_get_stats(&s2);
  CHECK(s2.in_use == s0.in_use, "in_use %zu after freeing everything, %zu before", s2.in_use, s0.in_use);
  CHECK(s2.large_in_use == s0.large_in_use, "large_in_use %zu after free, %zu before", s2.large_in_use,
        s0.large_in_use);
  check_identity("objects freed");
  malloc_trim(0);
  check_identity("after malloc_trim");
  hc_get_stats(&s2);
  CHECK(s2.page_heap_free == 0 && s2.central_free == 0 && s2.thread_cache_free == 0,
        "after malloc_trim: page heap %zu central %zu thread cache %zu", s2.page_heap_free, s2.central_free,
        s2.thread_cache_free);
  CHECK(s2.heap_released > 0, "nothing released after malloc_trim");

  /* Thread caches: one per live thread that allocated. */
  hc_get_stats(&s1);
  CHECK(s1.thread_caches == 1, "%zu thread caches in a single-threaded process", s1.thread_caches);
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, 4);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, thread_holding_cache, &b);
  pthread_barrier_wait(&b);
  hc_get_stats(&s1);
  CHECK(s1.thread_caches == 4, "%zu thread caches with 4 threads alive", s1.thread_caches);
  pthread_barrier_wait(&b);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  hc_get_stats(&s1);
  CHECK(s1.thread_caches == 1, "%zu thread caches after the threads exited", s1.thread_caches);

  /* Sampling: interval 1 samples every allocation once this thread redraws. */
  hc_get_stats(&s0);
  CHECK(s0.sampled_objects == 0, "%zu sampled objects with sampling off", s0.sampled_objects);
  atomic_store(&hci_sample_interval, 1);
  /* The current draw (made with sampling off) never ends by itself: end it.
   * The allocation that redraws is not sampled (its draw had interval 0),
   * every later one is. */
  hci_tc->smp.left = -1;
  void *sv[20];
  for (int i = 0; i < 20; i++) sv[i] = malloc(100 + (size_t)i);
  hc_get_stats(&s1);
  size_t sampled = 0;
  for (int i = 0; i < 20; i++) sampled += hci_pagemap_class((uintptr_t)sv[i]) == 0;
  CHECK(sampled >= 19, "only %zu of 20 allocations sampled at interval 1", sampled);
  CHECK(s1.sampled_objects >= s0.sampled_objects + sampled, "sampled_objects %zu -> %zu, %zu sampled",
        s0.sampled_objects, s1.sampled_objects, sampled);
  CHECK(s1.sampled_bytes >= sampled * 100, "sampled_bytes %zu", s1.sampled_bytes);
  CHECK(s1.stacks >= 1, "no stack recorded for %zu sampled objects", sampled);
  check_identity("sampled objects live");
  atomic_store(&hci_sample_interval, 0);
  for (int i = 0; i < 20; i++) free(sv[i]);
  hc_get_stats(&s2);
  CHECK(s2.sampled_objects == s0.sampled_objects, "sampled_objects %zu after freeing them, %zu before",
        s2.sampled_objects, s0.sampled_objects);
  /* Their one-page spans wait in the stash for the next samples: free
   * memory (page heap freelist), not in use, and malloc_trim returns them. */
  CHECK(hci_sample_stash_bytes() == (sampled < HC_SAMPLE_STASH_PAGES ? sampled : HC_SAMPLE_STASH_PAGES) * HC_PAGE_SIZE,
        "stash holds %zu bytes after freeing %zu sampled objects", hci_sample_stash_bytes(), sampled);
  CHECK(s2.in_use == s0.in_use, "in_use %zu after freeing the samples, %zu before", s2.in_use, s0.in_use);
  CHECK(s2.page_heap_free >= hci_sample_stash_bytes(), "page heap free %zu < stash %zu", s2.page_heap_free,
        hci_sample_stash_bytes());
  check_identity("sample spans stashed");
  malloc_trim(0);
  CHECK(hci_sample_stash_bytes() == 0, "stash holds %zu bytes after malloc_trim", hci_sample_stash_bytes());

  /* Sampled objects of a few pages: a 20 000-byte one spans its class's
   * 20 480 bytes, 3 pages.  Freed, their spans wait in the stash too (one
   * page only before session 21), and the next sample of 3 pages takes
   * one back instead of carving the page heap. */
  atomic_store(&hci_sample_interval, 1);
  hci_tc->smp.left = -1;
  void *mid[5];
  size_t nmid = 0;
  for (int i = 0; i < 5; i++) {
    void *p = malloc(20000);
    hc_span_t *sp = hci_pagemap_span((uintptr_t)p);
    if (hci_pagemap_class((uintptr_t)p) == 0 && sp->is_sampled && sp->npages == 3) mid[nmid++] = p;
    else free(p);
  }
  CHECK(nmid >= 4, "only %zu of 5 allocations of 20000 bytes sampled in 3-page spans", nmid);
  atomic_store(&hci_sample_interval, 0);
  for (size_t i = 0; i < nmid; i++) free(mid[i]);
  CHECK(hci_sample_stash_bytes() == nmid * 3 * HC_PAGE_SIZE, "stash holds %zu bytes after freeing %zu 3-page samples",
        hci_sample_stash_bytes(), nmid);
  check_identity("3-page sample spans stashed");
  atomic_store(&hci_sample_interval, 1);
  hci_tc->smp.left = -1;
  void *again = NULL;
  for (int i = 0; i < 2 && !again; i++) {
    void *p = malloc(20000);
    if (hci_pagemap_class((uintptr_t)p) == 0) again = p;
    else free(p);
  }
  atomic_store(&hci_sample_interval, 0);
  bool reused = false;
  for (size_t i = 0; i < nmid; i++) reused |= again == mid[i];
  CHECK(again && reused, "the next 3-page sample (%p) did not take a stashed span", again);
  CHECK(hci_sample_stash_bytes() == (nmid - 1) * 3 * HC_PAGE_SIZE, "stash holds %zu bytes after one was taken back",
        hci_sample_stash_bytes());
  free(again);
  malloc_trim(0);
  CHECK(hci_sample_stash_bytes() == 0, "stash holds %zu bytes after malloc_trim", hci_sample_stash_bytes());
  hc_get_stats(&s2);
  CHECK(s2.page_heap_free == 0, "page heap free %zu after malloc_trim", s2.page_heap_free);
  check_identity("end");
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("stats OK\n");
  return 0;
}
