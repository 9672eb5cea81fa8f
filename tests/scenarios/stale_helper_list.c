// EXPECT: bytes=128 objects=4
// COMPARE-RECORDS
/* stale_helper_list.c - a helper called from main builds a 4-node list
 * (32-byte nodes) and drops it; main then returns without scrubbing the
 * stack.  The helper's dead frame below main still holds node pointers,
 * and so does main's own frame once it returned: the final check scans the
 * stack only from the frame main returned to, so all 4 nodes leak (1 direct,
 * 3 indirect), as valgrind says. */
#include "scenario.h"

struct node {
  struct node *next;
  char pad[24];
};

static SC_NOINLINE void build_and_drop(void) {
  struct node *head = NULL;
  for (int i = 0; i < 4; i++) {
    struct node *n = malloc(sizeof *n);
    n->next = head;
    head = n;
  }
  sc_sink = head;
  sc_sink = NULL;
}

int main(void) {
  build_and_drop();
  return 0;
}
