/* fx_knobs.c - one scenario per argument, for the HEAP_CHECK_* knobs and the
 * API's messages (the at-exit check reports what each one leaves):
 *   offset    a 4000-byte block reachable only through a pointer 2000 bytes
 *             inside it (a leak unless HEAP_CHECK_MAX_POINTER_OFFSET >= 2000
 *             or -1) and a 100-byte block through a pointer 50 bytes inside
 *             (always reachable);
 *   unaligned a 300-byte block whose only pointer sits at an odd address (a
 *             leak unless HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=1);
 *   messages  hc_ignore_object / hc_unignore_object misuse: prints their
 *             return codes; leaves no leak;
 *   cleanup   a 555-byte block known only through an XOR-masked global is
 *             freed by a registered cleanup: no leak if cleanups run before
 *             the final check (prints "knobs: cleanup ran");
 *   region    a block reachable only from a registered mmap'ed root region;
 *   disable   leaks inside hc_disable_begin/end (not reported) and one
 *             outside (40 bytes, reported). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "scenario.h"
#include "heapcheck.h"

char *volatile g_inside;
char *volatile g_small_inside;
struct __attribute__((packed)) odd {
  char c;
  void *p;
};
struct odd g_odd;
unsigned long volatile g_cleanup_hidden; /* pointer ^ HIDE_MASK */
int g_dummy;

static void cleanup(void) {
  free((void *)(g_cleanup_hidden ^ HIDE_MASK));
  g_cleanup_hidden = 0;
  printf("knobs: cleanup ran\n");
  fflush(stdout);
}

NOINLINE void offset(void) {
  g_inside = (char *)malloc(4000) + 2000;
  g_small_inside = (char *)malloc(100) + 50;
}

NOINLINE void unaligned(void) { g_odd.p = malloc(300); }

NOINLINE void messages(void) {
  void *p = malloc(10);
  printf("knobs: ignore(stack)=%d\n", hc_ignore_object(&g_dummy));
  printf("knobs: ignore(p)=%d\n", hc_ignore_object(p));
  printf("knobs: ignore(p) again=%d\n", hc_ignore_object(p));
  printf("knobs: unignore(p)=%d\n", hc_unignore_object(p));
  printf("knobs: unignore(p) again=%d\n", hc_unignore_object(p));
  printf("knobs: unignore(global)=%d\n", hc_unignore_object(&g_dummy));
  free(p);
}

NOINLINE void region(void) {
  void **r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  r[7] = malloc(600);
  printf("knobs: register=%d\n", hc_register_root_region(r, 4096));
  printf("knobs: unregister(bad)=%d\n", hc_unregister_root_region(r, 100));
}

NOINLINE void *disabled_site(void) { return malloc(1000); }
NOINLINE void disable(void) {
  hc_disable_begin();
  hc_disable_begin();
  disabled_site();
  hc_disable_end();
  disabled_site();
  hc_disable_end();
  malloc(40);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "offset")) offset();
    else if (!strcmp(argv[i], "unaligned")) unaligned();
    else if (!strcmp(argv[i], "messages")) messages();
    else if (!strcmp(argv[i], "cleanup")) {
      g_cleanup_hidden = (unsigned long)malloc(555) ^ HIDE_MASK;
      printf("knobs: register_cleanup=%d active=%d\n", hc_register_cleanup(cleanup), hc_is_active());
    } else if (!strcmp(argv[i], "region")) region();
    else if (!strcmp(argv[i], "disable")) disable();
    else {
      fprintf(stderr, "knobs: unknown scenario %s\n", argv[i]);
      return 2;
    }
  }
  wipe_stack();
  fflush(stdout);
  return 0;
}
