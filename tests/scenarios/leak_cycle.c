// EXPECT: bytes=184 objects=4
/* leak_cycle.c - unreachable cycles: a -> b -> c -> a (48 bytes each) and a
 * 40-byte object that points to itself.  A cycle keeps itself "pointed to",
 * but nothing outside reaches it: all 4 objects leak. */
#include "scenario.h"

struct n48 {
  struct n48 *next;
  char pad[40];
};
struct n40 {
  struct n40 *self;
  char pad[32];
};

static SC_NOINLINE void build(void) {
  struct n48 *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
  a->next = b;
  b->next = c;
  c->next = a;
  struct n40 *s = calloc(1, sizeof *s);
  s->self = s;
  sc_sink = a;
  sc_sink = s;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
