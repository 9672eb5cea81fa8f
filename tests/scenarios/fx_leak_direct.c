/* fx_leak_direct.c - 2 x 100 bytes from site_a, 300 bytes from site_b leaked;
 * 1000 bytes reachable from a global (reported only by draconian).
 * Args: "closefd2" closes stderr before returning (the report must still
 * appear); prints "leak_direct: done" on stdout (flushed before _exit). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scenario.h"
#ifdef HC_LINKED
#include "heapcheck.h"
#endif

void *volatile g_keep;
volatile int g_two = 2; /* a loop the compiler cannot unroll into two call sites */

NOINLINE void *site_a(void) { return malloc(100); }
NOINLINE void *site_b(void) { return malloc(300); }

NOINLINE void make_leaks(void) {
  for (int i = 0; i < g_two; i++) memset(site_a(), 1, 100);
  memset(site_b(), 2, 300);
  g_keep = malloc(1000);
}

int main(int argc, char **argv) {
#ifdef HC_LINKED
  printf("leak_direct: linked, active=%d\n", hc_is_active());
#endif
  make_leaks();
  wipe_stack();
  printf("leak_direct: done\n");
  if (argc > 1 && strcmp(argv[1], "closefd2") == 0) close(2);
  return 0;
}
