/* lock.c - the one lock type: a futex-backed mutex (Drepper's "futexes are
 * tricky", mutex 3).  States: 0 free, 1 held, 2 held and maybe contended.
 * No pthread_mutex: it must work before libc is initialised, in atfork
 * handlers, and be resettable in a forked child. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_base.h"

HC_TLS int hci_locks_held_here;

void hci_lock_fn_lock(hci_lock_t *l) { hci_lock(l); }
void hci_lock_fn_unlock(hci_lock_t *l) { hci_unlock(l); }
void hci_lock_fn_reset(hci_lock_t *l) { hci_lock_reset(l); }

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

#if HC_LOCK_RANKS
/* The ranks this thread holds: a bit per rank, and a count for the central
 * lists (the one rank held several times, while a walk takes them all).
 * Initial-exec TLS, like the thread cache pointer: usable from the first
 * malloc of any thread. */
static HC_TLS uint32_t held;
static HC_TLS uint16_t central_held;

static const char *rank_name(unsigned r) {
  static const char *const names[HC_RANK_COUNT] = {
      "unranked", "checker", "stop-the-world init", "TLS geometry init", "roots", "profiler",
      "JSON report", "symbolizer", "profile buckets", "malloc hooks", "release account", "stack depot", "quarantine", "thread-cache registry",
      "sampled spans", "page heap", "central list", "metadata arena", "report files"};
  return r < HC_RANK_COUNT ? names[r] : "?";
}

void hci_rank_acquire(const hci_lock_t *l, bool tried) {
  unsigned r = l->rank;
  if (r == HC_RANK_NONE) return;
  /* Ranks at or above r that are held (the central rank may nest). */
  uint32_t at_or_above = r == HC_RANK_CENTRAL ? ~((2u << r) - 1) : ~((1u << r) - 1);
  uint32_t above = held & at_or_above;
  if (above && !tried) {
    unsigned top = 31 - (unsigned)__builtin_clz(above);
    hci_fatal("lock order violated: taking the %s lock (rank %u) while holding the %s lock (rank %u)",
              rank_name(r), r, rank_name(top), top);
  }
  held |= 1u << r;
  if (r == HC_RANK_CENTRAL) central_held++;
}

void hci_rank_release(const hci_lock_t *l) {
  unsigned r = l->rank;
  if (r == HC_RANK_NONE) return;
  if (r == HC_RANK_CENTRAL && central_held > 1) {
    central_held--;
    return;
  }
  if (r == HC_RANK_CENTRAL) central_held = 0;
  held &= ~(1u << r);
}
#endif
