// EXPECT: bytes=106 objects=1
/* cxx_stale_reused.cc - operator new's memory is not initialised either:
 * the only pointer to a 106-byte array sat in an object that was deleted;
 * a new object of the same type (default-initialised: its fields keep
 * whatever the memory held) takes the freed slot and is kept in a global.
 * Checker mode clears freed blocks, so the array leaks, as valgrind says
 * (stale_in_reused.c: the C entry points). */
#include "scenario.h"

struct Holder {
  void *p[8];
};

Holder *volatile keep;

static SC_NOINLINE void build() {
  Holder *h = new Holder();
  h->p[3] = new char[106];
  // The compiler may drop a new-expression whose result is never read
  // (C++14) and stores before a delete: make both observable.
  __asm__ volatile("" : : "r"(h) : "memory");
  delete h;
}

static SC_NOINLINE void reuse() {
  Holder *b = new Holder; // default-initialised: p[] not written
  b->p[0] = nullptr;
  keep = b;
}

int main() {
  build();
  reuse();
  sc_end();
  return 0;
}
