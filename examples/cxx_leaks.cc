// cxx_leaks.cc - gperftools' C++ API (HeapLeakChecker) on libheapcheck.
//
// The same source builds against gperftools (-ltcmalloc) and heapcheck
// (-lheapcheck): only the link flag changes.
//   1. a scoped check around code that leaks (two 40-byte Messages on
//      x86-64) and one around code that does not;
//   2. REGISTER_HEAPCHECK_CLEANUP freeing a global cache before the final
//      check;
//   3. a Disabler around a deliberate leak, IgnoreObject on an object only
//      a masked pointer (HiddenPointer) refers to;
//   4. NoGlobalLeaks() in the middle of the program.
//
// Build:  c++ -g -fno-omit-frame-pointer cxx_leaks.cc -o cxx_leaks -lheapcheck
// Run:    HEAPCHECK=local  ./cxx_leaks   the scoped checks only; exit 0
//         HEAPCHECK=normal ./cxx_leaks   plus the whole-program check, which
//                                        reports the 80 leaked bytes; exit 1
#include <gperftools/heap-checker.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

std::map<std::string, std::vector<int> >* g_cache;  // freed by the cleanup below

void* volatile g_sink;

struct Message {
  std::string text;
  Message* reply;
};

// Leaks one Message (40 bytes on x86-64) every call: its pointer is lost.
__attribute__((noinline)) void SendAndForget(const char* text) {
  Message* m = new Message;
  m->text = text;  // short: stays in the string's inline buffer
  m->reply = NULL;
  g_sink = m;
  g_sink = NULL;
}

__attribute__((noinline)) void Tidy() {
  std::vector<std::string> words;
  for (int i = 0; i < 100; i++) words.push_back(std::string(32, 'a' + i % 26));
}

// Overwrites dead stack frames so no stale pointer keeps a leak alive.
__attribute__((noinline)) void ScrubStack() {
  volatile char buf[8192];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

}  // namespace

REGISTER_HEAPCHECK_CLEANUP(cache, delete g_cache; g_cache = NULL)

int main() {
  std::printf("heap checker %s, whole-program check %s\n", HeapLeakChecker::IsActive() ? "on" : "off",
              HeapLeakChecker::GlobalChecker() ? "at exit" : "none");
  // 1. Scoped checks.
  {
    HeapLeakChecker leaky("leaky");
    SendAndForget("hello");
    SendAndForget("world");
    ScrubStack();
    if (!leaky.NoLeaks())
      std::printf("check leaky: %zd bytes in %zd objects leaked\n", leaky.BytesLeaked(), leaky.ObjectsLeaked());
  }
  {
    HeapLeakChecker tidy("tidy");
    Tidy();
    std::printf("check tidy: %s\n", tidy.NoLeaks() ? "no leaks" : "leaks!");
  }

  // 2. A global cache, freed by the cleanup registered above.
  g_cache = new std::map<std::string, std::vector<int> >;
  (*g_cache)["primes"].push_back(2);

  // 3. Known leaks.
  {
    HeapLeakChecker known("known");
    {
      HeapLeakChecker::Disabler disabler;  // whatever this thread allocates here is fine
      g_sink = new int[100];
      g_sink = NULL;
    }
    static HiddenPointer<char> hidden(HeapLeakChecker::IgnoreObject(new char[64]));
    ScrubStack();
    std::printf("check known: %s\n", known.NoLeaks() ? "no leaks" : "leaks!");
  }

  // 4. A whole-program check now (the leaky Messages are still there).
  if (HeapLeakChecker::GlobalChecker() && !HeapLeakChecker::NoGlobalLeaks())
    std::printf("NoGlobalLeaks: %zd bytes in %zd objects\n", HeapLeakChecker::GlobalChecker()->BytesLeaked(),
                HeapLeakChecker::GlobalChecker()->ObjectsLeaked());
  std::fflush(stdout);
  return 0;
}
