// EXPECT: bytes=10 objects=1
// EXPECT-STDOUT: line 0
// EXPECT-STDOUT: line 1999
// EXPECT-STDOUT: done
/* stdout_buffered.c - 2000 lines through stdio (fully buffered when stdout
 * is a pipe or file) and a 10-byte leak: the checker exits with status 1,
 * but the buffered output must not be lost. */
#include <stdio.h>

#include "scenario.h"

int main(void) {
  for (int i = 0; i < 2000; i++) printf("line %d\n", i);
  sc_leak(10);
  printf("done\n");
  sc_end();
  return 0;
}
