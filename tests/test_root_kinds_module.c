/* test_root_kinds_module.c - a module test_root_kinds dlopen()s: a global
 * and a __thread variable (dynamic TLS, allocated by ld.so on first use)
 * that hold the only pointers to heap blocks. */
void *rk_module_global;
__thread void *rk_module_tls;

void rk_set_global(void *p) { rk_module_global = p; }
void *rk_get_global(void) { return rk_module_global; }
void rk_set_tls(void *p) { rk_module_tls = p; }
void *rk_get_tls(void) { return rk_module_tls; }
