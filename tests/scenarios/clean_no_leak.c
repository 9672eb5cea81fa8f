// EXPECT: bytes=0 objects=0
// EXPECT-DRACONIAN: bytes=170 objects=11
/* clean_no_leak.c - every object is freed or still reachable from a global:
 * nothing leaks, the program's exit status (0) is kept.  draconian does no
 * reachability analysis: it reports the 11 objects still allocated (the
 * 10-byte string and ten 16-byte nodes). */
#include <stdio.h>
#include <string.h>

#include "scenario.h"

struct node {
  struct node *next;
  int v;
};
/* External linkage: a write-only static could be optimised away. */
char *config;
struct node *list;

int main(void) {
  for (int i = 0; i < 1000; i++) free(malloc((size_t)i + 1));
  config = strdup("reachable");
  for (int i = 0; i < 10; i++) {
    struct node *n = calloc(1, sizeof *n);
    n->next = list;
    n->v = i;
    list = n;
  }
  char *tmp = calloc(100, 1);
  snprintf(tmp, 100, "%s", config);
  free(tmp);
  sc_end();
  return 0;
}
