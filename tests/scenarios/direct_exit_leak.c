// EXPECT: bytes=55 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: _exit skips it
/* direct_exit_leak.c - main leaks 55 bytes and ends with _exit(0), called
 * directly (not from inside exit).  valgrind reports the leak (it checks at
 * the last system call); heapcheck's interposed _exit runs the final check
 * first, in the process the checker started in, flushing nothing: the
 * unterminated printf stays in its buffer (stdout is a pipe here).  The
 * status becomes the leak status, as for exit(0). */
#include <stdio.h>
#include <unistd.h>

#include "scenario.h"

int main(void) {
  sc_leak(55);
  printf("dropped by _exit");
  sc_end();
  _exit(0);
}
