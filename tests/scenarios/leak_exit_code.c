// EXPECT: bytes=64 objects=1
// EXPECT-EXIT: 3
/* leak_exit_code.c - a leak in a program that returns 3: the leak is
 * reported and the program's failing status 3 is kept (the checker's status
 * 1 replaces only a status of 0). */
#include "scenario.h"

int main(void) {
  sc_leak(64);
  sc_end();
  return 3;
}
