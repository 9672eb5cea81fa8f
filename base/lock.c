/* lock.c - the one lock type: a futex-backed mutex (Drepper's "futexes are
 * tricky", mutex 3).  States: 0 free, 1 held, 2 held and maybe contended.
 * No pthread_mutex: it must work before libc is initialised, in atfork
 * handlers, and be resettable in a forked child. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_base.h"

static void futex_wait(_Atomic int *addr, int val) {
  syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic int *addr, int n) {
  syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

hc_noinline void hci_lock_slow(hci_lock_t *l) {
  /* Spin briefly: critical sections are short (a batch move). */
  for (int i = 0; i < 100; i++) {
    int expected = 0;
    if (atomic_load_explicit(&l->xstate, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_weak_explicit(&l->xstate, &expected, 1, memory_order_acquire,
                                              memory_order_relaxed))
      return;
    hci_cpu_relax();
  }
  int saved = errno;
  while (atomic_exchange_explicit(&l->xstate, 2, memory_order_acquire) != 0)
    futex_wait(&l->xstate, 2);
  errno = saved;
}

hc_noinline void hci_unlock_slow(hci_lock_t *l) {
  int saved = errno;
  futex_wake(&l->xstate, 1);
  errno = saved;
}
