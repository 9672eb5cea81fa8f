/* fx_supp.c - leaks from distinct, suppressible places:
 *   leak_alpha   100 bytes, 1 object
 *   leak_beta    2 x 50 bytes
 *   leak_owner   a 64-byte block owning a list of 5 x 32-byte nodes made by
 *                build_list (the nodes are indirect leaks under it; their
 *                own stacks do not mention leak_owner)
 *   leak_gamma   70 bytes */
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

NOINLINE void leak_alpha(void) { memset(malloc(100), 0, 100); }
NOINLINE void leak_beta(void) {
  memset(malloc(50), 0, 50);
  memset(malloc(50), 0, 50);
}
NOINLINE void *list_node(void *next) {
  void **n = calloc(1, 32);
  store_ptr(n, next);
  return n;
}
volatile int g_five = 5; /* not unrolled into 5 call sites */

NOINLINE void *build_list(void) {
  void *head = NULL;
  for (int i = 0; i < g_five; i++) head = list_node(head);
  return head;
}
NOINLINE void leak_owner(void *list) {
  void **owner = calloc(1, 64);
  store_ptr(owner, list);
}
NOINLINE void leak_gamma(void) { memset(malloc(70), 0, 70); }

int main(void) {
  leak_alpha();
  leak_beta();
  leak_owner(build_list());
  leak_gamma();
  wipe_stack();
  return 0;
}
