/* os.c - the OS layer: anonymous mappings, releasing pages, time, thread id.
 * Every wrapper preserves errno, because free() must not change it and
 * malloc() may only set it to ENOMEM. */
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_internal.h"

void *hci_os_map(size_t size) {
  int saved = errno;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  return p == MAP_FAILED ? NULL : p;
}

/* The kernel places mappings top-down, each right below the previous one.
 * An aligned mapping keeps the *highest* aligned start of an over-sized
 * mapping, so it ends where the previous heap mapping begins and the page
 * heap can merge free runs across mappings (trimming the top would leave a
 * hole between every two of them). */
void *hci_os_map_aligned(size_t size, size_t align) {
  if (align <= 4096) return hci_os_map(size);
  if (size + align < size) return NULL;
  uint8_t *p = hci_os_map(size);
  if (!p) return NULL;
  if (((uintptr_t)p & (align - 1)) == 0) return p;
  hci_os_unmap(p, size);
  p = hci_os_map(size + align);
  if (!p) return NULL;
  uintptr_t start = ((uintptr_t)p + align) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  size_t tail = align - head;
  if (head) hci_os_unmap(p, head);
  if (tail) hci_os_unmap((void *)(start + size), tail);
  return (void *)start;
}

void hci_os_unmap(void *p, size_t size) {
  int saved = errno;
  munmap(p, size);
  errno = saved;
}

void hci_os_release(void *p, size_t size) {
  int saved = errno;
  madvise(p, size, MADV_DONTNEED);
  errno = saved;
}

int hci_os_tid(void) { return (int)syscall(SYS_gettid); }

uint64_t hci_os_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* For sample timestamps (ages in reports): no TSC read, a few ns. */
uint64_t hci_os_now_coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
