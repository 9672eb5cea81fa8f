/* quick_exit.c - quick_exit (C11) ends with the exit check, as _exit does
 * (exit_path.c), in the shared library too.
 *
 * libc.so's quick_exit runs the at_quick_exit handlers and then its own
 * _exit, which no interposition reaches: such a process ended unchecked
 * where a static link checked (libc.a's quick_exit calls our _exit), and
 * the launcher said "0 processes checked, no leaks found" (adv29).  So
 * quick_exit is interposed: it notes the status and calls libc's, and a
 * handler of ours, registered by a constructor before main registers any,
 * runs after every handler of the program and ends the process through our
 * _exit, which checks (or not: the same rules as a direct _exit).  Only the
 * shared library has it: a static link's quick_exit is libc.a's, which
 * reaches our _exit by itself.
 *
 * Locks: none.  dlsym in the constructor.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "hc_checker.h"

extern void *__dso_handle;
int __cxa_at_quick_exit(void (*fn)(void), void *dso);

static _Atomic bool quick;
static int quick_status;
/* libc's, looked up by the constructor: at quick_exit another thread may
 * hold the loader's lock for good (a module's constructor inside dlopen). */
static void (*real_quick_exit)(int);

/* The last at_quick_exit handler: a quick_exit that came through ours ends
 * here, with the status it was given. */
static void quick_exit_last(void) {
  if (atomic_load(&quick)) _exit(quick_status);
}

__attribute__((constructor)) static void quick_exit_init(void) {
  *(void **)&real_quick_exit = dlvsym(RTLD_NEXT, "quick_exit", "GLIBC_2.24");
  if (!real_quick_exit) *(void **)&real_quick_exit = dlsym(RTLD_NEXT, "quick_exit");
  __cxa_at_quick_exit(quick_exit_last, &__dso_handle);
}

hc_public __attribute__((noreturn)) void quick_exit(int status) {
  quick_status = status;
  atomic_store(&quick, true);
  if (real_quick_exit) real_quick_exit(status);
  _exit(status);
}
