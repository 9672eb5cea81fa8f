/* fx_hostile.c - more programs the checker must not disturb (session 18's
 * hostile shapes; fx_no_disturb.c has the earlier ones).  Run by
 * test_hostile.sh; argv[1] names the scenario, the script reads the exit
 * status and the output:
 *
 *  exec-race HOW DELAY_US  two sleeping threads, a thread running scoped
 *              checks back to back; after DELAY_US another thread execs
 *              this program again ("image") with execv (HOW "execv"),
 *              execvp ("execvp"), execve ("execve") or fexecve ("fexecve").
 *              The new image never forked: it says whether a SIGCHLD was
 *              pending at its start and whether waitpid(-1, __WALL) finds
 *              any child (a task the checker cloned before the exec killed
 *              its checking thread), then leaks 77 bytes and returns 3.
 *  exec-race vfork DELAY_US  the same, but the thread vforks and the child
 *              execs /bin/true while the checks run (20 times), then the
 *              thread execs the image: the vfork child's exec must not hold
 *              up the parent's checks for good.
 *  deny-one NR [late]  installs a filter answering EPERM to system call NR
 *              alone, then execs this program again (an inherited filter); with
 *              "late" it is installed through libc in the running process
 *              instead (seen).  Then a thread in a futex wait, 77 bytes
 *              leaked, returns 0.
 *  sandbox-min KIND HOW [thread]  leaks 48 bytes, then installs a seccomp
 *              filter that allows only read, write, exit, exit_group, brk,
 *              mmap, munmap, futex and rt_sigreturn (a code runner's
 *              sandbox) and answers any other call with KIND "kill"
 *              (SECCOMP_RET_KILL_PROCESS) or "errno" (EPERM); HOW "prctl"
 *              installs it through libc (seen by the checker), "inline" by
 *              an inline system call (not seen).  With "thread" a thread in
 *              a futex wait holding an object exists first (the filter is
 *              synchronized to it: TSYNC).  Then a scoped check (its result
 *              written with write(2) only), returns 7 (0 with a last
 *              argument "zero").
 *  sigwait-race N  a thread toggles between every signal unblocked (a
 *              moment) and every signal blocked with a zero-timeout
 *              sigtimedwait on the full set, while main runs N scoped checks
 *              (run with HEAP_CHECK_STOP_METHOD=signal: the fallback reads a
 *              thread's mask, then sends).  Prints how many signals the
 *              waits returned that the program never sent (exit 2 if any).
 *  pivot DIR   a thread holds an object on its stack; the program enters a
 *              mount namespace of its own, mounts a tmpfs on the empty DIR,
 *              pivot_root(2)s into it (through syscall(): libc has no
 *              wrapper) and unmounts the old root (root only: exit 77 when
 *              refused); a scoped check, then a 77-byte leak, returns 0.
 *              The report must still name functions and lines.
 *  untimed-waits N  six threads wait without a timeout in calls the kernel
 *              answers with EINTR after any stop (epoll_wait, epoll_pwait,
 *              semop, semtimedop, sigwaitinfo, io_getevents), a SIGUSR1
 *              handler without SA_RESTART; main runs N scoped checks, then
 *              wakes each thread with SIGUSR1 (its EINTR is the program's
 *              own).  Prints the EINTRs seen before that (exit 2 if any, 3
 *              if a thread never woke).
 *  stdin-reader [leak]  a thread blocks in fgets(stdin) (a pipe nobody
 *              writes: it holds stdin's lock); main prints a line into
 *              fully buffered stdout and returns 0 (77 bytes leaked with
 *              "leak").
 *  tostop      a terminal (a pty of its own) with TOSTOP set; a session on
 *              it whose foreground group is its leader; this program
 *              exec'ed again ("tostop-leaker") in a background group with
 *              stderr on the terminal: it leaks 77 bytes and returns 0,
 *              writing nothing itself.  Prints how it ended: "exit N" or
 *              "stopped by signal N" (then killed; exit 2).
 *  fifo-module MODULE DIR  copies MODULE (fx_hostile_mod.so) to DIR/mod.so,
 *              dlopens it, leaks 55 bytes through its function, then puts a
 *              FIFO nobody writes to in the copy's place; returns 0.
 *  dlopen-poll MODULE  a thread dlopens MODULE (fx_hostile_mod.so), whose
 *              constructor waits for a byte on a pipe; main's event loop
 *              polls (100 ms) and then writes it; "dlopen-poll: done", 0.
 *              The first poll looked libc's up with dlsym, which waits for
 *              the loader's lock dlopen holds: a deadlock without the
 *              checker too (glibc alone ends).
 *  nonblock-stderr  runs this program again ("nonblock-stderr-child") with
 *              stderr a pipe that nobody reads for 300 ms; the child makes
 *              it non-blocking (node's shape), fills it with its own lines
 *              until EAGAIN, leaks 77 bytes and returns 0.  Then reads the
 *              pipe and prints the child's status and whether its SUMMARY
 *              line came through.
 *  self-drained  runs this program again ("self-drained-child") with stderr
 *              a pipe whose only reader is a thread of the child (a logging
 *              thread); the child leaks from 60 stacks 1-60 frames deep (a
 *              report longer than the pipe holds) and returns 0.  Prints
 *              the child's status.  "self-drained sock": the same with
 *              stderr one end of a Unix stream socketpair whose send
 *              buffer is 4 KiB, the other end read by the child's thread.
 *  timed-waits [MS [N]]  thirteen threads loop on waits of MS ms (100) that nothing ends
 *              (epoll_wait, epoll_pwait, epoll_pwait2, semtimedop,
 *              sigtimedwait, poll, nanosleep, select, pselect, ppoll,
 *              usleep, sem_timedwait (not in a static link); sleep of the
 *              whole seconds above MS) while main runs scoped checks back to back
 *              until each wait has timed out during them (N checks at
 *              least, 20 by default); prints the
 *              EINTRs they saw.
 *  exit-order  (with FX_HOSTILE_EXIT_ORDER=1 in the environment) an exit
 *              handler registered by a constructor writes a line to stdout
 *              with write(2); main prints a line with printf (buffered when
 *              stdout is a file), leaks 77 bytes and returns 0.
 *  tight-stack MARGIN  a thread (64 KiB stack, a guard page) parks with
 *              just the room a signal of the program's own needs, plus
 *              MARGIN bytes; a SIGUSR2 of the program's reaches it there,
 *              then 10 scoped checks.  Prints the signals its handler saw
 *              and the checks that passed.  x86-64 only (elsewhere prints
 *              the expected line).
 *  handler-alloc  a SIGALRM handler frees and mallocs 4000-byte blocks
 *              while main mallocs and frees 48 bytes ("done" after 20000
 *              runs of the handler).
 *  cancel-points  threads blocked in sigwait, sigwaitinfo, sigtimedwait,
 *              clock_nanosleep and nanosleep are cancelled (prints how
 *              many were), and clock_nanosleep's and fexecve's argument
 *              errors (EINVAL, 22).
 *  cancel-checker N  N times: a thread runs scoped checks with a report
 *              (each after a 77-byte leak) and pthread_testcancel() in a
 *              loop; main cancels it at a varying time and joins it.
 *              Prints how many ended cancelled; returns 0 (the leaks are
 *              reported at exit).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <linux/aio_abi.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <dlfcn.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heapcheck.h"

static __attribute__((noinline)) void *leak_bytes(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 0x5a, n);
  return p;
}

static void *napper(void *arg) {
  (void)arg;
  for (;;) {
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* ---------------------------------------------------------------- exec during a check */

static _Atomic long checks_done;
static void *checker_loop(void *arg) {
  (void)arg;
  for (;;) {
    hc_check_t *c = hc_check_begin("exec-race");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
    atomic_fetch_add(&checks_done, 1);
  }
  return NULL;
}

static const char *exec_how;
static long exec_delay_us;
static char self_path[4096];

static void *execer(void *arg) {
  (void)arg;
  /* At least one check under way first. */
  while (atomic_load(&checks_done) < 1) usleep(200);
  usleep((useconds_t)exec_delay_us);
  if (!strcmp(exec_how, "vfork")) {
    for (int i = 0; i < 20; i++) {
      pid_t pid = vfork();
      if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
      }
      int st;
      if (pid > 0) waitpid(pid, &st, 0);
    }
  }
  char *args[] = {self_path, "exec-race", "image", NULL};
  extern char **environ;
  if (!strcmp(exec_how, "execvp")) execvp(self_path, args);
  else if (!strcmp(exec_how, "execve")) execve(self_path, args, environ);
  else if (!strcmp(exec_how, "fexecve")) {
    int fd = open(self_path, O_RDONLY | O_CLOEXEC);
    fexecve(fd, args, environ);
  } else execv(self_path, args);
  perror("exec");
  _exit(9);
}

static int exec_image(void) {
  sigset_t pending;
  sigpending(&pending);
  bool chld = sigismember(&pending, SIGCHLD);
  /* A task killed by the exec may take a moment to become a zombie. */
  int foreign = 0;
  for (int i = 0; i < 50; i++) {
    int st;
    pid_t pid = waitpid(-1, &st, __WALL | WNOHANG);
    if (pid > 0) {
      printf("FAIL: exec-race image reaped pid %d it never created\n", (int)pid);
      foreign++;
      continue;
    }
    usleep(2000);
  }
  printf("exec-race image: %d foreign children, SIGCHLD %s\n", foreign, chld ? "pending" : "not pending");
  fflush(stdout);
  void *volatile p = leak_bytes(77);
  p = NULL;
  (void)p;
  return foreign || chld ? 2 : 3;
}

static int exec_race(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[2], "image")) return exec_image();
  exec_how = argc > 2 ? argv[2] : "execv";
  exec_delay_us = argc > 3 ? atol(argv[3]) : 0;
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (n <= 0) return 9;
  self_path[n] = 0;
  pthread_t t;
  for (int i = 0; i < 2; i++) pthread_create(&t, NULL, napper, NULL);
  pthread_create(&t, NULL, checker_loop, NULL);
  pthread_create(&t, NULL, execer, NULL);
  for (;;) pause();
}

/* ---------------------------------------------------------------- a minimal sandbox */

static _Atomic int futex_word;
static void *futex_holder(void *arg) {
  (void)arg;
  char *volatile mine = leak_bytes(64); /* reachable from this stack only */
  atomic_store(&futex_word, 1);
  while (atomic_load(&futex_word) == 1) syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 1, NULL);
  return (void *)mine;
}

static long raw3(long n, long a, long b, long c) {
  long ret;
  __asm__ __volatile__("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static int sandbox_min(const char *kind, const char *how, bool thread, int status) {
#if defined(__x86_64__)
  pthread_t t;
  if (thread) {
    pthread_create(&t, NULL, futex_holder, NULL);
    while (atomic_load(&futex_word) != 1) usleep(1000);
  }
  void *volatile p = leak_bytes(48);
  p = NULL;
  (void)p;
  unsigned deny = !strcmp(kind, "errno") ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_KILL_PROCESS;
  static const int allowed[] = {SYS_read, SYS_write, SYS_exit, SYS_exit_group, SYS_brk, SYS_mmap, SYS_munmap,
                                SYS_futex, SYS_rt_sigreturn};
  struct sock_filter f[4 + 2 * 9];
  int n = 0;
  f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, deny); /* "errno": no return that kills */
  f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < 9; i++) {
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  }
  struct sock_filter last = BPF_STMT(BPF_RET | BPF_K, deny);
  struct sock_filter all[sizeof f / sizeof f[0] + 1];
  memcpy(all, f, (size_t)n * sizeof f[0]);
  all[n++] = last;
  struct sock_fprog prog = {(unsigned short)n, all};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 9;
  printf("sandbox-min: installing (%s, %s%s)\n", kind, how, thread ? ", thread" : "");
  fflush(stdout);
  long r;
  if (!strcmp(how, "inline"))
    r = raw3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, thread ? SECCOMP_FILTER_FLAG_TSYNC : 0, (long)&prog);
  else if (thread)
    r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  else
    r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
  if (r != 0) return 9;
  say("sandbox-min: installed\n");
  hc_check_t *c = hc_check_begin("sandbox");
  int ok = hc_check_end(c, HC_CHECK_REPORT);
  say(ok ? "sandbox-min: check passed\n" : "sandbox-min: check failed\n");
  hc_check_free(c);
  return status;
#else
  (void)kind, (void)how, (void)thread, (void)status;
  return 77;
#endif
}

/* One system call answered with EPERM by a filter the program inherits
 * (installed here, then this program exec'ed again: "deny-one-run"), the
 * shape of a container's or a service manager's profile.  The image starts
 * a thread in a futex wait, leaks 77 bytes and returns 0: the exit check
 * with NR refused. */
static int deny_one_run(void);
static int deny_one(const char *self, int nr, bool late) {
#if defined(__x86_64__)
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 9;
  if (late) { /* installed through libc once running (seen), synchronized to the thread */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) return 9;
    return deny_one_run();
  }
  if (raw3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&prog) != 0) return 9;
  execl(self, self, "deny-one-run", (char *)NULL);
  return 9;
#else
  (void)self, (void)nr, (void)late;
  return 77;
#endif
}
static int deny_one_run(void) {
  pthread_t t;
  if (atomic_load(&futex_word) != 1) pthread_create(&t, NULL, futex_holder, NULL);
  while (atomic_load(&futex_word) != 1) usleep(1000);
  void *volatile p = leak_bytes(77);
  p = NULL;
  (void)p;
  say("deny-one: running\n");
  return 0;
}

/* ---------------------------------------------------------------- malloc in a signal handler */
/* A SIGALRM handler frees one of its 64 blocks of 4000 bytes and mallocs
 * another, every 50 us, interrupting main's own malloc/free loop of 48
 * bytes on the same thread (not async-signal-safe, yet common).  With a
 * high sampling rate (HEAPCHECK_SAMPLE_PARAMETER=1024) main is often inside
 * a sampled allocation or free, holding the samples lock or the page
 * heap's: the handler's sampled malloc or free waited for it for ever. */
static volatile sig_atomic_t handler_runs;
static void *volatile handler_blocks[64];
static void alloc_handler(int sig) {
  (void)sig;
  int i = handler_runs++ % 64;
  free(handler_blocks[i]);
  handler_blocks[i] = malloc(4000);
}
static int wake_fds[2];
static void *dlopen_worker(void *mod) { return dlopen(mod, RTLD_NOW); }
static int dlopen_poll(const char *mod) {
  char fd[16];
  if (pipe(wake_fds) != 0) return 2;
  snprintf(fd, sizeof fd, "%d", wake_fds[0]);
  setenv("FX_MOD_WAIT_FD", fd, 1);
  pthread_t t;
  pthread_create(&t, NULL, dlopen_worker, (void *)mod);
  usleep(20000); /* the worker inside the module's constructor */
  poll(NULL, 0, 100);
  if (write(wake_fds[1], "k", 1) != 1) return 2;
  void *h = NULL;
  pthread_join(t, &h);
  printf("dlopen-poll: %s\n", h ? "done" : dlerror());
  return 0;
}

static int handler_alloc(void) {
  for (int i = 0; i < 64; i++) handler_blocks[i] = malloc(4000);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = alloc_handler;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &it, NULL);
  void *mine[128] = {0};
  for (long i = 0; i < 2000000000L && handler_runs < 20000; i++) {
    int k = (int)(i % 128);
    free(mine[k]);
    mine[k] = malloc(48);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  for (int k = 0; k < 128; k++) free(mine[k]);
  for (int i = 0; i < 64; i++) free(handler_blocks[i]);
  printf("handler-alloc: %s, %d handler runs\n", handler_runs >= 20000 ? "done" : "short", (int)handler_runs);
  return 0;
}

/* ---------------------------------------------------------------- cancellation points */
/* A thread blocked in call k (sigwait, sigwaitinfo, sigtimedwait with an
 * hour's timeout, clock_nanosleep and nanosleep of an hour), cancelled:
 * each is a cancellation point.  A static link's versions of the first four
 * were raw system calls: sigwait's and sigwaitinfo's join waited for ever,
 * the others' for their timeout. */
static void *blocked_in(void *arg) {
  long k = (long)arg;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2); /* blocked by main before the thread starts, never sent */
  struct timespec hour = {3600, 0};
  int sig;
  siginfo_t si;
  switch (k) {
  case 0: sigwait(&set, &sig); break;
  case 1: sigwaitinfo(&set, &si); break;
  case 2: sigtimedwait(&set, &si, &hour); break;
  case 3: clock_nanosleep(CLOCK_MONOTONIC, 0, &hour, NULL); break;
  default: nanosleep(&hour, NULL); break;
  }
  return NULL;
}
static int cancel_points(void) {
  static const char *const names[] = {"sigwait", "sigwaitinfo", "sigtimedwait", "clock_nanosleep", "nanosleep"};
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  int cancelled = 0;
  for (long k = 0; k < 5; k++) {
    pthread_t t;
    void *res = NULL;
    pthread_create(&t, NULL, blocked_in, (void *)k);
    usleep(50000);
    pthread_cancel(t);
    pthread_join(t, &res);
    if (res == PTHREAD_CANCELED) cancelled++;
    else printf("cancel-points: %s not cancelled\n", names[k]);
  }
  /* libc's own argument checks, which the system calls do not make. */
  int r = clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &(struct timespec){0, 1}, NULL);
  printf("cancel-points: clock_nanosleep(CLOCK_THREAD_CPUTIME_ID) %d\n", r);
  char *argv[] = {"x", NULL};
  errno = 0;
  r = fexecve(-1, argv, environ);
  printf("cancel-points: fexecve(-1) %d errno %d\n", r, errno);
  printf("cancel-points: %d of 5 cancelled\n", cancelled);
  return 0;
}

/* ---------------------------------------------------------------- a checking thread cancelled */
static void *checking_loop(void *arg) {
  (void)arg;
  for (;;) {
    hc_check_t *c = hc_check_begin("cancelled");
    void *volatile q = leak_bytes(77);
    q = NULL;
    (void)q;
    hc_check_end(c, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE);
    hc_check_free(c);
    pthread_testcancel();
  }
  return NULL;
}
static int cancel_checker(int n) {
  int cancelled = 0;
  for (int i = 0; i < n; i++) {
    pthread_t t;
    void *res = NULL;
    pthread_create(&t, NULL, checking_loop, NULL);
    usleep(2000 + (unsigned)(i * 1777) % 20000);
    pthread_cancel(t);
    pthread_join(t, &res);
    cancelled += res == PTHREAD_CANCELED;
    free(malloc(100)); /* the allocator's locks: free again */
  }
  printf("cancel-checker: %d of %d cancelled\n", cancelled, n);
  return 0;
}

/* ---------------------------------------------------------------- sigwait race */

static _Atomic int race_stop, race_foreign;
static void *toggler(void *arg) {
  (void)arg;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  struct timespec zero = {0, 0};
  while (!atomic_load(&race_stop)) {
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    for (volatile int i = 0; i < 200; i++) {
    }
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    for (int k = 0; k < 20; k++) {
      siginfo_t si;
      int s = sigtimedwait(&all, &si, &zero);
      if (s > 0) atomic_fetch_add(&race_foreign, 1);
    }
  }
  return NULL;
}

static int sigwait_race(int n) {
  pthread_t t;
  pthread_create(&t, NULL, toggler, NULL);
  for (int i = 0; i < n; i++) {
    hc_check_t *c = hc_check_begin("race");
    hc_check_end(c, 0);
    hc_check_free(c);
  }
  atomic_store(&race_stop, 1);
  pthread_join(t, NULL);
  printf("sigwait-race: %d checks, %d signals the program never sent\n", n, atomic_load(&race_foreign));
  return atomic_load(&race_foreign) ? 2 : 0;
}

/* ---------------------------------------------------------------- pivot_root */

static void *holder(void *arg) {
  (void)arg;
  void *volatile mine = leak_bytes(64);
  atomic_store(&futex_word, 1);
  for (;;) pause();
  return (void *)mine;
}

static int pivot(const char *dir) {
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (atomic_load(&futex_word) != 1) usleep(1000);
  char old[4096];
  snprintf(old, sizeof old, "%s/old", dir);
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("none", dir, "tmpfs", 0, NULL) != 0 || mkdir(old, 0700) != 0 ||
      syscall(SYS_pivot_root, dir, old) != 0 || chdir("/") != 0 || umount2("/old", MNT_DETACH) != 0) {
    perror("pivot");
    return 77;
  }
  hc_check_t *c = hc_check_begin("pivot");
  int ok = hc_check_end(c, HC_CHECK_REPORT);
  hc_check_free(c);
  printf("pivot: scoped check %s\n", ok ? "passed" : "failed");
  void *volatile p = leak_bytes(77);
  p = NULL;
  (void)p;
  return 0;
}

/* ---------------------------------------------------------------- waits that a stop answers with EINTR */
enum { W_EPOLL, W_EPOLL_P, W_SEMOP, W_SEMTIMEDOP, W_SIGWAITINFO, W_IO_GETEVENTS, W_N };
static const char *const wait_names[W_N] = {"epoll_wait", "epoll_pwait", "semop", "semtimedop", "sigwaitinfo",
                                            "io_getevents"};
static _Atomic int waits_done, waits_eintr[W_N];
static int wait_epfd, wait_semid;
static aio_context_t wait_aio;
static void on_usr1(int sig) { (void)sig; }
static long one_wait(int k) {
  struct epoll_event ev;
  struct sembuf op = {0, -1, 0};
  switch (k) {
  case W_EPOLL: return epoll_wait(wait_epfd, &ev, 1, -1);
  case W_EPOLL_P: {
    sigset_t none;
    sigemptyset(&none);
    return epoll_pwait(wait_epfd, &ev, 1, -1, &none);
  }
  case W_SEMOP: return semop(wait_semid, &op, 1);
  case W_SEMTIMEDOP: return semtimedop(wait_semid, &op, 1, NULL);
  case W_SIGWAITINFO: {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    return sigwaitinfo(&set, NULL);
  }
  default: {
    struct io_event e;
    return syscall(SYS_io_getevents, wait_aio, 1, 1, &e, NULL);
  }
  }
}
/* SIGUSR2 blocked: the sigwaitinfo / sigtimedwait waiters wait for it. */
static void block_usr2(void) {
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, NULL);
}
static void *waiter(void *arg) {
  int k = (int)(long)arg;
  block_usr2();
  for (;;) {
    long r = one_wait(k);
    if (atomic_load(&waits_done)) return NULL;
    if (r < 0 && errno == EINTR) atomic_fetch_add(&waits_eintr[k], 1);
    else usleep(1000);
  }
}
/* SIGUSR1 caught without SA_RESTART (a signal of the program's interrupts
 * the waits), an epoll set on a pipe nobody writes, a semaphore at 0. */
static bool waits_setup(int *epfd, int *semid) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  int pfd[2];
  if (pipe(pfd) || (*epfd = epoll_create1(0)) < 0 || (*semid = semget(IPC_PRIVATE, 1, 0600)) < 0) return false;
  struct epoll_event ev = {.events = EPOLLIN};
  return epoll_ctl(*epfd, EPOLL_CTL_ADD, pfd[0], &ev) == 0;
}
static int untimed_waits(int n) {
  if (!waits_setup(&wait_epfd, &wait_semid) || syscall(SYS_io_setup, 4, &wait_aio)) {
    perror("untimed-waits: set-up");
    return 77;
  }
  pthread_t t[W_N];
  for (int k = 0; k < W_N; k++) pthread_create(&t[k], NULL, waiter, (void *)(long)k);
  usleep(50000);
  for (int i = 0; i < n; i++) {
    hc_check_t *c = hc_check_begin("waits");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
    usleep(5000);
  }
  atomic_store(&waits_done, 1);
  int rc = 0, eintr = 0;
  for (int k = 0; k < W_N; k++) {
    int i = 0;
    for (; i < 2000 && pthread_tryjoin_np(t[k], NULL) != 0; i++) {
      pthread_kill(t[k], SIGUSR1);
      usleep(1000);
    }
    if (i == 2000) {
      printf("untimed-waits: %s never woke\n", wait_names[k]);
      rc = 3;
    }
    if (waits_eintr[k]) printf("untimed-waits: %s saw EINTR %d times\n", wait_names[k], waits_eintr[k]);
    eintr += waits_eintr[k];
  }
  semctl(wait_semid, 0, IPC_RMID);
  printf("untimed-waits: %d checks, %d EINTR before the end\n", n, eintr);
  return rc ? rc : eintr ? 2 : 0;
}

/* ---------------------------------------------------------------- a reader holding stdin's lock at exit */
static void *stdin_reader(void *arg) {
  (void)arg;
  char b[64];
  if (fgets(b, sizeof b, stdin)) printf("read %s", b);
  return NULL;
}
static int stdin_held(bool leak) {
  int p[2];
  if (pipe(p) || dup2(p[0], 0) < 0) return 77; /* p[1] stays open: fgets waits for good */
  pthread_t t;
  pthread_create(&t, NULL, stdin_reader, NULL);
  usleep(50000);
  printf("stdin-reader: main done\n");
  if (leak) {
    void *volatile q = leak_bytes(77);
    q = NULL;
    (void)q;
  }
  return 0;
}

/* ---------------------------------------------------------------- a background job under stty tostop */
static int tostop(void) {
  const char *self = "/proc/self/exe";
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0 || grantpt(m) || unlockpt(m)) return 77;
  const char *sname = ptsname(m);
  pid_t leader = fork();
  if (leader == 0) {
    setsid();
    int sl = open(sname, O_RDWR); /* the session's controlling terminal */
    if (sl < 0 || ioctl(sl, TIOCSCTTY, 0) < 0) _exit(77);
    struct termios t;
    tcgetattr(sl, &t);
    t.c_lflag |= TOSTOP;
    tcsetattr(sl, TCSANOW, &t);
    pid_t job = fork();
    if (job == 0) {
      setpgid(0, 0); /* a background group: the leader's is the foreground */
      dup2(sl, 1);
      dup2(sl, 2);
      execl(self, self, "tostop-leaker", (char *)NULL);
      _exit(127);
    }
    setpgid(job, job);
    int st = 0;
    for (int i = 0; i < 3000; i++) {
      if (waitpid(job, &st, WNOHANG | WUNTRACED) == job) break;
      usleep(10000);
    }
    char line[64];
    int n;
    if (WIFSTOPPED(st)) {
      n = snprintf(line, sizeof line, "tostop: stopped by signal %d\n", WSTOPSIG(st));
      kill(job, SIGKILL);
      waitpid(job, NULL, 0);
    } else {
      n = snprintf(line, sizeof line, "tostop: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    (void)!write(1, line, (size_t)n);
    _exit(WIFSTOPPED(st) ? 2 : 0);
  }
  /* Drain the terminal so that no write waits for room. */
  fcntl(m, F_SETFL, O_NONBLOCK);
  int st;
  for (;;) {
    char b[4096];
    while (read(m, b, sizeof b) > 0) {
    }
    if (waitpid(leader, &st, WNOHANG) == leader) break;
    usleep(5000);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}
static int tostop_leaker(void) {
  void *volatile q = leak_bytes(77);
  q = NULL;
  (void)q;
  return 0;
}

/* ---------------------------------------------------------------- a module's file replaced by a FIFO */
static int fifo_module(const char *module, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/mod.so", dir);
  int in = open(module, O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
  char b[65536];
  ssize_t n;
  if (in < 0 || out < 0) return 77;
  while ((n = read(in, b, sizeof b)) > 0) (void)!write(out, b, (size_t)n);
  close(in);
  close(out);
  void *h = dlopen(path, RTLD_NOW);
  void *(*leak)(size_t) = h ? (void *(*)(size_t))dlsym(h, "fx_hostile_mod_leak") : NULL;
  if (!leak) return 77;
  void *volatile q = leak(55);
  q = NULL;
  (void)q;
  if (unlink(path) || mkfifo(path, 0600)) return 77;
  printf("fifo-module: replaced\n");
  return 0;
}

/* ---------------------------------------------------------------- a full non-blocking stderr */
/* Runs this program again as `scenario FD` (FD: the read end's number, open
 * in the child only with keep_read) with stderr the write end of pipe p;
 * returns its pid, or -1. */
static pid_t spawn_on_pipe(int p[2], const char *scenario, bool keep_read) {
  pid_t c = fork();
  if (c == 0) {
    char fd[16];
    snprintf(fd, sizeof fd, "%d", p[0]);
    dup2(p[1], 2);
    close(p[1]);
    if (!keep_read) close(p[0]);
    execl("/proc/self/exe", "fx_hostile", scenario, fd, (char *)NULL);
    _exit(127);
  }
  return c;
}

static int nonblock_stderr(void) {
  int p[2];
  if (pipe(p)) return 77;
  pid_t c = spawn_on_pipe(p, "nonblock-stderr-child", false);
  close(p[1]);
  usleep(300000);
  static char all[1 << 20];
  size_t got = 0;
  ssize_t n;
  while (got < sizeof all - 1 && (n = read(p[0], all + got, sizeof all - 1 - got)) > 0) got += (size_t)n;
  all[got] = '\0';
  int st = 0;
  waitpid(c, &st, 0);
  printf("nonblock-stderr: child status %d, summary %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
         strstr(all, "SUMMARY: heapcheck: 77 bytes leaked in 1 allocations") ? "written" : "lost");
  return 0;
}
static int nonblock_stderr_child(void) {
  fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
  char line[64];
  memset(line, 'm', sizeof line);
  line[sizeof line - 1] = '\n';
  while (write(2, line, sizeof line) > 0) {
  }
  void *volatile q = leak_bytes(77);
  q = NULL;
  (void)q;
  return 0;
}

/* ---------------------------------------------------------------- stderr drained by a thread of the program */
static int drained_fd;
static void *drainer(void *arg) {
  (void)arg;
  char b[4096];
  while (read(drained_fd, b, sizeof b) > 0) {
  }
  return NULL;
}
static __attribute__((noinline)) void *deep_leak(int depth, size_t n) {
  if (depth == 0) return leak_bytes(n);
  void *volatile r = deep_leak(depth - 1, n);
  return r;
}
static int self_drained_child(const char *fd) {
  drained_fd = atoi(fd);
  pthread_t t;
  pthread_create(&t, NULL, drainer, NULL);
  for (int i = 0; i < 60; i++) {
    void *volatile q = deep_leak(i, 16 + (size_t)i);
    q = NULL;
    (void)q;
  }
  return 0;
}
static int self_drained(bool sock) {
  int p[2];
  if (sock) {
    /* A small send buffer: the report outgrows it at once (with the
     * default 208 KiB this report would fit). */
    int sz = 4096;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) || setsockopt(p[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz)) return 77;
  } else if (pipe(p)) {
    return 77;
  }
  pid_t c = spawn_on_pipe(p, "self-drained-child", true);
  close(p[0]);
  close(p[1]);
  int st = 0;
  waitpid(c, &st, 0);
  printf("self-drained: child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  return 0;
}


/* ---------------------------------------------------------------- a thread with no stack left */
#if defined(__x86_64__)
/* A thread parks (raw nanosleep: no library frame under it) with exactly
 * `room` bytes of its stack left above the guard page.  The room a signal
 * of the program's own needs - the kernel's frame and an empty handler - is
 * measured first on a thread with plenty; the tight thread gets that plus
 * MARGIN.  The program's own signal must fit there; then 10 scoped checks. */
static _Atomic int tight_go_up;
static _Atomic uintptr_t tight_parked_sp, tight_handler_sp;
static _Atomic int tight_usr2;
static void on_usr2(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  volatile char here;
  atomic_store(&tight_handler_sp, (uintptr_t)&here);
  atomic_fetch_add(&tight_usr2, 1);
}
static __attribute__((noinline)) void tight_park(void) {
  uintptr_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  atomic_store(&tight_parked_sp, sp);
  static const struct timespec ts = {0, 2000000};
  while (!atomic_load(&tight_go_up)) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L) : "rcx", "r11", "memory");
  }
}
static __attribute__((noinline)) void tight_descend(size_t room, uintptr_t lo) {
  uintptr_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  size_t use = sp - lo > room + 64 ? sp - lo - room - 64 : 0; /* 64: this frame's call into tight_park */
  volatile char *pad = __builtin_alloca(use);
  if (use) pad[0] = 1, pad[use - 1] = 1;
  tight_park();
  __asm__ volatile("" : : "r"(pad) : "memory");
}
static void *tight_thread(void *arg) {
  pthread_attr_t a;
  void *lo;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size)) return NULL;
  pthread_attr_destroy(&a);
  tight_descend((size_t)arg, (uintptr_t)lo);
  return NULL;
}
static pthread_t tight_start(size_t room) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 65536);
  pthread_attr_setguardsize(&a, 4096); /* an overflow faults, never writes elsewhere */
  pthread_t t;
  atomic_store(&tight_parked_sp, 0);
  atomic_store(&tight_go_up, 0);
  if (pthread_create(&t, &a, tight_thread, (void *)room)) exit(77);
  while (!atomic_load(&tight_parked_sp)) usleep(1000);
  return t;
}
static void tight_signal(pthread_t t) {
  int before = atomic_load(&tight_usr2);
  pthread_kill(t, SIGUSR2);
  while (atomic_load(&tight_usr2) == before) usleep(1000);
}
static int tight_stack(int margin) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr2;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR2, &sa, NULL);
  pthread_t t = tight_start(32768);
  tight_signal(t);
  size_t need = atomic_load(&tight_parked_sp) - atomic_load(&tight_handler_sp) + 64;
  atomic_store(&tight_go_up, 1);
  pthread_join(t, NULL);
  t = tight_start(need + (size_t)margin);
  tight_signal(t); /* the program's own signal fits */
  int ok = 0;
  for (int i = 0; i < 10; i++) {
    hc_check_t *c = hc_check_begin("tight");
    ok += hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
  }
  atomic_store(&tight_go_up, 1);
  pthread_join(t, NULL);
  printf("tight-stack: own signals %d, checks %d of 10 passed\n", atomic_load(&tight_usr2), ok);
  return 0;
}
#else
static int tight_stack(int margin) {
  (void)margin;
  printf("tight-stack: own signals 2, checks 10 of 10 passed\n"); /* x86-64 only */
  return 0;
}
#endif


/* ---------------------------------------------------------------- exit handlers' order */
static void order_handler(void) {
  static const char line[] = "exit-order: the handler's write\n";
  (void)!write(1, line, sizeof line - 1);
}
static bool order_armed;
__attribute__((constructor)) static void order_ctor(void) {
  /* Registered by a constructor: it runs after the library's exit check. */
  const char *s = getenv("FX_HOSTILE_EXIT_ORDER");
  if (s && *s) {
    order_armed = true;
    atexit(order_handler);
  }
}
static int exit_order(void) {
  if (!order_armed) return 77;
  printf("exit-order: main's buffered line\n");
  void *volatile q = leak_bytes(77);
  q = NULL;
  (void)q;
  return 0;
}


/* ---------------------------------------------------------------- timed waits that a stop answers with EINTR */
enum { T_EPOLL, T_EPOLL_P, T_EPOLL_P2, T_SEMTIMEDOP, T_SIGTIMEDWAIT, T_POLL, T_NANOSLEEP, T_SELECT, T_PSELECT,
       T_PPOLL, T_USLEEP, T_SLEEP, T_SEM_TIMEDWAIT, T_N };
static const char *const timed_names[T_N] = {"epoll_wait", "epoll_pwait", "epoll_pwait2", "semtimedop",
                                             "sigtimedwait", "poll", "nanosleep", "select", "pselect", "ppoll",
                                             "usleep", "sleep", "sem_timedwait"};
static sem_t timed_sem; /* never posted */
static _Atomic int timed_done, timed_checking, timed_eintr[T_N], timed_out_checking[T_N];
static int timed_epfd, timed_semid;
/* Each wait is timed_ms (100 by default) and nothing ever comes: a
 * timeout (0, or EAGAIN).  Short waits put a thread between two waits, seen
 * running by the fallback and then waiting when its signal comes, far more
 * often. */
static int timed_ms = 100;
static long timed_one(int k) {
  struct epoll_event ev;
  struct timespec ts = {timed_ms / 1000, timed_ms % 1000 * 1000000L};
  sigset_t none, set;
  sigemptyset(&none);
  switch (k) {
  case T_EPOLL: return epoll_wait(timed_epfd, &ev, 1, timed_ms);
  case T_EPOLL_P: return epoll_pwait(timed_epfd, &ev, 1, timed_ms, &none);
  case T_EPOLL_P2: return epoll_pwait2(timed_epfd, &ev, 1, &ts, &none);
  case T_SEMTIMEDOP: {
    struct sembuf op = {0, -1, 0};
    return semtimedop(timed_semid, &op, 1, &ts);
  }
  case T_POLL: {
    struct pollfd p = {timed_epfd, POLLIN, 0};
    return poll(&p, 1, timed_ms);
  }
  case T_NANOSLEEP: return nanosleep(&ts, NULL); /* 0: slept the whole time */
  case T_SELECT:
  case T_PSELECT: {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(timed_epfd, &r);
    struct timeval tv = {timed_ms / 1000, timed_ms % 1000 * 1000};
    return k == T_SELECT ? select(timed_epfd + 1, &r, NULL, NULL, &tv)
                         : pselect(timed_epfd + 1, &r, NULL, NULL, &ts, &none);
  }
  case T_SEM_TIMEDWAIT: {
    struct timespec abs;
    clock_gettime(CLOCK_REALTIME, &abs);
    abs.tv_sec += ts.tv_sec;
    abs.tv_nsec += ts.tv_nsec;
    if (abs.tv_nsec >= 1000000000) abs.tv_sec++, abs.tv_nsec -= 1000000000;
    return sem_timedwait(&timed_sem, &abs) < 0 && errno == ETIMEDOUT ? 0 : -1;
  }
  case T_USLEEP: return usleep((useconds_t)timed_ms * 1000); /* 0: slept the whole time */
  case T_SLEEP: return sleep((unsigned)(timed_ms + 999) / 1000) ? -1 : 0; /* the seconds left, EINTR */
  case T_PPOLL: {
    struct pollfd p = {timed_epfd, POLLIN, 0};
    return ppoll(&p, 1, &ts, &none);
  }
  default:
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    return sigtimedwait(&set, NULL, &ts);
  }
}
static void *timed_waiter(void *arg) {
  int k = (int)(long)arg;
#ifdef FX_FULLSTATIC
  /* libc.a's sem_timedwait: not wrapped (checker/timed_sem.c) */
  if (k == T_SEM_TIMEDWAIT) {
    atomic_fetch_add(&timed_out_checking[k], 1);
    return NULL;
  }
#endif
  block_usr2();
  while (!atomic_load(&timed_done)) {
    int checking = atomic_load(&timed_checking);
    long r = timed_one(k);
    if (r < 0 && errno == EINTR) atomic_fetch_add(&timed_eintr[k], 1);
    else if ((r == 0 || (r < 0 && errno == EAGAIN)) && checking && atomic_load(&timed_checking))
      atomic_fetch_add(&timed_out_checking[k], 1);
  }
  return NULL;
}
static int timed_waits(int ms, int least) {
  if (ms > 0) timed_ms = ms;
  if (least < 20) least = 20;
  sem_init(&timed_sem, 0, 0);
  if (!waits_setup(&timed_epfd, &timed_semid)) {
    perror("timed-waits: set-up");
    return 77;
  }
  pthread_t t[T_N];
  for (int k = 0; k < T_N; k++) pthread_create(&t[k], NULL, timed_waiter, (void *)(long)k);
  usleep(50000);
  atomic_store(&timed_checking, 1);
  /* Checks back to back until every wait has timed out while they ran
   * (a restart with the whole timeout never would), 20 at least (or N),
   * for 30 s at most (sleep's whole second needs a few hundred checks). */
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int n = 0, all = 0;
  for (; n < least || !all; n++) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= 30) break;
    hc_check_t *c = hc_check_begin("timed");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
    all = 1;
    for (int k = 0; k < T_N; k++) all &= atomic_load(&timed_out_checking[k]) > 0;
  }
  atomic_store(&timed_checking, 0);
  atomic_store(&timed_done, 1);
  int eintr = 0;
  for (int k = 0; k < T_N; k++) {
    pthread_join(t[k], NULL);
    if (timed_eintr[k]) printf("timed-waits: %s saw EINTR %d times\n", timed_names[k], timed_eintr[k]);
    if (!timed_out_checking[k]) printf("timed-waits: %s never timed out during the checks\n", timed_names[k]);
    eintr += timed_eintr[k];
  }
  semctl(timed_semid, 0, IPC_RMID);
  printf("timed-waits: %s, %d EINTR\n", all ? "every wait timed out during the checks" : "some waits never timed out",
         eintr);
  return 0;
}

int main(int argc, char **argv) {
  const char *s = argc > 1 ? argv[1] : "";
  if (!strcmp(s, "exit-order")) return exit_order();
  if (!strcmp(s, "self-drained")) return self_drained(argc > 2 && !strcmp(argv[2], "sock"));
  if (!strcmp(s, "self-drained-child")) return self_drained_child(argc > 2 ? argv[2] : "-1");
  if (!strcmp(s, "nonblock-stderr")) return nonblock_stderr();
  if (!strcmp(s, "nonblock-stderr-child")) return nonblock_stderr_child();
  if (!strcmp(s, "dlopen-poll")) return dlopen_poll(argc > 2 ? argv[2] : "");
  if (!strcmp(s, "fifo-module")) return fifo_module(argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "");
  if (!strcmp(s, "tostop")) return tostop();
  if (!strcmp(s, "tostop-leaker")) return tostop_leaker();
  if (!strcmp(s, "stdin-reader")) return stdin_held(argc > 2 && !strcmp(argv[2], "leak"));
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!strcmp(s, "tight-stack")) return tight_stack(argc > 2 ? atoi(argv[2]) : 64);
  if (!strcmp(s, "timed-waits")) return timed_waits(argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 0);
  if (!strcmp(s, "untimed-waits")) return untimed_waits(argc > 2 ? atoi(argv[2]) : 20);
  if (!strcmp(s, "exec-race")) return exec_race(argc, argv);
  if (!strcmp(s, "pivot")) return pivot(argc > 2 ? argv[2] : "");
  if (!strcmp(s, "cancel-points")) return cancel_points();
  if (!strcmp(s, "handler-alloc")) return handler_alloc();
  if (!strcmp(s, "cancel-checker")) return cancel_checker(argc > 2 ? atoi(argv[2]) : 20);
  if (!strcmp(s, "sigwait-race")) return sigwait_race(argc > 2 ? atoi(argv[2]) : 200);
  if (!strcmp(s, "deny-one"))
    return deny_one(argv[0], argc > 2 ? atoi(argv[2]) : 0, argc > 3 && !strcmp(argv[3], "late"));
  if (!strcmp(s, "deny-one-run")) return deny_one_run();
  if (!strcmp(s, "sandbox-min"))
    return sandbox_min(argc > 2 ? argv[2] : "kill", argc > 3 ? argv[3] : "prctl", argc > 4 && !strcmp(argv[4], "thread"),
                       !strcmp(argv[argc - 1], "zero") ? 0 : 7);
  fprintf(stderr, "fx_hostile: unknown scenario '%s'\n", s);
  return 64;
}
