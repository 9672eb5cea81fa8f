/* fx_hostile_mod.c - a module that fx_hostile's fifo-module scenario loads
 * from a copy and leaks through (its frame makes the report open the
 * module's file, which the program has replaced by a FIFO). */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline, visibility("default"))) void *fx_hostile_mod_leak(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 0x33, n);
  return p;
}
