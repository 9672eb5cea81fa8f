/* exiting.c - threads the final check finds inside pthread_exit.
 *
 * A thread that has called pthread_exit while another one ends the process
 * is stopped by the exit check wherever it is: in libgcc's unwinder, in a
 * cleanup handler, often in malloc waiting for the allocator lock the check
 * itself holds (a static executable's first unwinding sorts the FDEs of the
 * whole program and allocates there).  Its live frames then lie over its dead
 * ones, and a pointer left in one of them keeps a leak alive: main's
 * pthread_exit racing six threads that call exit missed a 33-byte leak in
 * 15 of 60 static runs (docs/validation.md, "Session 18: flakes").  Without
 * the check that thread would have ended in a moment, so the final check lets
 * it: it lets the world go and stops it again until no stopped thread is
 * inside pthread_exit, for at most EXITING_WAIT_MS.
 *
 * "Inside pthread_exit" is glibc's EXITING_BIT in struct pthread's
 * cancelhandling, set by pthread_exit before it unwinds (a thread returning
 * from its start routine does not set it).  The offset is libthread_db's
 * descriptor _thread_db_pthread_cancelhandling ({bits, count, offset}):
 * dlsym's in a dynamic process, the executable's symbol table in a static
 * one (as roots.c reads glibc's other descriptors).  Unknown: no wait.
 *
 * Locks: the offset is computed once under the checker lock, with the world
 * running (dlsym and the symbolizer may allocate); read-only afterwards.
 */
#include <dlfcn.h>
#include <string.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

#define EXITING_BIT 4 /* glibc's nptl/descr.h */

static struct {
  bool done;
  uint32_t off; /* 0: unknown */
} cancel;
HC_PRIVATE_STATE(cancel);

void hci_exiting_init(void) {
  if (cancel.done) return;
  cancel.done = true;
  uint32_t d[3] = {0, 0, 0};
  if (!hci_eh_static_exe()) {
    const uint32_t *p = dlsym(RTLD_DEFAULT, "_thread_db_pthread_cancelhandling");
    if (p) memcpy(d, p, sizeof d);
  } else {
    uintptr_t at;
    if (hci_symbolize_symbol((uintptr_t)&hci_exiting_init, "_thread_db_pthread_cancelhandling", &at))
      hci_copy_safe(d, at, sizeof d);
  }
  if (d[0] == 32 && d[1] == 1 && d[2] > 0 && d[2] < 65536) cancel.off = d[2];
}

int hci_exiting_thread(const hci_world_t *w) {
  if (!cancel.off) return 0;
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    if (t->is_self || !t->stopped || !t->tp) continue;
    int ch = 0;
    if (hci_copy_safe(&ch, t->tp + cancel.off, sizeof ch) == sizeof ch && (ch & (1 << EXITING_BIT))) return t->tid;
  }
  return 0;
}
