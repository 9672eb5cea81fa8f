// test_unwind_cxx.cc - stack capture while a C++ exception is in flight.
//
// Captures from a destructor that runs during unwinding (called from a
// landing pad, often in a .cold section with its own FDE) and from inside a
// catch block.  The DWARF unwinder must reach the frame that called
// run_case (its return address is recorded exactly); the frame-pointer
// unwinder must simply not crash.  hc_internal.h is C only (stdatomic), so the
// two symbols used are declared here.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

extern "C" {
int hci_backtrace(uintptr_t *pcs, int max, int skip);
bool hci_unwind_dwarf_available(void);
extern int hci_unwinder;
}

namespace {

enum { kFp = 0, kDwarf = 1, kMax = 64 };

struct Capture {
  uintptr_t pcs[kMax];
  int n;
};

Capture in_dtor, in_catch, in_nested;
int failures;

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

NOINL void capture(Capture *c) {
  c->n = hci_backtrace(c->pcs, kMax, 0);
  BARRIER();
}

struct Guard {
  Capture *c;
  ~Guard() { capture(c); }
};

NOINL void thrower(int x) {
  Guard g{&in_dtor};
  if (x > 0) throw std::runtime_error("boom");
  BARRIER();
}

NOINL void rethrower(int x) {
  try {
    thrower(x);
  } catch (const std::runtime_error &) {
    Guard g{&in_nested}; // destroyed while the rethrown exception unwinds
    throw;
  }
  BARRIER();
}

NOINL void run_case(uintptr_t *ra) {
  *ra = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  try {
    rethrower(1);
  } catch (const std::exception &) {
    capture(&in_catch);
  }
  BARRIER();
}

int find_pc(const Capture &c, uintptr_t v) {
  for (int i = 0; i < c.n; i++)
    if (c.pcs[i] == v) return i;
  return -1;
}

void dump(const char *what, const Capture &c) {
  std::fprintf(stderr, "  %s: %d frames:", what, c.n);
  for (int i = 0; i < c.n; i++) std::fprintf(stderr, " %#lx", static_cast<unsigned long>(c.pcs[i]));
  std::fprintf(stderr, "\n");
}

void check(bool ok, const char *what, const Capture &c) {
  if (ok) return;
  std::fprintf(stderr, "FAIL: %s\n", what);
  dump("got", c);
  failures++;
}

NOINL void run(int unwinder) {
  hci_unwinder = unwinder;
  std::memset(&in_dtor, 0, sizeof in_dtor);
  std::memset(&in_catch, 0, sizeof in_catch);
  std::memset(&in_nested, 0, sizeof in_nested);
  in_dtor.n = in_catch.n = in_nested.n = -1;
  uintptr_t ra = 0;
  run_case(&ra);
  BARRIER();
  const bool dwarf = unwinder == kDwarf;
  std::fprintf(stderr, "%s: dtor %d frames, nested dtor %d, catch %d\n", dwarf ? "dwarf" : "fp", in_dtor.n,
               in_nested.n, in_catch.n);
  check(in_dtor.n >= 1 && in_nested.n >= 1 && in_catch.n >= 1, "every capture returned frames", in_dtor);
  if (dwarf) {
    // ~Guard <- thrower (landing pad) <- rethrower <- run_case <- (ra)
    check(find_pc(in_dtor, ra) >= 3, "dwarf: destructor during unwinding reaches run_case's caller", in_dtor);
    check(find_pc(in_nested, ra) >= 2, "dwarf: destructor in a catch block during rethrow", in_nested);
    // capture <- catch block of run_case <- (ra)
    check(find_pc(in_catch, ra) == 1, "dwarf: catch block", in_catch);
  }
}

}  // namespace

int main() {
  if (!hci_unwind_dwarf_available()) {
    std::fprintf(stderr, "FAIL: no DWARF unwinder on this system\n");
    return 1;
  }
  run(kFp);
  run(kDwarf);
  run(kDwarf); // warm cache
  if (failures) {
    std::fprintf(stderr, "test_unwind_cxx: %d failures\n", failures);
    return 1;
  }
  std::printf("test_unwind_cxx: ok\n");
  return 0;
}
