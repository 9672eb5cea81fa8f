// own_new_fixture.cc - a program that replaces the global operator new and
// delete (the unsized forms, all the standard asks for: the sized and
// aligned deletes of the library call them), for test_own_allocator.sh.
// MODE "own": they take memory from a bump allocator of the program's; MODE
// "count": they count and call malloc and free, and one object leaks.
// Preloaded, heapcheck's sized operator delete was found first: the
// program's delete was never called ("new 10 delete 0"), and with its own
// memory the block reached heapcheck's free (abort).  Prints the counts.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

static int own, news, deletes;
static char *top;

static void *bump(size_t n) {
  if (!top) top = (char *)mmap(nullptr, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *p = top;
  top += (n + 15) & ~(size_t)15;
  return p;
}

void *operator new(size_t n) {
  news++;
  return own ? bump(n) : malloc(n);
}
void operator delete(void *p) noexcept {
  if (p) deletes++;
  if (!own) free(p);
}

struct S {
  long a[5];
};
static S *volatile sink;

int main(int argc, char **argv) {
  own = argc > 1 && !strcmp(argv[1], "own");
  for (int i = 0; i < 10; i++) {
    sink = new S(); // through a volatile: clang elides a new-delete pair it sees whole
    sink->a[0] = i;
    delete sink; // operator delete(void *, size_t): libstdc++'s calls ours
  }
  if (!own) sink = new S(); // a leak (count mode: heapcheck's memory)
  sink = nullptr;
  printf("new %d delete %d\n", news, deletes);
  return 0;
}
