/* scen_linked_lib.c - a shared library linked at build time (not dlopen'ed)
 * whose global holds a pointer for root_linked_lib. */
#include <stddef.h>

void *scen_lib_global;

void scen_lib_set(void *p);

void scen_lib_set(void *p) { scen_lib_global = p; }
