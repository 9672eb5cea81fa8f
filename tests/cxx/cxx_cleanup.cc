// cxx_cleanup.cc - REGISTER_HEAPCHECK_CLEANUP runs before the whole-program
// check: g_block, reachable only through a HiddenPointer, would be a leak;
// the cleanup frees it, so the at-exit check finds nothing and the exit
// status is 0.  With CXX_TEST_SKIP_CLEANUP=1 the cleanup keeps the block and
// the leak is reported (exit 1): the cleanup is what makes the difference.
// Cleanups run in registration order, only in whole-program modes (not when
// inactive, not in local mode); with "cancel" (CancelGlobalCheck) they still
// run at exit, as in gperftools, but no check follows.
#include <gperftools/heap-checker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static HiddenPointer<char>* g_block;

REGISTER_HEAPCHECK_CLEANUP(first_cleanup, fprintf(stderr, "cleanup first ran\n"))

REGISTER_HEAPCHECK_CLEANUP(free_block, {
  fprintf(stderr, "cleanup free_block ran\n");
  if (g_block && !getenv("CXX_TEST_SKIP_CLEANUP")) {
    free(g_block->get());
    HeapLeakChecker::UnIgnoreObject(g_block);  // freeing an ignored object is an error
    delete g_block;
    g_block = NULL;
  }
})

__attribute__((noinline)) static void WipeStack() {
  volatile char buf[16384];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

__attribute__((noinline)) static void Make() {
  g_block = new HiddenPointer<char>(static_cast<char*>(malloc(555)));
  HeapLeakChecker::IgnoreObject(g_block);  // the box is no leak, even in draconian mode
}

int main(int argc, char** argv) {
  Make();
  WipeStack();
  if (argc > 1 && strcmp(argv[1], "cancel") == 0) HeapLeakChecker::CancelGlobalCheck();
  fprintf(stderr, "cleanup end of main\n");
  return 0;
}
