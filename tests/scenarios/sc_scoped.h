/* sc_scoped.h - a scoped leak check from a scenario that is not linked with
 * heapcheck: hc_check_begin/hc_check_end are found with dlsym (absent under
 * valgrind or LSan, where the leak is simply kept for the final report).
 */
#ifndef SC_SCOPED_H
#define SC_SCOPED_H

#include <dlfcn.h>
#include <stdio.h>

#include "scenario.h"

/* Runs a check named name around a leak of n bytes; prints "scoped: leaks"
 * when it found a leak (or when there is no checker), "scoped: clean" else. */
static SC_NOINLINE SC_UNUSED void sc_scoped_leak(const char *name, size_t n) {
  void *(*begin)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "hc_check_begin");
  int (*end)(void *, int) = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "hc_check_end");
  void *c = begin && end ? begin(name) : NULL;
  sc_leak(n);
  sc_scrub_stack();
  printf("scoped: %s\n", c == NULL || !end(c, 0) ? "leaks" : "clean");
}

#endif
