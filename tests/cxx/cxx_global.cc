// cxx_global.cc [cancel] - NoGlobalLeaks, GlobalChecker, CancelGlobalCheck.
// Leaks 123 bytes, then NoGlobalLeaks() (false when a whole-program checker
// exists) and GlobalChecker()->BytesLeaked()/ObjectsLeaked() (123/1).  The
// at-exit check then reports the leak and the exit status is 1, unless
// "cancel" is given: CancelGlobalCheck() makes it 0 despite the leak.
// With HEAPCHECK=local or unset there is no global checker: NULL, true, 0.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char** argv) {
  bool cancel = argc > 1 && strcmp(argv[1], "cancel") == 0;
  HeapLeakChecker* g = HeapLeakChecker::GlobalChecker();
  fprintf(stderr, "global IsActive=%d GlobalChecker=%s same=%d\n", HeapLeakChecker::IsActive(),
          g ? "set" : "null", g == HeapLeakChecker::GlobalChecker());
  bool before = HeapLeakChecker::NoGlobalLeaks();
  fprintf(stderr, "before NoGlobalLeaks=%d\n", before);
  LeakOne(123);
  WipeStack();
  bool ok = HeapLeakChecker::NoGlobalLeaks();
  if (g)
    fprintf(stderr, "global NoGlobalLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok, g->BytesLeaked(),
            g->ObjectsLeaked());
  else
    fprintf(stderr, "global NoGlobalLeaks=%d no global checker\n", ok);
  // Repeatable.
  ok = HeapLeakChecker::NoGlobalLeaks();
  fprintf(stderr, "global again NoGlobalLeaks=%d\n", ok);
  if (g) {
    // NoLeaks() on the global checker is the same whole-program check.
    ok = g->NoLeaks();
    fprintf(stderr, "global NoLeaks=%d BytesLeaked=%zd\n", ok, g->BytesLeaked());
  }
  if (cancel) HeapLeakChecker::CancelGlobalCheck();
  fprintf(stderr, "global end of main\n");
  return 0;
}
