/* scen_module.c - the module root_dlopen_global and dlclose_leak dlopen:
 * a global that can hold a pointer, and a function that leaks. */
#include <stddef.h>
#include <stdlib.h>

void *scen_mod_global;
static void *volatile scen_mod_sink;

void scen_mod_set_global(void *p);
void scen_mod_leak(size_t n);

void scen_mod_set_global(void *p) { scen_mod_global = p; }

__attribute__((noinline)) void scen_mod_leak(size_t n) {
  scen_mod_sink = malloc(n);
  scen_mod_sink = NULL;
}
