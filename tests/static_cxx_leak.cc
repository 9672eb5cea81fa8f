// static_cxx_leak.cc - a fully static C++ program (g++ -static with
// libheapcheck.a) that leaks through C++ functions: a namespace, a class
// template's member, an operator and a lambda passed to a function template.
// A static executable has no __cxa_demangle to look up and no dynamic loader
// to load one: its report names these functions only through the
// symbolizer's own demangler (tests/test_static.sh checks the names).
#include <cstdlib>
#include <vector>

namespace leakns {
template <typename T>
struct Holder {
  __attribute__((noinline)) T *grab(unsigned long n) {
    T *p = static_cast<T *>(std::malloc(n * sizeof(T)));
    asm volatile("" : : "r"(p) : "memory");
    return p;
  }
  __attribute__((noinline)) Holder &operator+=(int k) {
    kept.push_back(grab(static_cast<unsigned long>(k)));
    return *this;
  }
  std::vector<T *> kept;
};
}  // namespace leakns

static leakns::Holder<int> *volatile sink;
static void *volatile lost;

template <typename F>
__attribute__((noinline)) static void call_with(F f) {
  f(3);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) static void lose(leakns::Holder<int> *h) {
  auto drop = [h]() __attribute__((noinline)) {
    for (int *p : h->kept) asm volatile("" : : "r"(p) : "memory");
    h->kept.clear();
    h->kept.shrink_to_fit();
  };
  drop();
}

int main() {
  leakns::Holder<int> *h = new leakns::Holder<int>;
  sink = h;
  for (int i = 1; i <= 4; i++) *h += 8;  // 4 blocks of 32 bytes
  lose(h);                               // the vector lets them go: leaked
  call_with([](int n) __attribute__((noinline)) {
    lost = std::malloc(static_cast<unsigned long>(n) * 16);  // 48 bytes
    lost = nullptr;
  });
  return 0;
}
