/* leaks_internal.h - the state the whole-program check (leaks.c), the
 * running of one check (check_run.c) and the exit path (exit_path.c) share.  Defined in leaks.c, registered
 * with HC_PRIVATE_STATE (it holds no pointer the program owns).
 * Locks: the fields a check writes are written under hci_chk_lock; the
 * exit path's (end_*, exit_*) by the thread ending the program. */
#ifndef HC_LEAKS_INTERNAL_H
#define HC_LEAKS_INTERNAL_H

#include "hc_checker.h"

typedef struct hci_leaks {
  _Atomic int main_done;        /* the final whole-program check started */
  _Atomic uint64_t final_owner; /* pid << 32 | tid of the thread running it, 0 once it is over */
  _Atomic int main_cancelled;   /* hc_cancel_global_check */
  int base_epoch;               /* minimal: first epoch reported; -1 = all */
  bool setup_done;              /* exclusions and suppressions (under hci_chk_lock) */
  bool traced_noted;
  bool have_status;             /* exit_status is the status given to exit() */
  int exit_status;
  bool incomplete;              /* the last check could not complete */
  hci_world_t held;             /* a failing final check's world, still stopped */
  bool holding;
  ssize_t g_bytes, g_objects;   /* last whole-program check; -1 = none yet */
  int (*real_main)(int, char **, char **);
  /* Where the program ended: the stack pointer of the frame that called
   * exit (or that main returned to) and its thread.  The final check scans
   * that thread's stack from there up: below it lie only dead frames (main's
   * and its callees' after main returned, exit's own).  The registers are
   * exit's caller's callee-saved ones (main's values live there). */
  uintptr_t end_sp, end_tp;
  int exit_tid;                 /* the thread inside exit() (0: none): its _exit checks first */
  uintptr_t end_regs[16];
  int end_nregs;
  void (*real_exit)(int);
  /* A vfork child called exit: libc ran (and so removed) every exit handler
   * of this process, ours among them, in the child, and refuses new ones. */
  bool exit_handlers_gone;
} hci_leaks_t;
extern hci_leaks_t hci_leaks;

/* The program's own status at exit is not 0: it is kept, leaks or not, in
 * every mode - LSan mode too, though LeakSanitizer's exitcode replaces any
 * status: a checker never changes what a failing program says
 * (docs/leak-checking.md, "Exit status"). */
static inline bool hci_chk_program_failed(void) {
  return hci_leaks.have_status && (hci_leaks.exit_status & 0xff) != 0;
}

/* Where the final whole-program check runs from. */
typedef enum {
  FINAL_AT_EXIT,  /* exit: an at-exit handler or the library destructor */
  FINAL_AT__EXIT, /* _exit (from an at-exit handler, or direct): nothing may be flushed */
  FINAL_FROM_API, /* __lsan_do_leak_check: the program goes on when nothing
                     leaked, so cleanups and libc's caches are left alone */
} hci_final_from_t;
/* leaks.c: the final whole-program check, once (later calls return at
 * once); leaks end the process unless its status is kept. */
void hci_chk_final(uintptr_t sp, hci_final_from_t from);
/* leaks.c: while another thread of this process runs the final check, wait
 * until it is over (an _exit or a second exit would end the process under
 * it); returns at once otherwise. */
void hci_chk_final_wait(void);

/* exit_path.c: libc's exit found (the library constructor); the final
 * check's exit handlers registered (start of main, or the late constructor
 * of a static link). */
void hci_exit_path_init(void);
void hci_exit_path_register(void);
/* A failing check in exit's handler: exit goes on under status (the rest of
 * the handlers, the destructors, stdio); returns only where it cannot. */
void hci_exit_path_go_on(int status);

/* check_run.c: the exclusions and suppressions, once, under hci_chk_lock
 * with the world running; the world a failing final check kept stopped,
 * let go (the process goes on). */
void hci_chk_setup_once(void);
void hci_chk_release_held(void);

#endif
