/* fuzz_target.c - the program fuzz_corrupt.py corrupts: built without frame
 * pointers (its stacks need the DWARF unwinder and its .eh_frame), with
 * debug information (the report symbolizes its frames from .symtab and
 * .debug_line, or from a separate debug file), leaking a few objects from
 * a few call sites at different depths.  Prints "fuzz_target done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile fz_sink;

__attribute__((noinline)) static void *fz_make(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 0x5a, n);
  return p;
}

__attribute__((noinline)) static void fz_level3(int i) {
  fz_sink = fz_make(16 + (size_t)i);
  if (i % 3) free(fz_sink); /* two of three freed, the third leaked */
  fz_sink = NULL;
}

__attribute__((noinline)) static void fz_level2(int i) {
  fz_level3(i);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void fz_level1(int i) {
  for (int k = 0; k < 3; k++) fz_level2(i + k);
  __asm__ volatile("" ::: "memory");
}

int main(void) {
  for (int i = 0; i < 12; i++) fz_level1(i);
  char *s = strdup("fuzz_target done");
  puts(s);
  free(s);
  return 0;
}
