// EXPECT: bytes=77 objects=1
/* root_dlopen_global.c - a 700-byte object reachable only from a global of
 * a dlopen'ed module that stays loaded.  Control: 77. */
#include "sc_dl.h"

static SC_NOINLINE void give(void (*set)(void *)) { set(malloc(700)); }

int main(void) {
  void *h = sc_dlopen("scen_module.so");
  give((void (*)(void *))sc_dlsym(h, "scen_mod_set_global"));
  sc_leak(77);
  sc_end();
  return 0;
}
