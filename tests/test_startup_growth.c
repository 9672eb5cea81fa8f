/* test_startup_growth.c - the heap's first growth is made by start-up
 * (hci_alloc_reserve_heap, called by hci_runtime_start), recorded with one
 * frame, start-up's, and no walk; a small first malloc then finds its pages
 * and adds no growth, while a growth the program causes is recorded with
 * its own stack as before.  (Made by the first malloc, the growth's stack
 * needed the DWARF walk through libc's frames: docs/performance.md,
 * "Start-up overhead".)  Linked with the library (its constructor runs
 * before main); the preloaded case runs the same code. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gperftools/malloc_extension_c.h>

#include "hc_check.h"

void hci_runtime_start(void); /* hidden in the library, linked statically here */

#define CAP 4096

int main(void) {
  static void *t[CAP];
  size_t need = hc_heap_growth_traces(t, CAP);
  CHECK(need == 1 + 3 + 1, "one growth of one frame before main allocated (need %zu)", need);
  CHECK(t[0] == (void *)1 && (uintptr_t)t[1] >= ((size_t)2 << 20) && t[2] == (void *)1 && t[4] == NULL,
        "the record: {1, bytes, depth 1, pc}, then the end (%p %p %p %p)", t[0], t[1], t[2], t[4]);
  uintptr_t pc = (uintptr_t)t[3], start = (uintptr_t)&hci_runtime_start;
  CHECK(pc > start && pc < start + 256, "its frame is in hci_runtime_start (%#lx, function at %#lx)",
        (unsigned long)pc, (unsigned long)start);

  char *volatile p = malloc(100);
  CHECK(p != NULL, "malloc(100)");
  free(p);
  CHECK(hc_heap_growth_traces(t, CAP) == need, "the first small malloc found the heap grown");

  /* More than the first growth mapped: a growth of the program's, newest first,
   * with a stack of several frames (this call site's callers included). */
  char *volatile big = malloc((size_t)64 << 20);
  CHECK(big != NULL, "malloc(64 MiB)");
  size_t need2 = hc_heap_growth_traces(t, CAP);
  CHECK(need2 > need, "the big allocation grew the heap (%zu after %zu)", need2, need);
  CHECK((uintptr_t)t[1] >= ((size_t)64 << 20) && (uintptr_t)t[2] >= 2, "its record: %zu bytes, %zu frames",
        (size_t)(uintptr_t)t[1], (size_t)(uintptr_t)t[2]);
  free(big);
  printf("test_startup_growth: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
