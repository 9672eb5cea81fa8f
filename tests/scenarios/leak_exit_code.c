// EXPECT: bytes=64 objects=1
/* leak_exit_code.c - a leak in a program that returns 3: the checker's exit
 * status 1 replaces it. */
#include "scenario.h"

int main(void) {
  sc_leak(64);
  sc_end();
  return 3;
}
