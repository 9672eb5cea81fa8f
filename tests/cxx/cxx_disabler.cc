// cxx_disabler.cc - HeapLeakChecker::Disabler: what a thread allocates while
// one of its Disablers lives (and what that points to) is never a leak, in
// the main thread and in other threads, nested or not.  Allocations after
// the Disabler is gone are checked again (the final leak proves it).
//
// Prints "disabler NoLeaks=1" then "after NoLeaks=0 BytesLeaked=20
// ObjectsLeaked=1" when active.  The disabled leaks stay unreported at exit;
// the 20-byte one is freed through a HiddenPointer, so the at-exit check is
// clean.
#include <gperftools/heap-checker.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct Node {
  Node* next;
  char pad[24];
};

static void* volatile g_sink;

// A leaked two-node list: the head is lost, the second node only reachable
// from the head.
__attribute__((noinline)) static void LeakList() {
  Node* b = new Node();
  Node* a = new Node();
  a->next = b;
  g_sink = a;
  g_sink = NULL;
}

__attribute__((noinline)) static void LeakBytes(size_t n) {
  void* p = malloc(n);
  g_sink = p;
  g_sink = NULL;
}

__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

static void* ThreadBody(void*) {
  HeapLeakChecker::Disabler disabler;
  LeakList();
  LeakBytes(10);
  return NULL;
}

__attribute__((noinline)) static HiddenPointer<char> LeakHidden(size_t n) {
  return HiddenPointer<char>(static_cast<char*>(malloc(n)));
}

int main() {
  HeapLeakChecker checker("disabler");
  {
    HeapLeakChecker::Disabler disabler;
    LeakList();
    LeakBytes(10);
    {
      HeapLeakChecker::Disabler nested;
      LeakBytes(11);
    }
    LeakBytes(12);  // still inside the outer Disabler
  }
  for (int i = 0; i < 3; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, ThreadBody, NULL) != 0) return 2;
    pthread_join(t, NULL);
  }
  WipeStack();
  bool ok = checker.NoLeaks();
  fprintf(stderr, "disabler NoLeaks=%d\n", ok);

  HeapLeakChecker after("after");
  HiddenPointer<char> hidden = LeakHidden(20);  // no Disabler any more: a leak
  WipeStack();
  ok = after.NoLeaks();
  if (HeapLeakChecker::IsActive())
    fprintf(stderr, "after NoLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok, after.BytesLeaked(),
            after.ObjectsLeaked());
  else
    fprintf(stderr, "after NoLeaks=%d inactive\n", ok);
  free(hidden.get());
  return 0;
}
