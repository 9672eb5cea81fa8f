/* exiting_threads.c - threads still running pthread_exit when the final
 * check begins.
 *
 * A thread inside pthread_exit is alive: the check scans its stack from its
 * stack pointer.  In a static link, libgcc's forced unwind behind
 * pthread_exit sorts the executable's FDEs on first use, with malloc: main
 * called pthread_exit, other threads called exit, and the check found main
 * there (waiting for the allocator lock the check holds) in 11 of 30 runs;
 * an uninitialised slot of the unwinder's frames held a stale copy of a
 * leaked pointer (main's old callee frame), and the leak was missed.  Such a
 * thread has nothing left to do for the program: before the final check
 * takes any lock, the asking thread waits until every thread glibc marks as
 * exiting (EXITING_BIT of struct pthread's cancelhandling, whose offset
 * glibc publishes for libthread_db as _thread_db_pthread_cancelhandling) has
 * ended, at most EXITING_WAIT_MS.
 *
 * x86-64 only (the thread pointer is the struct pthread); elsewhere, or when
 * the descriptor cannot be found (a stripped static executable), nothing is
 * waited for.
 *
 * Locks: the allocator's thread registry, briefly, per poll.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_internal.h"
#include "hc_symbolize.h"

#define EXITING_BIT 0x10u /* glibc 2.34 and later: 1 << EXITING_BIT (4) */
#define EXITING_WAIT_MS 1000
#define MAX_SEEN 256

static char name_desc[] = "_thread_db_pthread_cancelhandling";

/* The field's offset in struct pthread, or -1. */
static long cancel_offset(void) {
  const uint32_t *desc = NULL;
  if (!hci_eh_static_exe()) {
    desc = dlsym(RTLD_DEFAULT, name_desc);
  } else {
    hci_elf_t e;
    uint64_t v;
    if (!hci_elf_open_file(&e, "/proc/self/exe", NULL, NULL)) return -1;
    bool found = hci_elf_object_value(&e, name_desc, &v);
    hci_elf_close(&e);
    /* Not a static PIE (its symbols would need the load bias). */
    if (found && v >= 0x10000) desc = (const uint32_t *)(uintptr_t)v;
  }
  uint32_t d[3];
  if (!desc || hci_os_read(d, (uintptr_t)desc, sizeof d) != sizeof d) return -1;
  /* {bits, count, offset}: one 32-bit int */
  return d[0] == 32 && d[1] == 1 && d[2] < 4096 ? (long)d[2] : -1;
}

static bool any_exiting(long off, int self) {
  int tids[MAX_SEEN];
  uintptr_t tps[MAX_SEEN];
  int n = hci_alloc_thread_tps(tids, tps, MAX_SEEN);
  int pid = (int)syscall(SYS_getpid);
  for (int i = 0; i < n; i++) {
    uint32_t ch;
    if (tids[i] == self || hci_os_read(&ch, tps[i] + (uintptr_t)off, sizeof ch) != sizeof ch) continue;
    if (!(ch & EXITING_BIT) || syscall(SYS_tgkill, pid, tids[i], 0) != 0) continue;
    bool kept;
    int taskfd = hci_proc_open(HCI_PROC_TASK, &kept);
    int z = taskfd >= 0 ? hci_task_zombie(taskfd, tids[i]) : 0;
    hci_proc_close(taskfd, kept);
    if (z != 1) return true;
  }
  return false;
}

void hci_let_exiting_threads_end(void) {
#if defined(__x86_64__)
  static long off = -2;
  if (off == -2) off = cancel_offset();
  if (off < 0) return;
  int self = (int)syscall(SYS_gettid);
  for (int ms = 0; ms < EXITING_WAIT_MS && any_exiting(off, self); ms++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
#endif
}
