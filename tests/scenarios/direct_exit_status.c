// EXPECT: bytes=56 objects=1
// EXPECT-EXIT: 3
// REF-LSAN: bytes=0 objects=0                  LSan checks from an at-exit handler: _exit skips it
/* direct_exit_status.c - a failing program that leaks ends with _exit(3):
 * the leak is reported and the program's own status is kept, as for
 * exit(3) (docs/leak-checking.md, "Exit status"). */
#include <unistd.h>

#include "scenario.h"

int main(void) {
  sc_leak(56);
  sc_end();
  _exit(3);
}
