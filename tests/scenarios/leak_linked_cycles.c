// EXPECT: bytes=288 objects=6
// COMPARE-RECORDS
/* leak_linked_cycles.c - one leaked structure made of two 3-node cycles
 * (48 bytes a node): the first-made node of the cycle at higher addresses
 * points to the first-made node of the other.  valgrind (increasing
 * addresses: the first-made node is its cycle's lowest, the one its
 * address-order rule leads from) and the docs: one direct leak, five
 * indirect.  heapcheck's spans hand out later objects at lower addresses:
 * the pointed-to node was then not its cycle's lowest, and the address-order
 * rule alone made two direct leaks of one structure (valgrind's own
 * memcheck/tests/leak-cycle, run by hand, docs/validation.md).  Leaks: 6 * 48. */
#include "scenario.h"

struct node {
  struct node *next, *other;
  char pad[32];
};

static SC_NOINLINE struct node *cycle(void) {
  struct node *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
  a->next = b;
  b->next = c;
  c->next = a;
  return a;
}

static SC_NOINLINE void build(void) {
  struct node *x = cycle(), *y = cycle();
  if ((uintptr_t)x < (uintptr_t)y) y->other = x;
  else x->other = y;
  sc_sink = x;
  sc_sink = y;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
