// EXPECT: bytes=77 objects=1
// REF-LSAN: bytes=477 objects=2
/* mmap_file_root.c - the only pointer to a 400-byte object is in a private
 * writable mapping of a file (emacs keeps its relocated dump, emacs.pdmp, in
 * such a mapping): a root for heapcheck as for valgrind, which scans every
 * "rw- mapped file" segment; LSan does not scan it and reports it.  The file
 * is removed once mapped.  Control: 77. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scenario.h"

void **volatile region;

static SC_NOINLINE void build(void) { region[100] = malloc(400); }

int main(void) {
  char path[] = "/tmp/hc_mmap_file_root.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, 1 << 16) != 0) return 2;
  region = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  unlink(path);
  close(fd);
  if (region == MAP_FAILED) return 2;
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
