// cxx_scoped_leak.cc - a HeapLeakChecker that must find exactly the two
// 48-byte objects leaked inside its scope (and nothing allocated before).
//
// Prints (stderr) "scoped_leak NoLeaks=0 BytesLeaked=96 ObjectsLeaked=2"
// when the checker is active; "scoped_leak NoLeaks=1 inactive" otherwise.
// The leaks stay, so the at-exit whole-program check reports them too.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>

static void* volatile g_sink;
static void* g_before;  // allocated before the checker, reachable: never reported

// The pointer exists only in this dead frame once the function returns.
__attribute__((noinline)) static void LeakOne(size_t n) {
  void* p = malloc(n);
  g_sink = p;
  g_sink = NULL;
}

// Overwrites the dead frames below the caller so no stale copy survives.
__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

int main() {
  g_before = malloc(1000);
  free(malloc(5000));  // freed before the check: cannot offset later leaks
  HeapLeakChecker checker("scoped_leak");
  for (int i = 0; i < 2; i++) LeakOne(48);
  WipeStack();
  bool ok = checker.NoLeaks();
  if (!HeapLeakChecker::IsActive()) {
    fprintf(stderr, "scoped_leak NoLeaks=%d inactive\n", ok);
    return 0;
  }
  fprintf(stderr, "scoped_leak NoLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok,
          checker.BytesLeaked(), checker.ObjectsLeaked());
  // A second check on the same checker sees the same leaks.
  ok = checker.SameHeap();
  fprintf(stderr, "scoped_leak again SameHeap=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok,
          checker.BytesLeaked(), checker.ObjectsLeaked());
  return 0;
}
