// cxx_nested.cc - nested and overlapping HeapLeakCheckers: each reports only
// what was leaked after its own construction.
//   outer: leak 32; inner: leak 64 -> inner 64/1, outer 96/2
//   then a clean inner inside a leaking outer (inner 0, outer 200/1), and
//   two checkers whose checks overlap (first 40/2, second 64/2).
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>

static void* volatile g_sink;

__attribute__((noinline)) static void LeakOne(size_t n) {
  void* p = malloc(n);
  g_sink = p;
  g_sink = NULL;
}

__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

static void Show(const char* what, HeapLeakChecker& c) {
  bool ok = c.NoLeaks();
  if (HeapLeakChecker::IsActive())
    fprintf(stderr, "%s NoLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", what, ok, c.BytesLeaked(),
            c.ObjectsLeaked());
  else
    fprintf(stderr, "%s NoLeaks=%d inactive\n", what, ok);
}

int main() {
  {
    HeapLeakChecker outer("outer");
    LeakOne(32);
    {
      HeapLeakChecker inner("inner");
      LeakOne(64);
      WipeStack();
      Show("inner", inner);
    }
    WipeStack();
    Show("outer", outer);
  }
  {
    HeapLeakChecker outer2("outer2");
    LeakOne(200);
    {
      HeapLeakChecker inner2("inner2");
      free(malloc(300));
      WipeStack();
      Show("inner2", inner2);
    }
    WipeStack();
    Show("outer2", outer2);
  }
  {
    // Both end after both began, first ends first: first sees 16 + 24.
    HeapLeakChecker first("first");
    LeakOne(16);
    HeapLeakChecker second("second");
    LeakOne(24);
    WipeStack();
    Show("first", first);
    LeakOne(40);
    WipeStack();
    Show("second", second);  // 24 + 40
  }
  return 0;
}
