// EXPECT: bytes=11 objects=1
// EXPECT-STRICT: bytes=111 objects=2
// REF-VALGRIND: bytes=111 objects=2
// REF-LSAN: bytes=111 objects=2
/* cxx_global_dtor.cc - a global C++ object holds 100 bytes until its
 * destructor forgets them: reachable at normal's check (before global
 * destructors), a leak at strict's.  LSan's at-exit handler is registered
 * before the object's destructor (__cxa_atexit at construction), so it
 * checks after it, like strict.  Control: 11. */
#include <cstdlib>

#include "scenario.h"

struct Holder {
  void *volatile p = nullptr;
  ~Holder() { p = nullptr; }
};

Holder holder;

static SC_NOINLINE void build() { holder.p = std::malloc(100); }

int main() {
  build();
  sc_leak(11);
  sc_end();
  return 0;
}
