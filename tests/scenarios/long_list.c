// EXPECT: bytes=3200000 objects=100000
/* long_list.c - a 100000-node list (32-byte nodes) whose head is dropped:
 * 1 direct and 99999 indirect leaks; a deep chain for the flood and the
 * direct/indirect classification. */
#include "scenario.h"

struct node {
  struct node *next;
  char pad[24];
};

static SC_NOINLINE void build(void) {
  struct node *head = NULL;
  for (int i = 0; i < 100000; i++) {
    struct node *x = calloc(1, sizeof *x);
    x->next = head;
    head = x;
  }
  sc_sink = head;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
