/* free_list.c - the key of the free-list links and marks (free_list.h).
 *
 * Drawn once from getrandom(2), with AT_RANDOM, the clock and addresses
 * mixed in when that fails (old kernels, seccomp).  Set with a compare and
 * swap, so two threads creating their first spans at once agree on it; it
 * never changes after the first object is linked.  Read-mostly: on a cache
 * line of its own, with the CPU's answer on a prefetch for writing. */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "free_list.h"

hci_fl_line_t hci_fl = {.bad = HC_FL_BAD_BITS};
HC_PRIVATE_STATE(hci_fl); /* the key, not a pointer: not a root */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/* Whether the CPU has a prefetch for writing (hc_fl_will_mark). */
static bool has_write_prefetch(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
#else
  return false;
#endif
}

void hci_fl_init(void) {
  if (__atomic_load_n(&hci_fl.key2, __ATOMIC_ACQUIRE)) return;
  __atomic_store_n(&hci_fl.write_prefetch, has_write_prefetch(), __ATOMIC_RELAXED);
  uint64_t r = 0;
  if (syscall(SYS_getrandom, &r, sizeof r, 1 /* GRND_NONBLOCK */) != (long)sizeof r) {
    const uint64_t *at = (const uint64_t *)getauxval(AT_RANDOM);
    r = mix((at ? at[1] : 0) ^ hci_os_now_ns() ^ (uintptr_t)&r ^ ((uint64_t)hci_os_tid() << 32));
  }
  uintptr_t want = (uintptr_t)r | ((uintptr_t)1 << 63) | 1u;
  uintptr_t zero = 0;
  __atomic_compare_exchange_n(&hci_fl.key, &zero, want, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  /* Every caller stores the key that won: key2 is set only once key is. */
  __atomic_store_n(&hci_fl.key2, __atomic_load_n(&hci_fl.key, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

void hci_fl_corrupt(const void *p, uintptr_t ra) {
  if (ra)
    hci_fatal("malloc(): corrupted free list: the link in freed block %p was overwritten "
              "(use after free?); called from %p", p, (void *)ra);
  hci_fatal("malloc(): corrupted free list: the link in freed block %p was overwritten "
            "(use after free?), found while moving a free list", p);
}

void hci_fl_corrupt_head(uintptr_t n, size_t size, uintptr_t ra) {
  void *was = (void *)(n ^ hci_fl.key); /* what the program wrote */
  if (ra)
    hci_fatal("malloc(): corrupted free list: the link in a freed block of %zu bytes was overwritten with %p "
              "(use after free?); called from %p", size, was, (void *)ra);
  hci_fatal("malloc(): corrupted free list: the link in a freed block of %zu bytes was overwritten with %p "
            "(use after free?), found while moving a free list", size, was);
}
