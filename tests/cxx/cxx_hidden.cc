// cxx_hidden.cc - HiddenPointer<T>: get() gives the pointer back, the stored
// word is not the pointer (gperftools' mask), and an object reachable only
// through a HiddenPointer is a leak: 16 bytes in 1 object.  It is freed after
// the check, so the at-exit check is clean.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static HiddenPointer<int>* g_hidden;  // itself reachable; what it hides is not

__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

__attribute__((noinline)) static void Make() {
  int* p = new int[4];
  p[0] = 42;
  g_hidden = new HiddenPointer<int>(p);
  uintptr_t stored;
  memcpy(&stored, g_hidden, sizeof stored);
  fprintf(stderr, "hidden roundtrip=%d stored_differs=%d mask_ok=%d size_ok=%d\n", g_hidden->get() == p,
          stored != reinterpret_cast<uintptr_t>(p),
          (stored ^ reinterpret_cast<uintptr_t>(p)) == static_cast<uintptr_t>(0xF03A5F7BF03A5F7BUL),
          sizeof(HiddenPointer<int>) == sizeof(void*));
}

int main() {
  HeapLeakChecker checker("hidden");
  Make();
  HeapLeakChecker::IgnoreObject(g_hidden);  // the box is no leak, even in draconian mode
  WipeStack();
  bool ok = checker.NoLeaks();
  if (HeapLeakChecker::IsActive())
    fprintf(stderr, "hidden NoLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok, checker.BytesLeaked(),
            checker.ObjectsLeaked());
  else
    fprintf(stderr, "hidden NoLeaks=%d inactive\n", ok);
  fprintf(stderr, "hidden value=%d\n", g_hidden->get()[0]);
  delete[] g_hidden->get();
  return 0;
}
