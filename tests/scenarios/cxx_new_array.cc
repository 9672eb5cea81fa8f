// EXPECT: bytes=156 objects=2
/* cxx_new_array.cc - new[] leaks: char[100] (100 bytes) and 3 objects of a
 * class with a destructor (3*16 + the 8-byte array cookie = 56 bytes; the
 * program's pointer is 8 bytes into the block).  A third array of the same
 * class stays reachable from a global through that interior pointer. */
#include "scenario.h"

struct WithDtor {
  long a, b;
  ~WithDtor() { a = 0; }
};

WithDtor *volatile kept;

static SC_NOINLINE void build() {
  sc_sink = new char[100];
  sc_sink = new WithDtor[3];
  sc_sink = nullptr;
  kept = new WithDtor[4];
}

int main() {
  build();
  sc_end();
  return 0;
}
