/* roots_tls_module.c - a shared object test_roots dlopen()s: one __thread
 * variable (dynamic TLS: glibc's ld.so mallocs the block on first use and
 * hangs it off the thread's DTV) and one global (in the module's writable
 * PT_LOAD segment).  The test stores a heap pointer in each and checks the
 * leak checker's roots reach it. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

static __thread void *mod_tls_slot;
static void *mod_global_slot;

EXPORT void **roots_mod_tls_addr(void) { return &mod_tls_slot; }
EXPORT void roots_mod_set_tls(void *p) { mod_tls_slot = p; }
EXPORT void **roots_mod_global_addr(void) { return &mod_global_slot; }
EXPORT void roots_mod_set_global(void *p) { mod_global_slot = p; }
