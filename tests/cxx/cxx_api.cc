// cxx_api.cc - the header's shape: both include paths together, gperftools'
// object size (users keep checkers on the stack), IsActive and GlobalChecker
// per mode, and the examples of gperftools' docs/heap_checker.html compiled
// as written there.
#include <google/heap-checker.h>
#include <gperftools/heap-checker.h>
#include <google/heap-checker.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// gperftools: 7 pointer-sized members (56 bytes on LP64).
typedef char size_matches_gperftools[sizeof(HeapLeakChecker) == 7 * sizeof(void*) ? 1 : -1];
typedef char disabler_is_small[sizeof(HeapLeakChecker::Disabler) <= sizeof(void*) ? 1 : -1];

static int* g_config;
REGISTER_HEAPCHECK_CLEANUP(api_cleanup, delete g_config)

static void code_that_exercises_foo() {
  int* tmp = new int[100];
  delete[] tmp;
}

// "Explicit (Partial-program) Heap Leak Checking" from heap_checker.html.
static void DocExplicit() {
  HeapLeakChecker heap_checker("test_foo");
  {
    code_that_exercises_foo();
  }
  if (!heap_checker.NoLeaks()) assert(NULL == "heap memory leak");
}

// "Disabling Heap-checking of Known Leaks".
static void DocDisable() {
  {
    HeapLeakChecker::Disabler disabler;
    static int* known_leak = new int[3];  // reachable anyway; fine in every mode
    (void)known_leak;
  }
  int* p = HeapLeakChecker::IgnoreObject(new int(5));
  HeapLeakChecker::UnIgnoreObject(p);
  delete p;
}

int main() {
  const char* mode = getenv("HEAPCHECK");
  fprintf(stderr, "api sizeof=%zu pointers=%zu\n", sizeof(HeapLeakChecker), sizeof(HeapLeakChecker) / sizeof(void*));
  HeapLeakChecker* g1 = HeapLeakChecker::GlobalChecker();
  HeapLeakChecker* g2 = HeapLeakChecker::GlobalChecker();
  fprintf(stderr, "api IsActive=%d GlobalChecker=%s stable=%d mode=%s\n", HeapLeakChecker::IsActive(),
          g1 ? "set" : "null", g1 == g2, mode ? mode : "(unset)");
  g_config = new int(3);
  DocExplicit();
  DocDisable();
  // "Tweaking whole-program checking": check near the end of main, then
  // turn off the automatic one.  (In draconian mode libstdc++'s exception
  // pool is still allocated here, so this reports it.)
  bool ok = HeapLeakChecker::NoGlobalLeaks();
  fprintf(stderr, "api NoGlobalLeaks=%d\n", ok);
  HeapLeakChecker::CancelGlobalCheck();
  HeapCleaner::RunHeapCleanups();  // exists (does nothing here)
  fprintf(stderr, "api done\n");
  return 0;
}
