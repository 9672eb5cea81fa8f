// cxx_module.cpp - a C++ module for the demangling test: test_symbolize
// dlopens it (RTLD_LOCAL, so libstdc++ is not in the global scope) and
// expects hctest::cxx_probe(int) for the address of the mangled symbol.
#include <exception>

namespace hctest {
__attribute__((noinline)) int cxx_probe(int x) { return x * 3 + 1; }
}  // namespace hctest

// A reference into libstdc++, so the module needs it whatever --as-needed does.
extern "C" {
void (*hctest_terminate)() = &std::terminate;
void *hctest_cxx_probe_address(void) { return reinterpret_cast<void *>(&hctest::cxx_probe); }
}
