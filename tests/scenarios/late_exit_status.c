// EXPECT: bytes=77 objects=1
// EXPECT-EXIT: 8
// REF-LSAN: bytes=77 objects=1
/* late_exit_status.c - an exit handler that runs after the whole-program
 * check (registered by a constructor, so after the check's own) ends the
 * process with exit(8): the program's own failure ("flush failed, exit
 * with an error").  The leak is reported and status 8 is kept, as a
 * failing status at the check is (docs/leak-checking.md, "Exit status");
 * it was replaced by the check's 1 (helper adv25).  An exit(0) there
 * still ends with the check's status (atexit_underscore_exit). */
#include <stdlib.h>

#include "scenario.h"

static void fail_late(void) { exit(8); }

__attribute__((constructor)) static void register_late(void) { atexit(fail_late); }

int main(void) {
  sc_leak(77);
  sc_end();
  return 0;
}
