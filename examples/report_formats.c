/* report_formats.c - leak reports for CI and people: JSON, SARIF, a flame
 * graph, folded stacks and generated suppressions (docs/report-formats.md).
 *
 * The program has two "legacy" leaks (a cache entry and a buffer) found at
 * exit, and one leak inside a scoped check named "request".  With the
 * argument "new" it also leaks from a new function, new_feature(): the one
 * leak a suppression list generated from the legacy run does not cover.
 *
 * Build:  cc -g -fno-omit-frame-pointer report_formats.c -o report_formats -lheapcheck
 * Run (each writes the files named, and exits 1 because of the leaks):
 *   HEAPCHECK=normal HEAPCHECK_REPORT=json:leaks.json ./report_formats
 *   HEAPCHECK=normal HEAPCHECK_REPORT=sarif:leaks.sarif ./report_formats
 *   HEAPCHECK=normal HEAPCHECK_REPORT=svg:leaks.%n.svg,folded:leaks.%n.folded ./report_formats
 *   HEAPCHECK=normal HEAPCHECK_REPORT=suppressions ./report_formats     (a suppression under each record)
 * Adopt the checker on a legacy code base in one step:
 *   heapcheck --gen-suppressions=legacy.supp ./report_formats          (exit 1, writes the list)
 *   heapcheck --suppressions=legacy.supp ./report_formats              (exit 0)
 *   heapcheck --suppressions=legacy.supp ./report_formats new          (exit 1: new_feature only)
 * Flame graph of the live heap without the checker:
 *   HEAPCHECK_REPORT=svg:heap.svg ./report_formats
 */
#include <heapcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) static void legacy_cache_entry(void) {
  char *e = malloc(200);
  if (e) strcpy(e, "cached");
  sink = e;
  sink = NULL;
}

__attribute__((noinline)) static void legacy_buffer(int i) {
  sink = calloc(1, 100 + (size_t)i);
  sink = NULL;
}

__attribute__((noinline)) static void handle_request(void) {
  sink = malloc(48); /* leaked inside the "request" check */
  sink = NULL;
}

__attribute__((noinline)) static void new_feature(void) {
  sink = malloc(333);
  sink = NULL;
}

/* Stale pointers in dead stack memory would keep objects alive. */
__attribute__((noinline)) static void scrub_stack(void) {
  volatile char buf[8192];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

int main(int argc, char **argv) {
  legacy_cache_entry();
  for (int i = 0; i < 3; i++) legacy_buffer(i);
  hc_check_t *c = hc_check_begin("request");
  handle_request();
  scrub_stack();
  int ok = hc_check_end(c, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE);
  if (argc > 1 && strcmp(argv[1], "new") == 0) new_feature();
  scrub_stack();
  printf("report_formats: scoped check %s\n", ok ? "clean" : "found leaks");
  return 0;
}
