/* profiler_details.c - the profiler details gperftools' heap-profiler test
 * relies on, driven by test_gperftools_profiler.sh:
 *   dealloc     allocates and frees 100 KB blocks (every allocation
 *               sampled), so HEAP_PROFILE_DEALLOCATION_INTERVAL dumps;
 *   verbosity   hc_set_verbosity changes the message level at run time:
 *               the same error message is silenced, then printed. */
#include <heapcheck.h>
#include <gperftools/heap-profiler.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "dealloc")) {
    hc_set_sample_interval(1);
    for (int i = 0; i < 64; i++) {
      sink = malloc(100 << 10);
      free(sink);
      sink = malloc(16); /* the next sample checks the dump thresholds */
      free(sink);
    }
    return 0;
  }
  if (!strcmp(c, "verbosity")) {
    int x = 0;
    int old = hc_set_verbosity(-4);
    hc_ignore_object(&x); /* "No live heap object at ... to ignore", an error */
    int quiet = hc_set_verbosity(old);
    hc_ignore_object(&x);
    printf("old=%d quiet=%d\n", old, quiet);
    return 0;
  }
  return 2;
}
