// EXPECT: bytes=277 objects=2
/* xor_hidden.c - a 200-byte object whose pointer is kept XORed with a key
 * (the program could still recover it): no tool can see it, so it is
 * reported.  Control: 77. */
#include "scenario.h"

volatile uintptr_t hidden_ptr;

static SC_NOINLINE void build(void) { hidden_ptr = (uintptr_t)malloc(200) ^ SC_XOR_KEY; }

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
