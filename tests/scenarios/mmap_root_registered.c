// EXPECT: bytes=77 objects=1
/* mmap_root_registered.c - like mmap_root, but the region is registered as
 * a root with hc_register_root_region (found with dlsym, so the program
 * needs no heapcheck at link time), or __lsan_register_root_region under
 * LeakSanitizer: the 400-byte object is reachable.  Control: 77. */
#include <dlfcn.h>
#include <sys/mman.h>

#include "scenario.h"

void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));

void **volatile region;

static SC_NOINLINE void build(void) { region[100] = malloc(400); }

int main(void) {
  size_t size = 1 << 16;
  region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 2;
  int (*reg)(const void *, size_t) = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "hc_register_root_region");
  if (reg && reg((const void *)region, size) != 0) return 2;
  if (__lsan_register_root_region) __lsan_register_root_region((const void *)region, size);
  build();
  sc_leak(77);
  sc_end();
  return 0;
}
