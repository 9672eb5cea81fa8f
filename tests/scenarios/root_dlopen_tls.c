// EXPECT: bytes=77 objects=1
/* root_dlopen_tls.c - objects reachable only from a __thread variable of a
 * dlopen'ed module (dynamic TLS): the main thread's (600 bytes) and a
 * blocked thread's (601 bytes).  Control: 77. */
#include "sc_dl.h"
#include "sc_thread.h"

static void (*set_tls)(void *);

static SC_NOINLINE void give(size_t n) { set_tls(malloc(n)); }

static void *worker(void *arg) {
  (void)arg;
  give(601);
  sc_scrub_stack();
  sc_signal_ready();
  sc_block_forever();
  return NULL;
}

int main(void) {
  void *h = sc_dlopen("scen_tls_module.so");
  set_tls = (void (*)(void *))sc_dlsym(h, "scen_mod_set_tls");
  give(600);
  sc_spawn(worker, NULL);
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}
