// cxx_scoped_clean.cc - a HeapLeakChecker whose scope leaks nothing: every
// NoLeaks alias returns true and the totals are 0.  Objects freed inside the
// scope that were allocated before it, and (except in draconian mode, which
// does no reachability analysis) objects still reachable from a global, are
// not leaks.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <string>

static char* g_reachable;
static std::map<int, std::string>* g_map;

int main() {
  const char* mode = getenv("HEAPCHECK");
  bool draconian = mode && strcmp(mode, "draconian") == 0;
  void* older = malloc(300);
  HeapLeakChecker checker("scoped_clean");
  free(older);
  {
    std::map<int, std::string> m;
    for (int i = 0; i < 100; i++) m[i] = std::string(40, 'x');
  }
  int* a = new int[10];
  delete[] a;
  if (!draconian) {
    g_reachable = static_cast<char*>(malloc(64));
    g_map = new std::map<int, std::string>;
    (*g_map)[1] = std::string(100, 'y');
  }
  bool r1 = checker.NoLeaks();
  bool r2 = checker.QuickNoLeaks();
  bool r3 = checker.BriefNoLeaks();
  bool r4 = checker.SameHeap();
  bool r5 = checker.QuickSameHeap();
  bool r6 = checker.BriefSameHeap();
  fprintf(stderr, "scoped_clean NoLeaks=%d QuickNoLeaks=%d BriefNoLeaks=%d SameHeap=%d QuickSameHeap=%d BriefSameHeap=%d\n",
          r1, r2, r3, r4, r5, r6);
  if (HeapLeakChecker::IsActive())
    fprintf(stderr, "scoped_clean BytesLeaked=%zd ObjectsLeaked=%zd\n", checker.BytesLeaked(),
            checker.ObjectsLeaked());
  if (!draconian) {
    free(g_reachable);
    delete g_map;
  }
  return 0;
}
