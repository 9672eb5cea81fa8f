// EXPECT: bytes=77 objects=1
// REF-VALGRIND: bytes=91 objects=2
/* setenv_root.c - strings reachable only from the environment: setenv()
 * copies (libc allocates the strings and a new environ array) and a
 * putenv()'ed heap string.  Control: 77.  valgrind runs __libc_freeres
 * before its check, which frees the environ array: the 14-byte putenv string
 * then counts as definitely lost (not with --run-libc-freeres=no). */
#include <string.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  setenv("SC_SETENV_A", "value-a", 1);
  setenv("SC_SETENV_B", "a-longer-value-for-b", 1);
  char *s = strdup("SC_PUTENV=yes");
  putenv(s);
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
