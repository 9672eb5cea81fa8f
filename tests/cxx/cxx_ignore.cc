// cxx_ignore.cc - IgnoreObject / UnIgnoreObject.
//  - IgnoreObject returns its argument (any pointer type, const too);
//  - an ignored object whose only pointer is hidden is no leak, nor is what
//    it points to; an interior pointer ignores the whole object;
//  - Ignore, UnIgnore, Ignore again: ignored;
//  - Ignore then UnIgnore: a leak again (40 bytes, 1 object), found by a
//    scoped check; it is freed afterwards so the at-exit check stays clean.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>

struct Holder {
  int* data;
  char pad[16];
};

static HiddenPointer<Holder>* g_holder;        // hidden: ignored objects only
static HiddenPointer<char>* g_interior;
static HiddenPointer<int>* g_twice;
static HiddenPointer<int>* g_unignored;

__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

__attribute__((noinline)) static void Setup() {
  Holder* h = new Holder();
  h->data = new int[5];  // only reachable from *h
  Holder* same = HeapLeakChecker::IgnoreObject(h);
  const Holder* ch = h;
  const Holder* csame = HeapLeakChecker::IgnoreObject(ch);  // already ignored: a warning at most
  fprintf(stderr, "IgnoreObject returns its argument=%d\n", same == h && csame == ch);
  g_holder = new HiddenPointer<Holder>(h);

  char* buf = static_cast<char*>(malloc(200));
  HeapLeakChecker::IgnoreObject(buf + 50);  // interior pointer
  g_interior = new HiddenPointer<char>(buf);

  int* twice = new int[3];
  HeapLeakChecker::IgnoreObject(twice);
  HeapLeakChecker::UnIgnoreObject(twice);
  HeapLeakChecker::IgnoreObject(twice);
  g_twice = new HiddenPointer<int>(twice);

  int* un = new int[10];
  HeapLeakChecker::IgnoreObject(un);
  HeapLeakChecker::UnIgnoreObject(un);
  g_unignored = new HiddenPointer<int>(un);
}

int main() {
  // The HiddenPointer boxes themselves are reachable from globals; in
  // draconian mode they are ignored so they do not count.
  HeapLeakChecker checker("ignore");
  Setup();
  HeapLeakChecker::IgnoreObject(g_holder);
  HeapLeakChecker::IgnoreObject(g_interior);
  HeapLeakChecker::IgnoreObject(g_twice);
  HeapLeakChecker::IgnoreObject(g_unignored);
  WipeStack();
  bool ok = checker.NoLeaks();
  if (HeapLeakChecker::IsActive())
    fprintf(stderr, "ignore NoLeaks=%d BytesLeaked=%zd ObjectsLeaked=%zd\n", ok, checker.BytesLeaked(),
            checker.ObjectsLeaked());
  else
    fprintf(stderr, "ignore NoLeaks=%d inactive\n", ok);
  delete[] g_unignored->get();  // the only real leak: gone before the at-exit check
  return 0;
}
