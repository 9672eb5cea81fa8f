// EXPECT: bytes=42 objects=1
/* stderr_closed.c - the program closes stderr (fclose: fd 2 is gone) and
 * leaks 42 bytes: the report must still reach the original stderr. */
#include <stdio.h>

#include "scenario.h"

int main(void) {
  fputs("stderr_closed: closing stderr\n", stderr);
  fclose(stderr);
  sc_leak(42);
  sc_end();
  return 0;
}
