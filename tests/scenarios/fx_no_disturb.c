/* fx_no_disturb.c - the checker must not disturb the program it checks
 * (issue 9 points 1 and 7).  Run by test_no_disturb.sh; argv[1] names the
 * scenario, the script reads the exit status and the report:
 *
 *  stress      50 threads allocate and block in sleep, nanosleep, poll,
 *              epoll_wait, select, sigsuspend, recv with a timeout,
 *              sigtimedwait, pause, read, cond waits, while main runs 20
 *              scoped checks; exits 0 with the threads still blocked (the
 *              exit check must stop them and find their objects).  Prints the
 *              EINTR count of every call; exits 2 when one the kernel restarts
 *              after a stop saw EINTR, or when one of the three it does not
 *              (epoll_wait, SO_RCVTIMEO recv, sigtimedwait) saw more than one
 *              per check.
 *  sigwait [signalfd]  a thread in sigwaitinfo() (or reading a signalfd)
 *              on a full set gets SIGUSR1 sent by main after checks, and
 *              nothing else (exit 2 otherwise).
 *  handler     the program's handler for the stop signal (SIGRTMAX-3) and
 *              its SIG_IGN for SIGRTMAX-4 survive checks (run with either
 *              HEAP_CHECK_STOP_SIGNAL); the handler still gets raise().
 *  pause-exit  main sits in pause(), a worker calls exit(3) (argument
 *              "leak": after leaking 3 objects; "leak0": leaks, then exit(0)).
 *  few         4 sleeping threads, 3 scoped checks, then a leak at exit
 *              (run under strace/gdb, or with "seccomp": a filter that makes
 *              ptrace fail with EPERM, or "nodump": PR_SET_DUMPABLE 0, which
 *              refuses ptrace to a helper without CAP_SYS_PTRACE).
 *  blocked     a thread that blocks every signal keeps an object on its
 *              stack; main returns 0 (ptrace: it stops, no leak; signal
 *              fallback: it cannot be stopped, the check fails).
 *  tracer      the program ptraces a child of its own (PTRACE_TRACEME) from a
 *              thread while main runs checks; that thread's waitpid() sees
 *              the child's stops and exit, never the checker's helper.
 *  rlimit-as   200000 live objects, then RLIMIT_AS at the current size.
 *  rlimit-margin as|data MIB  the same objects and a 48-byte leak, then
 *              RLIMIT_AS or RLIMIT_DATA at the size in use + MIB MiB.
 *  fd-exhaust  a thread keeps an object only on its stack; every descriptor
 *              is used up; then the exit check.
 *  unshare-pid a thread keeps an object on its stack; main calls
 *              unshare(CLONE_NEWPID) (root; exit 77 when refused), runs a
 *              scoped check, then forks twice: the first child is the new
 *              namespace's init and must be ours, not the checker's (after
 *              its init exited a namespace takes no process: ENOMEM).
 *  chroot DIR [drop]  a thread keeps an object on its stack; main
 *              chroots into the empty DIR (root; exit 77 when refused) and,
 *              with "drop", takes uid and gid 65534 (a daemon's privilege
 *              separation: no /proc in view, not dumpable); returns 0.
 *              HOW "leak" or "drop-leak": leaks 48 bytes after the chroot
 *              (the report must still name functions and lines).
 *  userfaultfd two ranges registered with userfaultfd (missing pages are
 *              filled by a thread of the program): a mapping of its own and
 *              whole pages inside a 2 MiB malloc block; each holds the only
 *              pointers to two objects on filled pages, its other pages were
 *              never touched.  A scoped check, then returns 0 (exit 77 when
 *              userfaultfd is refused).  A read of an untouched page waits
 *              for the filling thread, which the check has stopped.
 *  userfaultfd-minor [shared]  a memfd's second view (private, or shared
 *              and registered with hc_register_root_region) registered with
 *              userfaultfd in minor mode, its faults served by a thread of
 *              the program (QEMU's postcopy shape): the memfd's pages are in
 *              the page cache, written through a first view now unmapped,
 *              and a read of one through the second view waits for that
 *              thread, stopped by the check.  An object whose only pointer
 *              is in such a page is a leak (the file's content, never
 *              written through this view); one whose pointer was written
 *              through the view is not.  A scoped check that must find
 *              exactly the first, then returns 0 (77: refused here).
 *  guard-region  guard pages (madvise MADV_GUARD_INSTALL, Linux 6.13: no
 *              mapping of their own, so the maps show nothing) inside a
 *              live 256 KiB block, an 8 KiB one, and a page-aligned array of
 *              globals, each with the only pointer to an object on the
 *              page after its guard; leaks 48 bytes and returns 0 (77:
 *              refused here).  A read of a guard page is a SIGSEGV.
 *  kvm         a KVM virtual machine whose vCPU runs once (a hlt): from
 *              Linux 6.13 that starts KVM's kvm-nx-lpage-re worker, a
 *              vhost_task thread of the process that never runs user code
 *              (ptrace stops it with every register 0); leaks 48 bytes and
 *              returns 0 (77: no /dev/kvm here).
 *  timer-slack a timer slack of 10 s (PR_SET_TIMERSLACK, systemd's
 *              TimerSlackNSec=) inherited by 4 threads blocked in read();
 *              3 scoped checks, then leaks 48 bytes and returns 0.  The
 *              slack stretched every timed wait of a check: 10 s a check
 *              (the signal fallback's stop timed out: "could not
 *              complete").  The program itself makes no timed wait.
 *  shared-root-fork  a MAP_SHARED anonymous region registered as a root
 *              holds the only pointers to two objects; a fork child runs a
 *              scoped check (the region is in its page tables only once
 *              touched: reading it mapped-only gave false leaks) and exits
 *              with the leaked objects' count; prints it, returns 0.
 *  exit-race   a joined thread leaks 48 bytes (on a stack unmapped after
 *              the join), then 6 threads call exit(0) together while main
 *              sits in pause().
 *  errno [exit] errno survives a scoped check, mallocs that dump a heap
 *              profile and the exit check (prints what each saw; "exit":
 *              the exit check alone)
 *  exit-join   a joined thread leaks 48 bytes (as in exit-race); main
 *              calls exit(0), whose first handler (the program's) joins a
 *              thread that calls exit(5) once that handler runs: the second
 *              exit ends the process (glibc before 2.41), status 5.
 *              With "ctor": no leak; a constructor registered that
 *              handler (before the library's): it runs after the exit check
 *              and joins a thread that calls exit(5) then (the check is
 *              taken), status 5 (it waited for ever).
 *  pthread-exit-race  main leaks 33 bytes (through a helper that fills
 *              them), starts 6 threads that call exit(6) together and calls
 *              pthread_exit (status 6; the check may find main still in
 *              pthread_create or pthread_exit, over a stale copy; it waits
 *              for a thread it finds inside pthread_exit to end).
 *  exiting-cleanup  a thread calls pthread_exit; its cleanup handler keeps
 *              the only pointer to 33 bytes in its frame while it allocates
 *              and frees 10000 blocks of 300 KiB (tens of ms; each takes the
 *              page heap's lock, which the exit check holds), then drops it;
 *              main calls exit(0) as the handler starts.  The check finds the thread
 *              inside pthread_exit, waits for its end, and reports the 33
 *              bytes (status 1).
 *  sandbox     leaks 48 bytes, then installs a seccomp filter (through
 *              prctl) that lists what the rest of the program needs and kills
 *              the process at any other system call (sshd's pre-auth child),
 *              then allocates 200 KiB deeper on the stack; returns 0.
 *  filtered KIND [inline] PROG ARGS...  installs a seccomp filter the
 *              checker does not see: KIND kill-ptrace (SIGSYS for ptrace,
 *              what systemd's SystemCallFilter=@system-service does),
 *              kill-mincore, trap-mincore (SIGSYS to a handler, which says
 *              "filtered: handler ran" if it ever runs), errno-ptrace, or
 *              docker (EPERM for unshare, keyctl, add_key); then execs
 *              PROG ARGS (an inherited filter) or, with "inline", installs
 *              it by an inline system call and runs "few" itself.
 *  landlock    a thread keeps an object on its stack; a Landlock domain
 *              forbids reading any file or directory (exit 77 where
 *              Landlock is missing); then a 48-byte leak, returns 0: the
 *              report must still name functions (the files are out of reach).
 *  wall-reaper HOW  the program reaps every child it has, clone children
 *              too (__WALL), while main forks short-lived children between
 *              30 checks (scoped ones and __lsan_do_recoverable_leak_check),
 *              then leaks 48 bytes and returns 0 with the reaper still
 *              running through the exit check.  HOW: "loop" (three threads
 *              poll waitpid(-1, __WALL | WNOHANG)), "waitid" (the same with
 *              waitid(P_ALL, WEXITED | WNOHANG | __WALL)) or "sigchld" (a
 *              SIGCHLD handler loops on waitpid(-1, __WALL | WNOHANG)).  A
 *              pid the program never forked (a task of the checker's) is
 *              said at once ("FAIL: reaped pid N"), and main exits 2.
 *  small-stack DIR  a thread with a PTHREAD_STACK_MIN (16 KiB) stack runs a
 *              scoped check that finds its 100-byte leak, writes a heap
 *              profile to DIR/small (sampling every allocation: each malloc
 *              may dump), leaks 3 objects and calls exit(0): every check,
 *              dump and report runs on that thread (they overflowed it).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heapcheck.h"

enum { C_SLEEP, C_NANOSLEEP, C_POLL, C_SELECT, C_SIGSUSPEND, C_PAUSE, C_READ, C_COND, C_RECV, C_EPOLL,
       C_RECV_TIMEO, C_SIGTIMEDWAIT, NCALLS };
#define FIRST_NOT_RESTARTED C_EPOLL
static const char *const call_name[NCALLS] = {"sleep", "nanosleep", "poll", "select", "sigsuspend", "pause",
                                              "read", "cond_wait", "recv", "epoll_wait", "recv_timeo",
                                              "sigtimedwait"};
#define NTHREADS 50
#define NCHECKS 20

static _Atomic int eintr[NCALLS], calls[NCALLS], started, quit;
static int pipefd[2], sock[NTHREADS][2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void on_usr2(int sig) { (void)sig; }

static void *blocker(void *arg) {
  int k = (int)(intptr_t)arg, c = k % NCALLS;
  /* A live object reachable only from this stack. */
  char *volatile mine = malloc(64 + (size_t)k);
  strcpy(mine, "alive");
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  if (c == C_SIGTIMEDWAIT) pthread_sigmask(SIG_BLOCK, &usr2, NULL);
  if (c == C_RECV_TIMEO) {
    struct timeval tv = {0, 200000};
    setsockopt(sock[k][0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  atomic_fetch_add(&started, 1);
  while (!atomic_load(&quit)) {
    free(malloc(32)); /* allocate between waits */
    int r = 0;
    char b;
    errno = 0;
    switch (c) {
    case C_SLEEP: r = sleep(1) ? -1 : 0; if (r) errno = EINTR; break;
    case C_NANOSLEEP: { struct timespec ts = {0, 300000000}; r = nanosleep(&ts, NULL); break; }
    case C_POLL: r = poll(NULL, 0, 300); break;
    case C_SELECT: { struct timeval tv = {0, 300000}; r = select(0, NULL, NULL, NULL, &tv); break; }
    case C_SIGSUSPEND: { sigset_t none; sigemptyset(&none); r = sigsuspend(&none); break; }
    case C_PAUSE: r = pause(); break;
    case C_READ: r = (int)read(pipefd[0], &b, 1); break;
    case C_COND: {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 300000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_mutex_lock(&mu);
      int e = pthread_cond_timedwait(&cv, &mu, &ts);
      pthread_mutex_unlock(&mu);
      if (e == EINTR) r = -1, errno = EINTR;
      break;
    }
    case C_RECV: r = (int)recv(sock[k][0], &b, 1, 0); break;
    case C_EPOLL: { struct epoll_event ev; r = epoll_wait(ep, &ev, 1, 300); break; }
    case C_RECV_TIMEO: r = (int)recv(sock[k][0], &b, 1, 0); if (r < 0 && errno == EAGAIN) r = 0; break;
    case C_SIGTIMEDWAIT: {
      struct timespec ts = {0, 300000000};
      r = sigtimedwait(&usr2, NULL, &ts);
      if (r < 0 && errno == EAGAIN) r = 0;
      break;
    }
    }
    /* At quit, main wakes us with SIGUSR2: that EINTR is ours. */
    if (r < 0 && errno == EINTR && !atomic_load(&quit)) atomic_fetch_add(&eintr[c], 1);
    atomic_fetch_add(&calls[c], 1);
  }
  if (strcmp(mine, "alive") != 0) abort();
  return NULL;
}

static int stress(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr2; /* no SA_RESTART: only a real signal interrupts */
  sigaction(SIGUSR2, &sa, NULL);
  if (pipe(pipefd) != 0) return 9;
  pthread_t t[NTHREADS];
  for (int k = 0; k < NTHREADS; k++) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock[k]) != 0) return 9;
    pthread_create(&t[k], NULL, blocker, (void *)(intptr_t)k);
  }
  while (atomic_load(&started) < NTHREADS) usleep(1000);
  usleep(100000);
  int failed_checks = 0;
  for (int i = 0; i < NCHECKS; i++) {
    hc_check_t *c = hc_check_begin("stress");
    void *p = malloc(100);
    free(p);
    if (!hc_check_end(c, HC_CHECK_REPORT)) failed_checks++;
    hc_check_free(c);
    usleep(20000);
  }
  int bad = 0;
  for (int c = 0; c < NCALLS; c++) {
    int n = atomic_load(&eintr[c]);
    printf("%-12s calls %4d EINTR %d\n", call_name[c], atomic_load(&calls[c]), n);
    /* Not restarted by the kernel: at most one EINTR per thread and check. */
    int threads = NTHREADS / NCALLS + (c < NTHREADS % NCALLS);
    int allowed = c < FIRST_NOT_RESTARTED ? 0 : NCHECKS * threads;
    if (n > allowed) {
      printf("FAIL: %s returned EINTR %d times (allowed %d)\n", call_name[c], n, allowed);
      bad = 1;
    }
  }
  printf("scoped checks failed: %d\n", failed_checks);
  fflush(stdout);
  /* Exit with every thread still blocked: the exit check must stop them all. */
  return bad ? 2 : failed_checks ? 3 : 0;
}

/* ---------------------------------------------------------------- sigwait */

static _Atomic int got_usr1, got_other;
static int sigwait_fd = -1; /* "sigwait signalfd": read from a signalfd on the full set */
static void *sigwaiter(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  atomic_fetch_add(&started, 1);
  for (;;) {
    siginfo_t si;
    struct signalfd_siginfo ssi;
    int s = sigwait_fd < 0 ? sigwaitinfo(&all, &si)
            : read(sigwait_fd, &ssi, sizeof ssi) == (ssize_t)sizeof ssi ? (int)ssi.ssi_signo : -1;
    if (s == SIGUSR1) {
      atomic_store(&got_usr1, 1);
      return NULL;
    }
    if (s > 0) atomic_store(&got_other, s);
  }
}

static int sigwait_scenario(const char *how) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* every thread: only the sigwaiter takes signals */
  if (!strcmp(how, "signalfd")) sigwait_fd = signalfd(-1, &all, SFD_CLOEXEC);
  pthread_t t;
  pthread_create(&t, NULL, sigwaiter, NULL);
  while (!atomic_load(&started)) usleep(1000);
  for (int i = 0; i < 5; i++) {
    hc_check_t *c = hc_check_begin("sigwait");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
  }
  kill(getpid(), SIGUSR1);
  pthread_join(t, NULL);
  printf("sigwait: SIGUSR1 %d, other signal %d\n", atomic_load(&got_usr1), atomic_load(&got_other));
  return atomic_load(&got_usr1) && !atomic_load(&got_other) ? 0 : 2;
}

/* ---------------------------------------------------------------- handler */

static _Atomic int handled;
static void prog_handler(int sig) {
  (void)sig;
  atomic_fetch_add(&handled, 1);
}

static void *sleeper(void *arg) {
  (void)arg;
  atomic_fetch_add(&started, 1);
  for (;;) pause();
  return NULL;
}

static int handler_scenario(void) {
  struct sigaction sa, ign, now;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = prog_handler;
  sigaction(SIGRTMAX - 3, &sa, NULL);
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGRTMAX - 4, &ign, NULL);
  pthread_t t;
  for (int i = 0; i < 3; i++) pthread_create(&t, NULL, sleeper, NULL);
  while (atomic_load(&started) < 3) usleep(1000);
  for (int i = 0; i < 3; i++) {
    hc_check_t *c = hc_check_begin("handler");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
  }
  int bad = 0;
  sigaction(SIGRTMAX - 3, NULL, &now);
  if (now.sa_handler != prog_handler) printf("FAIL: the handler of SIGRTMAX-3 was replaced\n"), bad = 1;
  sigaction(SIGRTMAX - 4, NULL, &now);
  if (now.sa_handler != SIG_IGN) printf("FAIL: SIG_IGN of SIGRTMAX-4 was replaced\n"), bad = 1;
  if (atomic_load(&handled)) printf("FAIL: the program's handler ran %d times during checks\n", handled), bad = 1;
  raise(SIGRTMAX - 3);
  raise(SIGRTMAX - 4);
  if (atomic_load(&handled) != 1) printf("FAIL: raise(SIGRTMAX-3) ran the handler %d times\n", handled), bad = 1;
  printf("handler: %s\n", bad ? "changed" : "kept");
  return bad ? 2 : 0;
}

/* ---------------------------------------------------------------- pause + exit(3) */

static void *leaf_leak(void) {
  void *p = malloc(48);
  return p;
}

static int exiter_status = 3;
static void *exiter(void *arg) {
  usleep(100000); /* main is in pause() by now */
  if (arg) {
    for (int i = 0; i < 3; i++) {
      void *volatile p = leaf_leak();
      p = NULL;
      (void)p;
    }
  }
  exit(exiter_status);
}

static int pause_exit(bool leak) {
  pthread_t t;
  pthread_create(&t, NULL, exiter, leak ? (void *)1 : NULL);
  pause();
  return 0; /* woken: our exit(0) would race the worker's exit(3) */
}

/* ---------------------------------------------------------------- few threads */

static void *napper(void *arg) {
  (void)arg;
  atomic_fetch_add(&started, 1);
  for (;;) {
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void no_ptrace(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    exit(9);
  }
}

static int few(const char *how) {
  if (!strcmp(how, "seccomp")) no_ptrace();
  if (!strcmp(how, "nodump") && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    perror("PR_SET_DUMPABLE");
    exit(9);
  }
  pthread_t t;
  for (int i = 0; i < 4; i++) pthread_create(&t, NULL, napper, NULL);
  while (atomic_load(&started) < 4) usleep(1000);
  int ok = 0;
  for (int i = 0; i < 3; i++) {
    hc_check_t *c = hc_check_begin("few");
    ok += hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
  }
  printf("few: %d of 3 scoped checks passed\n", ok);
  fflush(stdout);
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return ok == 3 ? 0 : 2;
}

/* ---------------------------------------------------------------- limits */

static void **keep;
static int rlimit_as(void) {
  enum { N = 200000 };
  keep = malloc(N * sizeof *keep);
  for (int i = 0; i < N; i++) keep[i] = malloc(16 + (size_t)(i % 64));
  /* The address space in use now, plus a little: the check's buffers fail. */
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f || fscanf(f, "%lu", &pages) != 1) return 9;
  fclose(f);
  struct rlimit rl = {pages * 4096ul + (1ul << 20), RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 9;
  printf("rlimit-as: limit set at %lu MiB\n", (unsigned long)(rl.rlim_cur >> 20));
  fflush(stdout);
  return 0;
}

/* rlimit-margin as|data MIB: the same objects and a 48-byte leak, then
 * RLIMIT_AS (VmSize) or RLIMIT_DATA (VmData) at what is in use + MIB. */
static int rlimit_margin(const char *kind, const char *mib) {
  enum { N = 200000 };
  keep = malloc(N * sizeof *keep);
  for (int i = 0; i < N; i++) keep[i] = malloc(16 + (size_t)(i % 64));
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  bool as = !strcmp(kind, "as");
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long kib = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, as ? "VmSize:" : "VmData:", 7)) kib = strtoul(line + 7, NULL, 10);
  if (f) fclose(f);
  if (!kib) return 9;
  struct rlimit rl = {kib * 1024ul + strtoul(mib, NULL, 10) * (1ul << 20), RLIM_INFINITY};
  if (setrlimit(as ? RLIMIT_AS : RLIMIT_DATA, &rl) != 0) return 9;
  printf("rlimit-margin: %s limit set at %lu MiB\n", kind, (unsigned long)(rl.rlim_cur >> 20));
  fflush(stdout);
  return 0;
}

static _Atomic int hold_ready;
static void *holder(void *arg) {
  (void)arg;
  char *volatile mine = malloc(4000);
  strcpy(mine, "held by a thread's stack only");
  atomic_store(&hold_ready, 1);
  for (;;) pause();
  return NULL;
}

static void *blocked_holder(void *arg) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  return holder(arg);
}

static int blocked(void) {
  pthread_t t;
  pthread_create(&t, NULL, blocked_holder, NULL);
  while (!atomic_load(&hold_ready)) usleep(1000);
  return 0;
}

static int unshare_pid(void) {
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (!atomic_load(&hold_ready)) usleep(1000);
  if (unshare(CLONE_NEWPID) != 0) {
    perror("unshare(CLONE_NEWPID)");
    return 77;
  }
  hc_check_t *c = hc_check_begin("unshare");
  int ok = hc_check_end(c, HC_CHECK_REPORT);
  hc_check_free(c);
  pid_t kid = fork();
  if (kid == 0) _exit(getpid() == 1 ? 0 : 5);
  int st = 0;
  if (kid > 0) waitpid(kid, &st, 0);
  printf("unshare-pid: scoped check %s, fork %s, child status %d\n", ok ? "passed" : "failed",
         kid > 0 ? "ok" : strerror(errno), kid > 0 ? WEXITSTATUS(st) : -1);
  return ok && kid > 0 && WEXITSTATUS(st) == 0 ? 0 : 2;
}

static int chroot_scenario(const char *dir, const char *how) {
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (!atomic_load(&hold_ready)) usleep(1000);
  if (chroot(dir) != 0 || chdir("/") != 0) {
    perror("chroot");
    return 77;
  }
  if (strstr(how, "drop") && (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)) {
    perror("setresuid");
    return 77;
  }
  if (strstr(how, "leak")) {
    void *volatile p = leaf_leak();
    p = NULL;
    (void)p;
  }
  return 0;
}

static pthread_barrier_t exit_barrier;
static void *racing_exit(void *arg) {
  pthread_barrier_wait(&exit_barrier);
  exit(0);
  return arg;
}

static void *leak_and_return(void *arg) {
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return arg;
}

/* The leak is made on a stack that is unmapped after the join: no stale
 * copy of its address is left (a cached glibc stack, reused by a racing
 * thread, kept one under clang). */
static void leak_on_dropped_stack(void) {
  size_t len = 256 << 10;
  void *stack = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstack(&a, stack, len);
  pthread_t leaker;
  pthread_create(&leaker, &a, leak_and_return, NULL);
  pthread_join(leaker, NULL);
  pthread_attr_destroy(&a);
  munmap(stack, len);
}

static int exit_race(void) {
  leak_on_dropped_stack();
  pthread_barrier_init(&exit_barrier, NULL, 6);
  pthread_t t;
  for (int i = 0; i < 6; i++) pthread_create(&t, NULL, racing_exit, NULL);
  for (;;) pause();
  return 0;
}

static pthread_t late_exiter;
static _Atomic int in_join_handler;
static void join_handler(void) {
  atomic_store(&in_join_handler, 1);
  pthread_join(late_exiter, NULL);
}
static void *late_exit(void *arg) {
  while (!atomic_load(&in_join_handler)) usleep(1000);
  exit(5);
  return arg;
}
static int exit_join(void) {
  leak_on_dropped_stack();
  atexit(join_handler);
  pthread_create(&late_exiter, NULL, late_exit, NULL);
  exit(0);
}

/* "exit-join ctor": the handler is registered by a constructor, before the
 * library's exit handlers, so it runs after the exit check. */
__attribute__((constructor)) static void exit_join_ctor(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc > 2 && !strcmp(argv[1], "exit-join") && !strcmp(argv[2], "ctor")) atexit(join_handler);
}

static int exit_join_ctor_scenario(void) {
  pthread_create(&late_exiter, NULL, late_exit, NULL);
  exit(0);
}

static __attribute__((noinline)) void *filled(size_t n) {
  void *p = malloc(n);
  memset(p, 1, n);
  return p;
}
static pthread_barrier_t six;
static void *exit6(void *arg) {
  pthread_barrier_wait(&six);
  exit(6);
  return arg;
}
static pthread_barrier_t two;
static void cleanup_allocating(void *arg) {
  (void)arg;
  void *volatile keep = filled(33);
  pthread_barrier_wait(&two);
  for (int i = 0; i < 10000; i++) free(malloc(300 << 10));
  keep = NULL;
  (void)keep;
}
static void *exiting_worker(void *arg) {
  pthread_cleanup_push(cleanup_allocating, NULL);
  pthread_exit(arg);
  pthread_cleanup_pop(0);
  return arg;
}
static int exiting_cleanup(void) {
  pthread_barrier_init(&two, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, exiting_worker, NULL);
  pthread_barrier_wait(&two);
  exit(0);
}
static int pthread_exit_race(void) {
  void *volatile p = filled(33);
  p = NULL;
  (void)p;
  pthread_barrier_init(&six, NULL, 6);
  pthread_t t;
  for (int i = 0; i < 6; i++) pthread_create(&t, NULL, exit6, NULL);
  pthread_exit(NULL);
}

static __attribute__((noinline)) int deep_alloc(int depth) {
  volatile char pad[1024];
  pad[0] = (char)depth;
  if (depth > 0) return deep_alloc(depth - 1) + pad[0] - (char)depth;
  char *volatile q = malloc(40);
  int ok = q != NULL;
  free(q);
  return ok;
}

#define ALLOW_NR(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
static int sandbox(void) {
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  printf("sandbox: installing\n");
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      ALLOW_NR(SYS_write), ALLOW_NR(SYS_exit_group), ALLOW_NR(SYS_exit), ALLOW_NR(SYS_brk), ALLOW_NR(SYS_mmap),
      ALLOW_NR(SYS_munmap), ALLOW_NR(SYS_futex), ALLOW_NR(SYS_rt_sigreturn), ALLOW_NR(SYS_rt_sigprocmask),
      ALLOW_NR(SYS_getpid), ALLOW_NR(SYS_gettid),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    return 77;
  }
  printf("sandbox: installed\n");
  /* Allocations after the install, 200 KiB deeper than the stack has been:
   * recording their stacks must make no system call either (the stack
   * bounds were probed with sigaltstack, module headers read with
   * process_vm_readv: sshd's pre-auth child died of SIGSYS in malloc). */
  printf("sandbox: allocated deep %d\n", deep_alloc(200));
  return 0;
}

/* An inline seccomp(2): neither libc's prctl nor its syscall, which the
 * checker interposes (Chromium's sandbox installs its filters so).  x86-64
 * only: elsewhere the inline runs are skipped (status 77). */
static long inline_seccomp(long op, long flags, const void *prog) {
#if defined(__x86_64__)
  long ret;
  __asm__ __volatile__("syscall" : "=a"(ret) : "a"((long)SYS_seccomp), "D"(op), "S"(flags), "d"(prog)
                       : "rcx", "r11", "memory");
  return ret;
#else
  (void)op, (void)flags, (void)prog;
  return -ENOSYS;
#endif
}

static void on_sigsys(int sig) {
  (void)sig;
  static const char m[] = "filtered: handler ran\n";
  if (write(1, m, sizeof m - 1) < 0) _exit(8);
  _exit(8);
}

static int filtered(int argc, char **argv) {
  const char *kind = argc > 2 ? argv[2] : "";
  bool in_line = argc > 3 && !strcmp(argv[3], "inline");
  struct sock_filter f[16] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))};
  int n = 1;
#define ADD(nr, ret) (f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                      f[n + 1] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (ret)), n += 2)
  if (!strcmp(kind, "kill-ptrace")) ADD(SYS_ptrace, SECCOMP_RET_KILL_PROCESS);
  else if (!strcmp(kind, "kill-mincore")) ADD(SYS_mincore, SECCOMP_RET_KILL_PROCESS);
  else if (!strcmp(kind, "trap-mincore")) ADD(SYS_mincore, SECCOMP_RET_TRAP);
  else if (!strcmp(kind, "errno-ptrace")) ADD(SYS_ptrace, SECCOMP_RET_ERRNO | EPERM);
  else if (!strcmp(kind, "docker")) {
    ADD(SYS_unshare, SECCOMP_RET_ERRNO | EPERM);
    ADD(SYS_keyctl, SECCOMP_RET_ERRNO | EPERM);
    ADD(SYS_add_key, SECCOMP_RET_ERRNO | EPERM);
  } else {
    fprintf(stderr, "filtered: unknown kind %s\n", kind);
    return 9;
  }
  f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {(unsigned short)n, f};
  if (!strcmp(kind, "trap-mincore")) signal(SIGSYS, on_sigsys);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("PR_SET_NO_NEW_PRIVS");
    return 77;
  }
  if (in_line) {
    long r = inline_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog);
    if (r != 0) {
      fprintf(stderr, "filtered: seccomp %ld\n", r);
      return 77;
    }
    return few("");
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    return 77;
  }
  if (argc < 4) return 9;
  execv(argv[3], argv + 3);
  perror("execv");
  return 9;
}

static int landlock_scenario(void) {
#ifdef SYS_landlock_create_ruleset
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (!atomic_load(&hold_ready)) usleep(1000);
  struct landlock_ruleset_attr ra = {.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE |
                                                          LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE};
  int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
  if (rs < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
    perror("landlock");
    return 77;
  }
  close(rs);
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return 0;
#else
  return 77;
#endif
}

static int uffd;
/* Serves uffd's faults: missing pages filled with zeros, or (arg not NULL:
 * minor mode) the page cache's page mapped. */
static void *uffd_server(void *arg) {
  static char page[4096] __attribute__((aligned(4096)));
  for (;;) {
    struct uffd_msg m;
    ssize_t n = read(uffd, &m, sizeof m);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof m) return NULL;
    if (m.event != UFFD_EVENT_PAGEFAULT) continue;
    unsigned long at = m.arg.pagefault.address & ~4095ull;
    struct uffdio_copy c = {.dst = at, .src = (unsigned long)page, .len = 4096};
    struct uffdio_continue k = {.range = {at, 4096}};
    if (arg) ioctl(uffd, UFFDIO_CONTINUE, &k);
    else ioctl(uffd, UFFDIO_COPY, &c);
  }
}

static int userfaultfd_scenario(void) {
  uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
  struct uffdio_api api = {.api = UFFD_API};
  if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0) {
    perror("userfaultfd");
    return 77;
  }
  size_t len = 1 << 21;
  char *mapped = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *block = malloc(len + 8192);
  char *inner = (char *)(((uintptr_t)block + 4095) & ~(uintptr_t)4095);
  madvise(inner, len, MADV_DONTNEED);
  char *ranges[2] = {mapped, inner};
  for (int i = 0; i < 2; i++) {
    struct uffdio_register r = {.range = {(unsigned long)ranges[i], len}, .mode = UFFDIO_REGISTER_MODE_MISSING};
    if (ioctl(uffd, UFFDIO_REGISTER, &r) != 0) {
      perror("UFFDIO_REGISTER");
      return 77;
    }
  }
  pthread_t t;
  pthread_create(&t, NULL, uffd_server, NULL);
  for (int i = 0; i < 2; i++) /* pages 0 and 2 of each range filled, the rest untouched */
    for (int j = 0; j < 2; j++) ((void *volatile *)(ranges[i] + j * 8192))[1] = malloc(60 + i * 2 + j);
  hc_check_t *c = hc_check_begin("userfaultfd");
  int ok = hc_check_end(c, HC_CHECK_REPORT);
  hc_check_free(c);
  printf("userfaultfd: scoped check %s\n", ok ? "passed" : "failed");
  return ok ? 0 : 2;
}

static int userfaultfd_minor_scenario(bool shared) {
  hc_check_t *c = hc_check_begin("userfaultfd-minor"); /* first: it judges what is allocated after it */
  size_t len = 4 * 4096;
  int fd = (int)syscall(SYS_memfd_create, "uffd-minor", 0);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0) return 77;
  void **first = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (first == MAP_FAILED) return 77;
  first[1] = malloc(72); /* page 0: only in the file once the first view is gone */
  for (size_t i = 1; i < 4; i++) first[i * 512] = NULL; /* every page in the page cache */
  munmap(first, len);
  void **view = mmap(NULL, len, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
  if (view == MAP_FAILED) return 77;
  if (shared) hc_register_root_region(view, len);
  uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
  struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MINOR_SHMEM};
  struct uffdio_register r = {.range = {(unsigned long)view, len}, .mode = UFFDIO_REGISTER_MODE_MINOR};
  if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0 || ioctl(uffd, UFFDIO_REGISTER, &r) != 0) {
    perror("userfaultfd (minor)");
    return 77;
  }
  pthread_t t;
  pthread_create(&t, NULL, uffd_server, "minor");
  view[2 * 512 + 1] = malloc(88); /* page 2, through the view: a fault the thread serves */
  hc_check_end(c, HC_CHECK_REPORT);
  printf("userfaultfd-minor: scoped check found %zd leaked objects of %zd bytes\n", hc_check_objects_leaked(c),
         hc_check_bytes_leaked(c));
  hc_check_free(c);
  return 0;
}

static int shared_root_fork(void) {
  void **region = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 77;
  hc_check_t *c0 = hc_check_begin("shared-root-fork"); /* judges what is allocated after it */
  hc_register_root_region(region, 8192);
  region[3] = malloc(64);
  region[600] = malloc(65); /* the second page */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    hc_check_end(c0, HC_CHECK_REPORT);
    _exit((int)hc_check_objects_leaked(c0));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("shared-root-fork: the child's check found %d leaked objects\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  hc_check_free(c0);
  return 0;
}

static int slack_pipe[2], slack_hold[2]; /* readiness; a pipe nobody writes (the threads block on it) */
static void *slack_reader(void *arg) {
  (void)arg;
  char c;
  if (write(slack_pipe[1], "r", 1) != 1) return NULL; /* ready */
  while (read(slack_hold[0], &c, 1) < 0 && errno == EINTR) {
  }
  return NULL;
}

static int timer_slack_scenario(void) {
  if (prctl(PR_SET_TIMERSLACK, 10000000000ul, 0, 0, 0) != 0 || pipe(slack_pipe) != 0 || pipe(slack_hold) != 0) {
    perror("timer-slack");
    return 77;
  }
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, slack_reader, NULL);
  char c;
  for (int i = 0; i < 4; i++)
    if (read(slack_pipe[0], &c, 1) != 1) return 2;
  int passed = 0;
  for (int i = 0; i < 3; i++) {
    hc_check_t *k = hc_check_begin("timer-slack");
    passed += hc_check_end(k, HC_CHECK_REPORT) != 0;
    hc_check_free(k);
  }
  printf("timer-slack: %d of 3 checks passed\n", passed);
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return 0;
}

static int kvm_scenario(void) {
  int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  int vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
  unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (vm < 0 || mem == MAP_FAILED) {
    perror("kvm");
    return 77;
  }
  mem[0] = 0xf4; /* hlt */
  struct kvm_userspace_memory_region r = {.slot = 0, .guest_phys_addr = 0x1000, .memory_size = 4096,
                                          .userspace_addr = (unsigned long)mem};
  int vcpu = ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r) == 0 ? ioctl(vm, KVM_CREATE_VCPU, 0) : -1;
  int sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  struct kvm_run *run = vcpu < 0 || sz <= 0 ? MAP_FAILED : mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
  struct kvm_sregs s;
  struct kvm_regs g = {.rip = 0x1000, .rflags = 2};
  if (run == MAP_FAILED || ioctl(vcpu, KVM_GET_SREGS, &s) != 0) return 77;
  s.cs.base = 0;
  s.cs.selector = 0;
  if (ioctl(vcpu, KVM_SET_SREGS, &s) != 0 || ioctl(vcpu, KVM_SET_REGS, &g) != 0 || ioctl(vcpu, KVM_RUN, 0) != 0) {
    perror("KVM_RUN");
    return 77;
  }
  printf("kvm: exit reason %u\n", run->exit_reason); /* 5: KVM_EXIT_HLT */
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return 0;
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
static void *volatile guarded_blocks[2];
static char guarded_globals[3 * 4096] __attribute__((aligned(4096)));
static int guard_region_scenario(void) {
  size_t sizes[2] = {256 << 10, 8 << 10};
  for (int i = 0; i < 2; i++) {
    char *b = malloc(sizes[i]);
    char *page = (char *)(((uintptr_t)b + 4095) & ~(uintptr_t)4095); /* a whole page inside the block */
    if (i == 0) page += 64 << 10;
    if (page + 8192 > b + sizes[i]) page = b; /* an 8 KiB block is page-aligned */
    guarded_blocks[i] = b;
    ((void *volatile *)(page + 4096))[3] = malloc(40 + (size_t)i);
    if (madvise(page, 4096, MADV_GUARD_INSTALL) != 0) {
      perror("MADV_GUARD_INSTALL");
      return 77;
    }
  }
  ((void *volatile *)(guarded_globals + 8192))[5] = malloc(56);
  if (madvise(guarded_globals + 4096, 4096, MADV_GUARD_INSTALL) != 0) return 77;
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  printf("guard-region: done\n");
  return 0;
}

static _Atomic int tracer_events, tracer_done;
static pid_t traced_child;
static void *tracer_thread(void *arg) {
  (void)arg;
  /* Forked here: the tracer of a PTRACE_TRACEME child is the thread that forked it. */
  traced_child = fork();
  if (traced_child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    for (int i = 0; i < 20; i++) {
      raise(SIGUSR1); /* a signal-delivery-stop for the parent each time */
      usleep(5000);
    }
    _exit(7);
  }
  int st, stops = 0;
  for (;;) {
    pid_t r = waitpid(-1, &st, 0); /* any child: only ours may show up */
    if (r != traced_child) {
      printf("FAIL: waitpid(-1) returned %d (errno %d)\n", (int)r, errno);
      break;
    }
    atomic_fetch_add(&tracer_events, 1);
    if (WIFEXITED(st)) {
      atomic_store(&tracer_done, WEXITSTATUS(st) == 7 ? 1 : 2);
      break;
    }
    if (WIFSTOPPED(st)) {
      stops++;
      ptrace(PTRACE_CONT, r, 0, 0);
    }
  }
  return NULL;
}

static int tracer(void) {
  pthread_t t;
  pthread_create(&t, NULL, tracer_thread, NULL);
  for (int i = 0; i < 10; i++) {
    hc_check_t *c = hc_check_begin("tracer");
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
    usleep(10000);
  }
  pthread_join(t, NULL);
  printf("tracer: %d events, child %s\n", atomic_load(&tracer_events),
         atomic_load(&tracer_done) == 1 ? "exited 7" : "lost");
  return atomic_load(&tracer_done) == 1 ? 0 : 2;
}

static int fd_exhaust(void) {
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (!atomic_load(&hold_ready)) usleep(1000);
  int n = 0;
  while (open("/dev/null", O_RDONLY) >= 0) n++;
  int e = errno;
  printf("fd-exhaust: opened %d descriptors, then %s\n", n, strerror(e));
  fflush(stdout);
  return e == EMFILE ? 0 : 9;
}

/* ---------------------------------------------------------------- __WALL reapers */

int __lsan_do_recoverable_leak_check(void);

#define WALL_KIDS 256
static _Atomic int *wall_kids, wall_reaped, wall_foreign, wall_how; /* wall_kids: shared with the children */
enum { WALL_LOOP, WALL_WAITID, WALL_SIGCHLD };

/* Writes with write(2) only: called from a handler and during exit. */
static void wall_say_foreign(int pid) {
  char msg[64];
  int n = snprintf(msg, sizeof msg, "FAIL: reaped pid %d, not a child of ours\n", pid);
  if (write(1, msg, (size_t)n) < 0) _exit(9);
}

/* One pass: reaps every child that has ended; each must be one main forked
 * (main records a pid before its child may end: the child waits until it
 * sees its pid in the table, a shared mapping). */
static void wall_reap(void) {
  int saved = errno;
  for (;;) {
    int pid, st;
    if (atomic_load(&wall_how) == WALL_WAITID) {
      siginfo_t si;
      memset(&si, 0, sizeof si);
      if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL) != 0 || si.si_pid == 0) break;
      pid = si.si_pid;
    } else {
      pid = waitpid(-1, &st, __WALL | WNOHANG);
      if (pid <= 0) break;
    }
    bool ours = false;
    for (int i = 0; i < WALL_KIDS && !ours; i++) ours = atomic_load(&wall_kids[i]) == pid;
    if (ours) {
      atomic_fetch_add(&wall_reaped, 1);
    } else {
      atomic_fetch_add(&wall_foreign, 1);
      wall_say_foreign(pid);
    }
  }
  errno = saved;
}

static void wall_on_chld(int sig) {
  (void)sig;
  wall_reap();
}

static void *wall_poller(void *arg) {
  (void)arg;
  for (;;) {
    wall_reap();
    sched_yield();
  }
  return NULL;
}

static int wall_reaper(const char *how) {
  atomic_store(&wall_how, !strcmp(how, "waitid") ? WALL_WAITID : !strcmp(how, "sigchld") ? WALL_SIGCHLD : WALL_LOOP);
  if (atomic_load(&wall_how) == WALL_SIGCHLD) signal(SIGCHLD, wall_on_chld); /* glibc's: SA_RESTART */
  wall_kids = mmap(NULL, WALL_KIDS * sizeof *wall_kids, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (wall_kids == MAP_FAILED) return 9;
  pthread_t t;
  for (int i = 0; i < 2; i++) pthread_create(&t, NULL, napper, NULL); /* threads to stop */
  /* Three pollers: a task of the checker's that ends while the world runs
   * is seldom missed by all of them. */
  for (int i = 0; i < 3 && atomic_load(&wall_how) != WALL_SIGCHLD; i++) pthread_create(&t, NULL, wall_poller, NULL);
  int failed = 0;
  for (int i = 0; i < 30; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      while (atomic_load(&wall_kids[i]) != getpid()) usleep(100);
      _exit(0);
    }
    if (pid < 0) return 9;
    atomic_store(&wall_kids[i], pid);
    if (i % 3 == 2) {
      failed += __lsan_do_recoverable_leak_check() != 0;
    } else {
      hc_check_t *c = hc_check_begin("wall");
      failed += !hc_check_end(c, HC_CHECK_REPORT);
      hc_check_free(c);
    }
  }
  /* Every child of ours reaped (the SIGCHLD runs: by the handler; a
   * SIGCHLD merged with another one is picked up here). */
  for (int spin = 0; atomic_load(&wall_reaped) < 30 && spin < 5000; spin++) {
    if (atomic_load(&wall_how) == WALL_SIGCHLD) {
      sigset_t chld, old;
      sigemptyset(&chld);
      sigaddset(&chld, SIGCHLD);
      pthread_sigmask(SIG_BLOCK, &chld, &old);
      wall_reap();
      pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    usleep(1000);
  }
  printf("wall-reaper: %d checks failed, %d children of ours reaped, %d foreign\n", failed,
         atomic_load(&wall_reaped), atomic_load(&wall_foreign));
  fflush(stdout);
  void *volatile p = leaf_leak();
  p = NULL;
  (void)p;
  return failed || atomic_load(&wall_foreign) || atomic_load(&wall_reaped) != 30 ? 2 : 0;
}

/* ---------------------------------------------------------------- small stacks */

static const char *small_dir;
static void *small_worker(void *arg) {
  (void)arg;
  hc_check_t *c = hc_check_begin("small");
  void *volatile p = malloc(100);
  p = NULL;
  (void)p;
  int ok = hc_check_end(c, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE);
  printf("small: scoped check %s, %zd bytes\n", ok ? "passed" : "failed", hc_check_bytes_leaked(c));
  hc_check_free(c);
  char prefix[512];
  snprintf(prefix, sizeof prefix, "%s/small", small_dir);
  int started = hc_heap_profile_start(prefix);
  void *keep[64] = {0};
  for (int r = 0; r < 200; r++)
    for (int i = 0; i < 64; i++) {
      free(keep[i]);
      keep[i] = malloc((size_t)(i * 97 % 4000) + 1);
    }
  for (int i = 0; i < 64; i++) free(keep[i]);
  int dumped = hc_heap_profile_dump("small");
  hc_heap_profile_stop();
  printf("small: profile start %d dump %d\n", started, dumped);
  for (int i = 0; i < 3; i++) {
    void *volatile q = leaf_leak();
    q = NULL;
    (void)q;
  }
  exit(0);
}

/* "errno": the program's errno survives the checker's work (the checks'
 * and dumps' own opens of /proc and debug files left ENOENT): across a
 * scoped check, across mallocs that dump a heap profile (run with
 * HEAPPROFILE and a small HEAP_PROFILE_ALLOCATION_INTERVAL, without
 * HEAPCHECK: the checker's mode dumps at exit only), and across
 * the exit check, between a handler registered in main (runs before it,
 * sets 55) and one registered by a constructor (runs after it, prints). */
static void errno_late(void) { printf("late errno %d\n", errno); }
static void errno_early(void) { errno = 55; }
__attribute__((constructor)) static void errno_ctor(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc > 1 && !strcmp(argv[1], "errno")) atexit(errno_late);
}
static int errno_scenario(const char *how) {
  atexit(errno_early);
  if (!strcmp(how, "exit")) return 0; /* the exit check the first (its first opens of /proc fail) */
  errno = 54;
  hc_check_t *c = hc_check_begin("errno");
  printf("begin errno %d\n", errno);
  void *keep = filled(10);
  errno = 56;
  int ok = hc_check_end(c, 0);
  printf("end errno %d (ok %d)\n", errno, ok);
  free(keep);
  int changed = 0;
  for (int i = 0; i < 64; i++) {
    errno = 4242;
    void *p = malloc(1 << 20);
    if (errno != 4242) changed++;
    memset(p, 1, 64);
    free(p);
  }
  printf("mallocs that changed errno %d\n", changed);
  return 0;
}

static int small_stack(const char *dir) {
  small_dir = dir;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
  pthread_t t;
  if (pthread_create(&t, &a, small_worker, NULL) != 0) return 9;
  pause();
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *s = argc > 1 ? argv[1] : "";
  const char *arg = argc > 2 ? argv[2] : "";
  if (!strcmp(s, "stress")) return stress();
  if (!strcmp(s, "sigwait")) return sigwait_scenario(arg);
  if (!strcmp(s, "handler")) return handler_scenario();
  if (!strcmp(s, "pause-exit")) {
    if (!strcmp(arg, "leak0")) exiter_status = 0;
    return pause_exit(!strncmp(arg, "leak", 4));
  }
  if (!strcmp(s, "few")) return few(arg);
  if (!strcmp(s, "rlimit-as")) return rlimit_as();
  if (!strcmp(s, "rlimit-margin")) return rlimit_margin(arg, argc > 3 ? argv[3] : "0");
  if (!strcmp(s, "blocked")) return blocked();
  if (!strcmp(s, "tracer")) return tracer();
  if (!strcmp(s, "fd-exhaust")) return fd_exhaust();
  if (!strcmp(s, "small-stack")) return small_stack(arg);
  if (!strcmp(s, "errno")) return errno_scenario(arg);
  if (!strcmp(s, "wall-reaper")) return wall_reaper(arg);
  if (!strcmp(s, "unshare-pid")) return unshare_pid();
  if (!strcmp(s, "userfaultfd")) return userfaultfd_scenario();
  if (!strcmp(s, "guard-region")) return guard_region_scenario();
  if (!strcmp(s, "kvm")) return kvm_scenario();
  if (!strcmp(s, "timer-slack")) return timer_slack_scenario();
  if (!strcmp(s, "shared-root-fork")) return shared_root_fork();
  if (!strcmp(s, "userfaultfd-minor")) return userfaultfd_minor_scenario(!strcmp(arg, "shared"));
  if (!strcmp(s, "exit-race")) return exit_race();
  if (!strcmp(s, "exit-join")) return !strcmp(arg, "ctor") ? exit_join_ctor_scenario() : exit_join();
  if (!strcmp(s, "pthread-exit-race")) return pthread_exit_race();
  if (!strcmp(s, "exiting-cleanup")) return exiting_cleanup();
  if (!strcmp(s, "sandbox")) return sandbox();
  if (!strcmp(s, "landlock")) return landlock_scenario();
  if (!strcmp(s, "filtered")) return filtered(argc, argv);
  if (!strcmp(s, "chroot")) return chroot_scenario(arg, argc > 3 ? argv[3] : "");
  fprintf(stderr, "usage: %s stress|sigwait [signalfd]|handler|pause-exit [leak]|few [seccomp]|rlimit-as|rlimit-margin as|data MIB|fd-exhaust|small-stack DIR|wall-reaper loop|waitid|sigchld|unshare-pid|chroot DIR [drop]|userfaultfd|exit-race|exit-join [ctor]|errno [exit]|pthread-exit-race|exiting-cleanup|sandbox|landlock|filtered KIND [inline] PROG ARGS\n",
          argv[0]);
  return 9;
}
