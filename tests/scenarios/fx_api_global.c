/* fx_api_global.c - the whole-program check on demand (hc_no_global_leaks)
 * with a 123-byte leak; prints "api_global: no_global_leaks=R bytes=B
 * objects=O".  Args: "cancel" then cancels the at-exit check (exit 0);
 * "free" frees the leak after the first check (second check clean). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"
#include "heapcheck.h"

void *volatile g_hidden; /* XOR-masked: not a pointer to the checker */

NOINLINE void leak_123(void) { g_hidden = (void *)((unsigned long)malloc(123) ^ HIDE_MASK); }

int main(int argc, char **argv) {
  printf("api_global: before any check bytes=%zd objects=%zd\n", hc_global_bytes_leaked(),
         hc_global_objects_leaked());
  leak_123();
  wipe_stack();
  int r = hc_no_global_leaks();
  printf("api_global: no_global_leaks=%d bytes=%zd objects=%zd\n", r, hc_global_bytes_leaked(),
         hc_global_objects_leaked());
  if (argc > 1 && strcmp(argv[1], "cancel") == 0) hc_cancel_global_check();
  if (argc > 1 && strcmp(argv[1], "free") == 0) {
    free((void *)((unsigned long)g_hidden ^ HIDE_MASK));
    r = hc_no_global_leaks();
    printf("api_global: after free no_global_leaks=%d bytes=%zd objects=%zd\n", r, hc_global_bytes_leaked(),
           hc_global_objects_leaked());
  }
  fflush(stdout);
  return 0;
}
