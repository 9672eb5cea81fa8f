/* fx_reachable.c - nothing leaks: a global pointer, a global list, an array of
 * blocks, an interior pointer (+16), blocks of every allocation function
 * held by a global table; one temporary freed.  Prints "reachable: done". */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

struct node {
  struct node *next;
  char pad[48];
};
void *volatile g_block;
struct node *volatile g_list;
void *g_array[4];
char *volatile g_interior;
void *g_table[16];

NOINLINE void build(void) {
  g_block = malloc(1000);
  for (int i = 0; i < 5; i++) {
    struct node *n = malloc(sizeof *n);
    n->next = g_list;
    g_list = n;
  }
  for (int i = 0; i < 4; i++) g_array[i] = calloc(1, 64 + i);
  g_interior = (char *)malloc(256) + 16;
  void *tmp = malloc(77);
  free(tmp);
  int k = 0;
  g_table[k++] = memalign(64, 100);
  posix_memalign(&g_table[k++], 128, 200);
  g_table[k++] = aligned_alloc(256, 512);
  g_table[k++] = valloc(300);
  g_table[k++] = realloc(malloc(10), 5000);
  g_table[k++] = strdup("reachable");
  g_table[k++] = malloc(300000); /* a large (page-span) object */
}

int main(void) {
  build();
  wipe_stack();
  printf("reachable: done\n");
  return 0;
}
