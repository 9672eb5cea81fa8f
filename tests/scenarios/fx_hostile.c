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
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *s = argc > 1 ? argv[1] : "";
  if (!strcmp(s, "exec-race")) return exec_race(argc, argv);
  if (!strcmp(s, "pivot")) return pivot(argc > 2 ? argv[2] : "");
  if (!strcmp(s, "sigwait-race")) return sigwait_race(argc > 2 ? atoi(argv[2]) : 200);
  if (!strcmp(s, "sandbox-min"))
    return sandbox_min(argc > 2 ? argv[2] : "kill", argc > 3 ? argv[3] : "prctl", argc > 4 && !strcmp(argv[4], "thread"),
                       !strcmp(argv[argc - 1], "zero") ? 0 : 7);
  fprintf(stderr, "fx_hostile: unknown scenario '%s'\n", s);
  return 64;
}
