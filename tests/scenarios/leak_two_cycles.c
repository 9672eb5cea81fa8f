// EXPECT: bytes=240 objects=5
// COMPARE-RECORDS
/* leak_two_cycles.c - one leaked structure made of two cycles: x0 -> x1 ->
 * x2 -> x0 and y0 <-> y1 (48 bytes each), with x1 pointing into the second
 * cycle.  Nothing else points into the x cycle: one direct leak (a member of
 * it) and four indirect, as valgrind counts them.  The y cycle is allocated
 * first (lower addresses in valgrind's heap and in ours), so it is
 * classified first and then found to hang off the x cycle.  (Had x1 pointed
 * to y1, valgrind, which never revisits a block already indirect, would
 * keep y0 direct; heapcheck makes one direct leak of one structure however
 * it is entered: leak_linked_cycles.)  Leaks: 5 * 48. */
#include "scenario.h"

struct node {
  struct node *next, *other;
};

static SC_NOINLINE struct node *node(size_t size) { return calloc(1, size); }

static SC_NOINLINE void build(void) {
  struct node *y0 = node(48), *y1 = node(48);
  y0->next = y1;
  y1->next = y0;
  struct node *x0 = node(48), *x1 = node(48), *x2 = node(48);
  x0->next = x1;
  x1->next = x2;
  x2->next = x0;
  x1->other = y0;
  sc_sink = x0;
  sc_sink = y0;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
