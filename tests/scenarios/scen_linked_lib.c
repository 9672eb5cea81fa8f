/* scen_linked_lib.c - a shared library linked at build time (not dlopen'ed)
 * whose global holds a pointer for root_linked_lib. */
#include <stddef.h>

void *scen_lib_global;

void scen_lib_set(void *p);

void scen_lib_set(void *p) { scen_lib_global = p; }

/* For lib_dtor_forget: held until this library's destructor drops it,
 * which the loader runs from _dl_fini (after the program's destructors). */
void *volatile scen_lib_dtor_held;

void scen_lib_hold_until_dtor(void *p);

void scen_lib_hold_until_dtor(void *p) { scen_lib_dtor_held = p; }

__attribute__((destructor)) static void scen_lib_forget(void) { scen_lib_dtor_held = NULL; }
