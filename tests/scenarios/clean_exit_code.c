// EXPECT: bytes=0 objects=0
// EXPECT-EXIT: 3
/* clean_exit_code.c - no leak: the checker must keep the program's own
 * exit status (3). */
#include "scenario.h"

static void *volatile keep;

int main(void) {
  keep = malloc(40);
  free(malloc(80));
  sc_end();
  return 3;
}
