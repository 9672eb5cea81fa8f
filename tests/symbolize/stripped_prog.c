/* stripped_prog.c - prints its own symbolization, for stripped_test.sh.
 *
 * The script runs a stripped copy (objcopy --strip-all) and copies with a
 * separate debug file (.gnu_debuglink, build-id) and compares the printed
 * module offsets with what nm says about the unstripped file.  Output, one
 * line per function:  <label> <module_offset-1 in hex> <function|-> <file|-> <line> <module>
 */
#include <stdint.h>
#include <stdio.h>

#include "hc_symbolize.h"

__attribute__((noinline)) int symtest_global_function(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 7 + 3;
}

#if defined(__clang__)
__attribute__((noinline, used)) static int symtest_static_function(int x) {
#else
__attribute__((noinline, noclone, used)) static int symtest_static_function(int x) {
#endif
  __asm__ volatile("" ::: "memory");
  return x * 5 + 1;
}

static void show(const char *label, uintptr_t entry) {
  hci_frame_t f;
  hci_symbolize(entry + 1, &f); /* entry + 1: the symbolizer takes return addresses */
  printf("%s %lx %s %s %d %s\n", label, (unsigned long)(f.module_offset - 1), f.function ? f.function : "-",
         f.file ? f.file : "-", f.line, f.module);
}

int main(void) {
  int (*volatile g)(int) = symtest_global_function;
  int (*volatile s)(int) = symtest_static_function;
  show("symtest_global_function", (uintptr_t)g);
  show("symtest_static_function", (uintptr_t)s);
  return g(1) + s(1) == 16 ? 0 : 1;
}
