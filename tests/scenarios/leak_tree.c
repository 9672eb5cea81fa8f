// EXPECT: bytes=360 objects=15
/* leak_tree.c - a complete binary tree of 15 nodes (24 bytes) whose root is
 * dropped: 1 direct leak, 14 indirect. */
#include "scenario.h"

struct tree {
  struct tree *left, *right;
  long v;
};

static struct tree *make(int depth) {
  if (depth == 0) return NULL;
  struct tree *t = calloc(1, sizeof *t);
  t->left = make(depth - 1);
  t->right = make(depth - 1);
  t->v = depth;
  return t;
}

static SC_NOINLINE void build(void) {
  sc_sink = make(4);
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
