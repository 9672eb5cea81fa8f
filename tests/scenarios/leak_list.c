// EXPECT: bytes=320 objects=10
/* leak_list.c - a 10-node list whose head pointer is dropped: the head is a
 * direct leak, the 9 others indirect; the totals count all 10 (32 bytes). */
#include "scenario.h"

struct node {
  struct node *next;
  char pad[24];
};

static SC_NOINLINE void build(int n) {
  struct node *head = NULL;
  for (int i = 0; i < n; i++) {
    struct node *x = calloc(1, sizeof *x);
    x->next = head;
    head = x;
  }
  sc_sink = head;
  sc_sink = NULL;
}

int main(void) {
  build(10);
  sc_end();
  return 0;
}
