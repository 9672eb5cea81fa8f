// EXPECT: bytes=77 objects=1
// EXPECT-STDOUT: preinit ran
/* preinit_alloc.c - a function of the executable's .preinit_array (run by
 * the loader before every library's constructor, libheapcheck's included)
 * allocates, before libc has set environ: the allocator starts there and
 * read its options from an environ still NULL, so HEAPCHECK was never seen
 * and the checker stayed off for good (status 0, not even the banner; the
 * launcher said "0 processes checked, no leaks found").  main leaks 77
 * bytes. */
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

static void *early;

static void preinit(int argc, char **argv, char **envp) {
  (void)argc;
  (void)argv;
  (void)envp;
  early = malloc(44);
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit_fn)(int, char **, char **) = preinit;

int main(void) {
  free(early);
  printf("preinit ran\n");
  sc_leak(77);
  sc_end();
  return 0;
}
