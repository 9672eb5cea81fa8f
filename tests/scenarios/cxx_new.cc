// EXPECT: bytes=44 objects=2
/* cxx_new.cc - operator new leaks: a 40-byte object and a 4-byte int. */
#include <cstdint>

#include "scenario.h"

struct Obj {
  char data[40];
};

static SC_NOINLINE void build() {
  sc_sink = new Obj();
  sc_sink = new int(5);
  sc_sink = nullptr;
}

int main() {
  build();
  sc_end();
  return 0;
}
