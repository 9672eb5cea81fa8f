// EXPECT: bytes=1100 objects=2
/* dlclose_leak.c - a dlopen'ed module leaks 300 bytes itself and holds 800
 * more in its global; then it is dlclose'd and unmapped, so the global is
 * gone: both objects leak. */
#include "sc_dl.h"

static SC_NOINLINE void use(void *h) {
  void (*leak)(size_t) = (void (*)(size_t))sc_dlsym(h, "scen_mod_leak");
  void (*set)(void *) = (void (*)(void *))sc_dlsym(h, "scen_mod_set_global");
  leak(300);
  set(malloc(800));
}

int main(void) {
  void *h = sc_dlopen("scen_module.so");
  use(h);
  if (dlclose(h) != 0) return 2;
  sc_end();
  return 0;
}
