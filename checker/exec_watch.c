/* exec_watch.c - a thread that calls exec while a check runs.
 *
 * exec kills every other thread of the process, the checking thread among
 * them.  A task the check cloned (the ptrace helper, or its parent task in
 * the orphan shape, or a seccomp probe: stop_ptrace.c, seccomp_probe.c) is
 * a child of the process with PR_SET_PDEATHSIG: it died with the checking
 * thread and stayed a zombie child of the new image, which a wait with
 * __WALL reaped (a pid it never made: 8 of 24 runs of fx_hostile
 * exec-race).  Worse, in the orphan shape a helper still seizing threads
 * blocked for good in PTRACE_SEIZE of the exec'ing thread (the kernel's
 * cred_guard_mutex, held by exec), while exec waited for the helper to
 * release the threads it had traced and exec had killed: the process hung
 * (2 of 36 runs).
 *
 * So the exec family of libc is interposed (execve, execv, execvp, execvpe,
 * execl, execle, execlp, fexecve, execveat; syscall(SYS_execve) in
 * seccomp_watch.c) and each call passes a gate: while a check has a task of
 * its own (hci_exec_hold .. hci_exec_release) the calling thread waits -
 * the check stops it there like any thread, scans it, and lets it go; its
 * exec then runs - and a check about to clone waits for the execs already
 * past the gate (each one either replaces the process, killing the check
 * before any task of its exists, or fails and leaves the gate).  Neither
 * waits for the other at once (a Dekker pair of counters).  Not gated: a
 * vfork child's exec (or a CLONE_VM child's: another process, whose exec
 * ends no thread of ours; told by its pid), a thread holding one of the
 * library's locks (a signal handler's exec that interrupted the allocator:
 * the check may be waiting for that lock), an exec by an inline system
 * call.  The thread's wait is bounded (2 s while it runs: once the world is
 * stopped it does not run) so that an exec from a context holding a lock a
 * check waits for before its stop (the loader's lock, in a constructor run
 * by dlopen, while a seccomp probe's task is alive) delays that exec and
 * does not hang it; a check waits at most 2 s for an exec in flight (a
 * signal handler that jumped out of execvp).
 *
 * The calls are libc's own (found with dlsym RTLD_NEXT); in a static link,
 * where libc.a's are not reachable under their names, the same system
 * calls are made here, and execvp's PATH search follows execvp(3).
 *
 * Locks: none (atomic words and futexes).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"

#define RAW(n, a, b, c, d) hci_raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define WAIT_NS 2000000000ll

static struct {
  _Atomic int pid;   /* the process the words below count for (0: no checks) */
  _Atomic int holds; /* checks that have a task of their own alive */
  _Atomic int execs; /* threads past the gate whose exec has not failed yet */
} gate;
HC_PRIVATE_STATE(gate);

/* A timed private futex wait of at most 20 ms. */
static void nap_on(_Atomic int *w, int val) {
  struct timespec ts = {0, 20000000};
  RAW(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, &ts);
}

void hci_exec_watch_init(void) { atomic_store(&gate.pid, (int)RAW(SYS_getpid, 0, 0, 0, 0)); }

/* The counts start again at 0 in process pid (a child's copies are its
 * parent's). */
static void reset_for(int pid) {
  atomic_store(&gate.holds, 0);
  atomic_store(&gate.execs, 0);
  atomic_store(&gate.pid, pid);
}

/* Waits until *w is 0, at most WAIT_NS from the first look (*end, 0 until
 * then, kept across calls by a caller that waits more than once); returns
 * *w's last value. */
static int wait_zero(_Atomic int *w, long long *end) {
  int n;
  while ((n = atomic_load(w)) != 0) {
    long long t = hci_raw_now_ns();
    if (!*end) *end = t + WAIT_NS;
    else if (t >= *end) break; /* counted only while this thread runs (a stopped thread's clock jumps: see above) */
    nap_on(w, n);
  }
  return n;
}

void hci_exec_watch_fork_child(void) {
  if (atomic_load(&gate.pid)) reset_for((int)RAW(SYS_getpid, 0, 0, 0, 0));
}

void hci_exec_hold(void) {
  int pid = (int)RAW(SYS_getpid, 0, 0, 0, 0);
  if (atomic_load(&gate.pid) != pid) reset_for(pid); /* a child made without fork's handlers: counts of its parent */
  atomic_fetch_add(&gate.holds, 1);
  long long end = 0;
  wait_zero(&gate.execs, &end);
}

void hci_exec_release(void) {
  if (atomic_fetch_sub(&gate.holds, 1) == 1) RAW(SYS_futex, &gate.holds, FUTEX_WAKE_PRIVATE, INT_MAX, 0);
}

/* True when the caller must call exec_leave after its exec failed. */
static bool exec_enter(void) {
  if (atomic_load(&gate.pid) != (int)RAW(SYS_getpid, 0, 0, 0, 0)) return false; /* a vfork child, or no checks */
  long long end = 0;
  for (;;) {
    atomic_fetch_add(&gate.execs, 1);
    int h = atomic_load(&gate.holds);
    if (!h || hci_locks_held_here > 0) return true;
    if (atomic_fetch_sub(&gate.execs, 1) == 1) RAW(SYS_futex, &gate.execs, FUTEX_WAKE_PRIVATE, 1, 0);
    if (wait_zero(&gate.holds, &end)) { /* waited its time: go on as before the gate */
      atomic_fetch_add(&gate.execs, 1);
      return true;
    }
  }
}

static void exec_leave(bool in) {
  if (in && atomic_fetch_sub(&gate.execs, 1) == 1) RAW(SYS_futex, &gate.execs, FUTEX_WAKE_PRIVATE, 1, 0);
}

/* ---------------------------------------------------------------- libc's calls */

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static char name_execve[] = "execve", name_execvpe[] = "execvpe", name_fexecve[] = "fexecve",
            name_execveat[] = "execveat";
static struct {
  void *execve, *execvpe, *fexecve, *execveat;
  _Atomic bool resolved;
} real_fn;
HC_PRIVATE_STATE(real_fn);

/* From the library's constructor (a failing dlsym of a static link may
 * malloc: not in a vfork child); NULL where libc's are not reachable. */
void hci_exec_watch_resolve(void) {
  real_fn.execve = dlsym(RTLD_NEXT, name_execve);
  real_fn.execvpe = dlsym(RTLD_NEXT, name_execvpe);
  real_fn.fexecve = dlsym(RTLD_NEXT, name_fexecve);
  real_fn.execveat = dlsym(RTLD_NEXT, name_execveat);
  /* Never our own (a static link's RTLD_NEXT has no next object). */
  if (real_fn.execve == (void *)execve) real_fn.execve = NULL;
  if (real_fn.execvpe == (void *)execvpe) real_fn.execvpe = NULL;
  if (real_fn.fexecve == (void *)fexecve) real_fn.fexecve = NULL;
  if (real_fn.execveat == (void *)execveat) real_fn.execveat = NULL;
  atomic_store(&real_fn.resolved, true);
}

static void *real(void *const *slot) {
  if (!atomic_load(&real_fn.resolved)) hci_exec_watch_resolve(); /* an exec from a constructor run before ours */
  return *slot;
}

static int do_execve(const char *path, char *const argv[], char *const envp[]) {
  execve_fn f = (execve_fn)(uintptr_t)real(&real_fn.execve);
  if (f) return f(path, argv, envp);
  return (int)hci_raw_libc_result(RAW(SYS_execve, path, argv, envp, 0));
}

/* execvp(3) without libc's (a static link): a name without '/' is looked
 * up in PATH (unset: confstr's "/bin:/usr/bin"; an empty entry is the
 * current directory); EACCES is remembered and the search goes on, as on
 * ENOENT, ENOTDIR and the like; a file the kernel cannot execute (ENOEXEC)
 * is run by /bin/sh; any other error ends the search. */
static int run_script(const char *file, char *const argv[], char *const envp[]) {
  int argc = 0;
  while (argv[argc]) argc++;
  char *sh_argv[argc + 2];
  sh_argv[0] = (char *)"/bin/sh";
  sh_argv[1] = (char *)file;
  for (int i = 1; i <= argc; i++) sh_argv[i + 1] = argv[i];
  if (argc == 0) sh_argv[2] = NULL;
  return (int)hci_raw_libc_result(RAW(SYS_execve, "/bin/sh", sh_argv, envp, 0));
}

static int own_execvpe(const char *file, char *const argv[], char *const envp[]) {
  if (!*file) {
    errno = ENOENT;
    return -1;
  }
  if (strchr(file, '/')) {
    do_execve(file, argv, envp);
    if (errno == ENOEXEC) run_script(file, argv, envp);
    return -1;
  }
  const char *path = NULL; /* getenv's answer, read here (no options-table variable) */
  for (char **e = environ; e && *e && !path; e++)
    if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
  if (!path) path = "/bin:/usr/bin";
  size_t flen = strlen(file);
  if (flen > NAME_MAX) {
    errno = ENAMETOOLONG;
    return -1;
  }
  bool eacces = false;
  char buf[PATH_MAX];
  for (const char *p = path;; p++) {
    const char *end = strchrnul(p, ':');
    size_t dlen = (size_t)(end - p);
    if (dlen + 1 + flen + 1 <= sizeof buf) {
      memcpy(buf, p, dlen);
      size_t at = dlen;
      if (dlen) buf[at++] = '/';
      memcpy(buf + at, file, flen + 1);
      do_execve(buf, argv, envp);
      switch (errno) {
        case EACCES: eacces = true; break;
        case ENOENT: case ESTALE: case ENOTDIR: case ENODEV: case EHOSTUNREACH: case ETIMEDOUT: break;
        case ENOEXEC: run_script(buf, argv, envp); return -1;
        default: return -1;
      }
    }
    p = end;
    if (!*p) break;
  }
  errno = eacces ? EACCES : ENOENT;
  return -1;
}

static int do_execvpe(const char *file, char *const argv[], char *const envp[]) {
  execve_fn f = (execve_fn)(uintptr_t)real(&real_fn.execvpe);
  return f ? f(file, argv, envp) : own_execvpe(file, argv, envp);
}

/* ---------------------------------------------------------------- interposed */

#define GATED(call)               \
  do {                            \
    bool in_ = exec_enter();      \
    int r_ = (call);              \
    int e_ = errno;               \
    exec_leave(in_);              \
    errno = e_;                   \
    return r_;                    \
  } while (0)

hc_public __attribute__((weak)) int execve(const char *path, char *const argv[], char *const envp[]) {
  GATED(do_execve(path, argv, envp));
}
hc_public __attribute__((weak)) int execv(const char *path, char *const argv[]) {
  GATED(do_execve(path, argv, environ));
}
hc_public __attribute__((weak)) int execvpe(const char *file, char *const argv[], char *const envp[]) {
  GATED(do_execvpe(file, argv, envp));
}
hc_public __attribute__((weak)) int execvp(const char *file, char *const argv[]) {
  GATED(do_execvpe(file, argv, environ));
}
hc_public __attribute__((weak)) int fexecve(int fd, char *const argv[], char *const envp[]) {
  fexecve_fn f = (fexecve_fn)(uintptr_t)real(&real_fn.fexecve);
  /* A static link: libc's own check (EINVAL, not execveat's EBADF); the
   * copies hide libc's nonnull declaration from the compiler. */
  char *const *av = argv, *const *ev = envp;
  __asm__("" : "+r"(av), "+r"(ev));
  if (!f && (fd < 0 || !av || !ev)) {
    errno = EINVAL;
    return -1;
  }
  GATED(f ? f(fd, argv, envp)
          : (int)hci_raw_libc_result(hci_raw6(SYS_execveat, fd, (long)"", (long)argv, (long)envp, AT_EMPTY_PATH, 0)));
}
hc_public __attribute__((weak)) int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                                             int flags) {
  execveat_fn f = (execveat_fn)(uintptr_t)real(&real_fn.execveat);
  GATED(f ? f(dirfd, path, argv, envp, flags)
          : (int)hci_raw_libc_result(hci_raw6(SYS_execveat, dirfd, (long)path, (long)argv, (long)envp, flags, 0)));
}

/* The list forms: their arguments into an array on the stack (n_ of them
 * and the NULL; execle's environment follows the NULL).  libc declares the
 * first argument nonnull, yet execl(path, NULL) is seen: the copy hides it
 * from the compiler's assumption. */
#define LIST_ARGV(first, ap, argv, after)                           \
  int n_ = 0;                                                       \
  const char *first_ = (first);                                     \
  __asm__("" : "+r"(first_));                                       \
  if (first_) {                                                     \
    n_ = 1;                                                         \
    va_start(ap, first);                                            \
    while (va_arg(ap, char *)) n_++;                                \
    va_end(ap);                                                     \
  }                                                                 \
  char *argv[n_ + 1];                                               \
  argv[0] = (char *)first_;                                         \
  va_start(ap, first);                                              \
  for (int i_ = 1; i_ <= n_; i_++) argv[i_] = va_arg(ap, char *);   \
  after;                                                            \
  va_end(ap)

hc_public __attribute__((weak)) int execl(const char *path, const char *arg, ...) {
  va_list ap;
  LIST_ARGV(arg, ap, argv, (void)0);
  GATED(do_execve(path, argv, environ));
}
hc_public __attribute__((weak)) int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  LIST_ARGV(arg, ap, argv, (void)0);
  GATED(do_execvpe(file, argv, environ));
}
hc_public __attribute__((weak)) int execle(const char *path, const char *arg, ...) {
  va_list ap;
  char *const *envp;
  LIST_ARGV(arg, ap, argv, envp = va_arg(ap, char *const *));
  GATED(do_execve(path, argv, envp));
}

/* syscall(SYS_execve / SYS_execveat), from seccomp_watch.c's syscall. */
long hci_exec_syscall(long n, long a, long b, long c, long d, long e) {
  bool in = exec_enter();
  long r = hci_raw6(n, a, b, c, d, e, 0);
  exec_leave(in);
  return r;
}
