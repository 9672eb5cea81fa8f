/* deepbind_module.c - a module the test dlopen()s with RTLD_DEEPBIND: its
 * malloc family resolves in its own dependencies first, i.e. to libc's, as
 * PHP's extensions' do (test_deepbind.c). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

void *mod_malloc(size_t n) { return malloc(n); }
void mod_free(void *p) { free(p); }
void *mod_realloc(void *p, size_t n) { return realloc(p, n); }
void *mod_calloc(size_t n, size_t size) { return calloc(n, size); }
size_t mod_usable(void *p) { return malloc_usable_size(p); }
int mod_memalign(void **out, size_t align, size_t n) { return posix_memalign(out, align, n); }

/* Leaks one block of n bytes: its only pointer is overwritten. */
void *volatile mod_sink;
void mod_leak(size_t n) {
  mod_sink = malloc(n);
  memset(mod_sink, 0x5a, n);
  mod_sink = NULL;
}
