// EXPECT: bytes=978 objects=21
/* cxx_containers.cc - a leaked std::map<int, std::string>* with 10 entries:
 * the map object (48 bytes, direct), 10 tree nodes (32-byte node header +
 * 8-byte key slot + 32-byte string = 72 bytes) and 10 string buffers
 * (20 chars + NUL = 21 bytes): 48 + 720 + 210 = 978 bytes in 21 objects
 * (libstdc++ layout, x86-64/aarch64).  A second map stays reachable. */
#include <map>
#include <string>

#include "scenario.h"

std::map<int, std::string> *volatile kept;

static std::map<int, std::string> *fill() {
  auto *m = new std::map<int, std::string>();
  for (int i = 0; i < 10; i++) m->emplace(i, std::string(20, char('a' + i)));
  return m;
}

static SC_NOINLINE void build() {
  sc_sink = fill();
  sc_sink = nullptr;
  kept = fill();
}

int main() {
  build();
  sc_end();
  return 0;
}
