/* timed_sem.c - sem_timedwait and sem_clockwait keep their wait under the
 * signal fallback (the shared library only).
 *
 * Both are futex waits to an absolute deadline, and return EINTR to the
 * program when a handler runs.  The fallback's handler restarts such a
 * wait as it was when /proc/<tid>/syscall showed the thread in it before
 * the signal was sent (timed_waits.c); a thread seen running, that entered
 * the wait after that read, needs a record naming the call: these wrappers
 * give it (hci_timed_futex_begin) around libc's own function, which stays
 * the cancellation point.  Only the shared library has them: libc.a has
 * no other name for these two functions that a static link would pull in,
 * so a definition of ours there could not reach libc's.  A static link
 * keeps that EINTR (docs/leak-checking.md, "The signal fallback").
 *
 * Locks: none.  No malloc (dlsym at the first call: hci_timed_next).
 */
#include <errno.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

#include "hc_checker.h"

typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);
typedef int (*sem_clockwait_fn)(sem_t *, clockid_t, const struct timespec *);
static void *real_timedwait, *real_clockwait;
HC_PRIVATE_STATE(real_timedwait);
HC_PRIVATE_STATE(real_clockwait);
static char name_timedwait[] = "sem_timedwait", name_clockwait[] = "sem_clockwait";

/* libc's, NULL when not found (ENOSYS below). */
static void *real(void **slot, const char *name, void *self) { return hci_timed_next(slot, name, self, NULL); }

hc_public int sem_timedwait(sem_t *sem, const struct timespec *abs) {
  sem_timedwait_fn f = (sem_timedwait_fn)(uintptr_t)real(&real_timedwait, name_timedwait, (void *)sem_timedwait);
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  hci_timed_rec_t saved;
  bool on = hci_timed_futex_begin(abs, &saved);
  int r = f(sem, abs);
  hci_timed_futex_end(on, &saved);
  return r;
}

hc_public int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *abs) {
  sem_clockwait_fn f = (sem_clockwait_fn)(uintptr_t)real(&real_clockwait, name_clockwait, (void *)sem_clockwait);
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  hci_timed_rec_t saved;
  bool on = hci_timed_futex_begin(abs, &saved);
  int r = f(sem, clock, abs);
  hci_timed_futex_end(on, &saved);
  return r;
}
