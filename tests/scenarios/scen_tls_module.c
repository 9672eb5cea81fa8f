/* scen_tls_module.c - a dlopen'ed module with a __thread variable: its
 * TLS block is dynamic (allocated by ld.so on a thread's first access). */
#include <stddef.h>

static __thread void *volatile scen_mod_tls;

void scen_mod_set_tls(void *p);

void scen_mod_set_tls(void *p) { scen_mod_tls = p; }
