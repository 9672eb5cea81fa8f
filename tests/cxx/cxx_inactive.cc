// cxx_inactive.cc [bytes|objects|dtor] - behaviour around inactive checkers
// and misuse, as gperftools:
//  - no argument: a checker; with HEAPCHECK unset its constructor prints
//    "Heap checker is not active, hence checker "inactive" will do nothing!"
//    and "To activate set the HEAPCHECK environment variable.", NoLeaks()
//    is true and nothing else happens;
//  - "bytes"/"objects": BytesLeaked()/ObjectsLeaked() before any *NoLeaks
//    prints "*NoLeaks|SameHeap must execute before this call" and aborts -
//    also when inactive, since NoLeaks() then records no check;
//  - "dtor": an active checker destroyed without a *NoLeaks call prints
//    "Some *NoLeaks|SameHeap method must be called on any created
//    HeapLeakChecker" and aborts; an inactive one is destroyed silently.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  fprintf(stderr, "inactive IsActive=%d GlobalChecker=%s\n", HeapLeakChecker::IsActive(),
          HeapLeakChecker::GlobalChecker() ? "set" : "null");
  if (strcmp(what, "dtor") == 0) {
    {
      HeapLeakChecker forgotten("forgotten");
      free(malloc(10));
    }
    fprintf(stderr, "inactive dtor survived\n");
    return 0;
  }
  HeapLeakChecker checker("inactive");
  if (strcmp(what, "bytes") == 0) {
    (void)checker.NoLeaks();
    if (HeapLeakChecker::IsActive()) {
      // An active checker has checked now: BytesLeaked is fine; use a fresh one.
      HeapLeakChecker fresh("fresh");
      fprintf(stderr, "inactive calling BytesLeaked\n");
      fprintf(stderr, "inactive BytesLeaked=%zd\n", fresh.BytesLeaked());  // aborts
      (void)fresh.NoLeaks();
    } else {
      fprintf(stderr, "inactive calling BytesLeaked\n");
      fprintf(stderr, "inactive BytesLeaked=%zd\n", checker.BytesLeaked());  // aborts
    }
    return 0;
  }
  if (strcmp(what, "objects") == 0) {
    HeapLeakChecker fresh("fresh");
    fprintf(stderr, "inactive calling ObjectsLeaked\n");
    fprintf(stderr, "inactive ObjectsLeaked=%zd\n", fresh.ObjectsLeaked());  // aborts
    (void)fresh.NoLeaks();
    (void)checker.NoLeaks();
    return 0;
  }
  bool ok = checker.NoLeaks();
  fprintf(stderr, "inactive NoLeaks=%d\n", ok);
  // Static members are harmless when inactive.
  HeapLeakChecker::Disabler d;
  int* p = HeapLeakChecker::IgnoreObject(new int(7));
  HeapLeakChecker::UnIgnoreObject(p);
  delete p;
  fprintf(stderr, "inactive NoGlobalLeaks=%d\n", HeapLeakChecker::NoGlobalLeaks());
  return 0;
}
