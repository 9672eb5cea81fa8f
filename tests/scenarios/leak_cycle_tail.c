// EXPECT: bytes=128 objects=4
// COMPARE-RECORDS
/* leak_cycle_tail.c - a leaked 2-cycle a <-> b with a 2-node tail hanging
 * off it (b -> t1 -> t2), all 32 bytes, the tail allocated first (lower
 * addresses).  valgrind: 1 direct (a cycle member) and 3 indirect; the old
 * rule promoted t2, t1 and a to direct leaks in turn.  Leaks: 4 * 32. */
#include "scenario.h"

struct node {
  struct node *next, *tail;
  char pad[16];
};

static SC_NOINLINE struct node *node(void) { return calloc(1, sizeof(struct node)); }

static SC_NOINLINE void build(void) {
  struct node *t2 = node(), *t1 = node();
  t1->next = t2;
  struct node *a = node(), *b = node();
  a->next = b;
  b->next = a;
  b->tail = t1;
  sc_sink = a;
  sc_sink = t1;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
