// EXPECT: bytes=320 objects=2
/* cxx_aligned_new.cc - C++17 aligned new: an over-aligned struct (alignas
 * 64, 192 bytes) and operator new(128, align_val_t(256)) leaked. */
#include <new>

#include "scenario.h"

struct alignas(64) Wide {
  char data[192];
};

static SC_NOINLINE void build() {
  sc_sink = new Wide();
  sc_sink = ::operator new(128, std::align_val_t(256));
  sc_sink = nullptr;
}

int main() {
  build();
  sc_end();
  return 0;
}
