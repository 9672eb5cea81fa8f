// EXPECT: bytes=77 objects=1
// EXPECT-DRACONIAN: bytes=641 objects=3
/* root_global_data.c - objects reachable only from an initialised global
 * (.data) and through it a second level; one 77-byte control leak.
 * draconian reports all three (77 + 64 + 500). */
#include "scenario.h"

struct holder {
  void *next;
  char pad[56];
};
void *g_data = &g_data; /* initialised: lives in .data */

static SC_NOINLINE void build(void) {
  struct holder *h = calloc(1, sizeof *h);
  h->next = malloc(500);
  g_data = h;
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
