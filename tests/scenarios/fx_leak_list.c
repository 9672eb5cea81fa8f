/* fx_leak_list.c - a 10-node list of 64-byte nodes whose head is dropped
 * (1 direct leak, 9 indirect), and a 2-object cycle of 32-byte blocks
 * (one member direct, the other indirect). */
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

struct node {
  struct node *next;
  char pad[56];
};

NOINLINE struct node *new_node(struct node *next) {
  struct node *n = calloc(1, sizeof *n);
  n->next = next;
  return n;
}

volatile int g_ten = 10; /* a loop bound the compiler cannot unroll into 10 call sites */

NOINLINE void build_and_drop(void) {
  struct node *head = NULL;
  for (int i = 0; i < g_ten; i++) head = new_node(head);
}

NOINLINE void *cycle_block(void) { return calloc(1, 32); }

NOINLINE void make_cycle(void) {
  void **a = cycle_block(), **b = cycle_block();
  store_ptr(a, b);
  store_ptr(b, a);
}

int main(void) {
  build_and_drop();
  make_cycle();
  wipe_stack();
  return 0;
}
