/* fx_empty.c - does nothing: every mode, draconian included, must find no leak
 * (libc's and heapcheck's own allocations are not the program's leaks). */
#include <stdio.h>
int main(void) {
  printf("empty: done\n");
  return 0;
}
