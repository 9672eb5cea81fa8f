/* fx_fallback_waits.c - untimed waits under the signal fallback's checks
 * (checker/untimed_restart.c).  Run by test_fallback_waits.sh with
 * HEAP_CHECK_STOP_METHOD=signal (and with ptrace); argv[1] is N, the
 * checks per phase (200).
 *
 * Ten threads wait without a timeout in epoll_wait, epoll_pwait (a mask,
 * and NULL), poll, ppoll (a mask, and NULL), select, pselect (a mask),
 * pause and sigsuspend, on a pipe nobody writes; SIGUSR1 is caught without
 * SA_RESTART (its handler counts, per wait).  The four with a mask keep
 * SIGUSR1 blocked outside the wait, so that each of its handler runs
 * belongs to one wait's EINTR.  Prints:
 *  quiet: N checks back to back, nothing else: the EINTRs seen (each was
 *         the fallback's signal's).
 *  pinged: N more checks while a thread sends SIGUSR1 to the waiters at
 *         random (every 100-400 us): per wait, the handler runs and the
 *         EINTRs; "ours" counts EINTRs without a handler run (a wait with
 *         a mask: eintr - handled; without: the excess over the handler
 *         runs), "lost" handler runs whose wait went on (masked waits).
 *  woke:  every waiter ended by SIGUSR1 (sent every ms until it is
 *         joined, up to 2 s): "never woke" names one that did not.
 *  cancel: 40 threads blocked in epoll_wait cancelled at random times
 *         while another thread checks back to back (a cancellation that
 *         lands in the trampoline must unwind through it): how many ended
 *         cancelled and ran their cleanup handler.
 * Exit 0 when quiet saw no EINTR, pinged none of ours, every thread woke
 * and every cancellation completed; 1 otherwise.
 *
 * "same-signal SIGNO N": a thread pthread_sigqueue()s SIGNO (the stop
 * signal's number, by default SIGRTMAX-3) N times, each with its own
 * value, to another thread while main runs checks back to back; the
 * program's handler counts them and sums the values.  Prints how many
 * arrived and whether the sum is right.
 *
 * "timer-thread": creates a SIGEV_THREAD timer (never armed: glibc starts
 * its helper thread, which blocks every signal) and runs one scoped
 * check; prints whether it passed; returns 0.
 *
 * "vfork CHILD_MS AFTER_MS": a thread blocks every signal (as glibc's
 * posix_spawn and system() do), vforks a child that sleeps CHILD_MS and
 * exits, then keeps every signal blocked AFTER_MS longer (posix_spawn
 * unmaps the child's stack first); main runs one scoped check while the
 * child sleeps and prints whether it passed and how long it took.  The
 * fallback waits for a thread in vfork up to five stop timeouts.
 *
 * "own-action N": a thread sets its own action for the stop signal's
 * number over and over (sigaction, and signal() every other time; two
 * handlers in turn, reading each back) while main runs N checks; the
 * program never sends that signal.  Prints the checks that failed, its
 * handlers' calls, the read-backs that were not its own, and whether the
 * final action is the last it set.
 *
 * "rt-prio N": the process on one CPU; a worker at SCHED_FIFO 5 waits
 * in read on a pipe, main at SCHED_FIFO 10 runs N checks; prints the
 * checks that failed (and on stderr the slowest one's time).  Returns 77 when
 * SCHED_FIFO is refused (no CAP_SYS_NICE).
 *
 * "io-uring N": a thread waits in io_uring_enter for the completion of a
 * read of a pipe nobody writes (IORING_ENTER_GETEVENTS, no timeout, no
 * mask) while main runs N checks; prints the EINTRs it saw.  Returns 77
 * when io_uring cannot be set up.
 *
 * "own-dfl" and "own-resethand": the stop signal's number left at SIG_DFL,
 * or given a handler with SA_RESETHAND (it writes "handled"); a forked
 * child sends that signal to the process (kill) at 100 ms, and again at
 * 400 ms for own-resethand, while main checks back to back for 1 s (eight
 * threads in pause).  Without the library: killed by the signal (after one
 * "handled").  Prints "survived" if it was not.
 *
 * "plain N": two threads wait in epoll_wait(-1) and poll(-1) (no p-variant
 * of the program's own) while main runs N checks; prints the EINTRs and
 * other errors they saw.  "filtered kill|errno N": installs a seccomp
 * filter that kills (or answers EPERM to) epoll_pwait, epoll_pwait2,
 * ppoll, pselect6 and rt_sigsuspend - the restart's calls - and execs
 * "plain N": an inherited filter, which the checker probes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <heapcheck.h>

enum { K_EPOLL, K_EPOLL_P, K_EPOLL_PNULL, K_POLL, K_PPOLL, K_PPOLL_NULL, K_SELECT, K_PSELECT, K_PAUSE, K_SIGSUSPEND,
       K_N };
static const char *const names[K_N] = {"epoll_wait", "epoll_pwait", "epoll_pwait(NULL)", "poll", "ppoll",
                                       "ppoll(NULL)", "select", "pselect", "pause", "sigsuspend"};
static const bool masked[K_N] = {false, true, false, false, true, false, false, true, false, true};
static int epfd, rfd, wfd;
static _Atomic int done, pinging, checking;
static _Atomic long eintr[K_N], handled[K_N];
static __thread int my_k = -1;
static pthread_t tids[K_N];

static void on_usr1(int sig) {
  (void)sig;
  if (my_k >= 0) atomic_fetch_add(&handled[my_k], 1);
}

static long one_wait(int k, const sigset_t *none) {
  struct epoll_event ev;
  struct pollfd pf = {rfd, POLLIN, 0};
  fd_set r;
  FD_ZERO(&r);
  FD_SET(rfd, &r);
  switch (k) {
    case K_EPOLL: return epoll_wait(epfd, &ev, 1, -1);
    case K_EPOLL_P: return epoll_pwait(epfd, &ev, 1, -1, none);
    case K_EPOLL_PNULL: return epoll_pwait(epfd, &ev, 1, -1, NULL);
    case K_POLL: return poll(&pf, 1, -1);
    case K_PPOLL: return ppoll(&pf, 1, NULL, none);
    case K_PPOLL_NULL: return ppoll(&pf, 1, NULL, NULL);
    case K_SELECT: return select(rfd + 1, &r, NULL, NULL, NULL);
    case K_PSELECT: return pselect(rfd + 1, &r, NULL, NULL, NULL, none);
    case K_PAUSE: return pause();
    default: return sigsuspend(none);
  }
}

static void *waiter(void *arg) {
  int k = (int)(long)arg;
  my_k = k;
  sigset_t usr1, none;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigemptyset(&none);
  if (masked[k]) pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  while (!atomic_load(&done))
    if (one_wait(k, &none) < 0 && errno == EINTR) atomic_fetch_add(&eintr[k], 1);
  return NULL;
}

static void checks(int n) {
  for (int i = 0; i < n; i++) {
    hc_check_t *c = hc_check_begin("waits");
    hc_check_end(c, 0);
    hc_check_free(c);
  }
}

static void *pinger(void *arg) {
  (void)arg;
  unsigned s = 12345;
  while (atomic_load(&pinging)) {
    s = s * 1103515245u + 12345u;
    pthread_kill(tids[(s >> 8) % K_N], SIGUSR1);
    usleep(100 + (s >> 20) % 300);
  }
  return NULL;
}

static _Atomic int cleanups;
static void cleanup(void *arg) {
  (void)arg;
  atomic_fetch_add(&cleanups, 1);
}
static void *cancel_waiter(void *arg) {
  (void)arg;
  struct epoll_event ev;
  pthread_cleanup_push(cleanup, NULL);
  for (;;) epoll_wait(epfd, &ev, 1, -1);
  pthread_cleanup_pop(0);
  return NULL;
}
static void *checker(void *arg) {
  (void)arg;
  while (atomic_load(&checking)) checks(1);
  return NULL;
}

/* ---------------------------------------------------------------- same-signal */
static _Atomic long ss_got, ss_sum;
static pthread_t ss_receiver;
static void on_same(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  atomic_fetch_add(&ss_got, 1);
  atomic_fetch_add(&ss_sum, si->si_value.sival_int);
}
static void *ss_receive(void *arg) {
  (void)arg;
  while (!atomic_load(&done)) usleep(1000);
  return NULL;
}
static void *ss_send(void *arg) {
  const int *sn = arg;
  for (int i = 1; i <= sn[1]; i++) {
    union sigval v;
    memset(&v, 0, sizeof v);
    v.sival_int = i;
    int r;
    while ((r = pthread_sigqueue(ss_receiver, sn[0], v)) == EAGAIN) usleep(100);
    if (r) break;
    if (i % 4 == 0) usleep(200);
  }
  return NULL;
}
static int same_signal(int signo, int n) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_same;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(signo, &sa, NULL);
  int sn[2] = {signo, n};
  pthread_t s;
  pthread_create(&ss_receiver, NULL, ss_receive, NULL);
  pthread_create(&s, NULL, ss_send, sn);
  int ran = 0;
  for (; pthread_tryjoin_np(s, NULL) != 0; ran++) checks(1);
  usleep(100000); /* the last ones' handler runs */
  atomic_store(&done, 1);
  pthread_join(ss_receiver, NULL);
  long want = (long)n * (n + 1) / 2;
  printf("same-signal: %d checks, %ld of %d arrived, sum %s\n", ran, (long)ss_got, n, ss_sum == want ? "right" : "wrong");
  return 0;
}

/* ---------------------------------------------------------------- timer-thread */
static void on_timer(union sigval v) { (void)v; }
static int timer_thread(void) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD;
  sev.sigev_notify_function = on_timer;
  timer_t t;
  if (timer_create(CLOCK_MONOTONIC, &sev, &t)) return 77;
  hc_check_t *c = hc_check_begin("timer");
  printf("timer-thread: check %s\n", hc_check_end(c, 0) ? "passed" : "failed");
  hc_check_free(c);
  return 0;
}

/* ---------------------------------------------------------------- vfork */
static int vf_child_ms, vf_after_ms;
static _Atomic int vf_in;
static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (syscall(SYS_nanosleep, &ts, &ts) != 0) {}
}
static void *vf_thread(void *arg) {
  (void)arg;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  atomic_store(&vf_in, 1);
  pid_t c = vfork();
  if (c == 0) {
    sleep_ms(vf_child_ms);
    _exit(0);
  }
  sleep_ms(vf_after_ms);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (c > 0) waitpid(c, NULL, 0);
  return NULL;
}
static int vfork_case(int child_ms, int after_ms) {
  vf_child_ms = child_ms, vf_after_ms = after_ms;
  pthread_t t;
  pthread_create(&t, NULL, vf_thread, NULL);
  while (!atomic_load(&vf_in)) usleep(1000);
  usleep(50000);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  hc_check_t *c = hc_check_begin("vfork");
  bool ok = hc_check_end(c, 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  hc_check_free(c);
  pthread_join(t, NULL);
  printf("vfork: check %s after %ld ms\n", ok ? "passed" : "failed",
         (long)((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000));
  return 0;
}

/* ---------------------------------------------------------------- own-action */
static _Atomic long oa_calls, oa_mismatch, oa_sets;
static void oa_h1(int s) { (void)s; atomic_fetch_add(&oa_calls, 1); }
static void oa_h2(int s) { (void)s; atomic_fetch_add(&oa_calls, 1); }
static void (*volatile oa_last)(int);
static void *oa_setter(void *arg) {
  int sig = (int)(long)arg;
  for (long i = 0; !atomic_load(&done); i++) {
    void (*h)(int) = (i & 1) ? oa_h1 : oa_h2;
    struct sigaction sa, cur;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    if (i & 2) signal(sig, h);
    else sigaction(sig, &sa, NULL);
    oa_last = h;
    atomic_fetch_add(&oa_sets, 1);
    if (sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != h) atomic_fetch_add(&oa_mismatch, 1);
  }
  return NULL;
}
static int own_action(int n) {
  int sig = SIGRTMAX - 3, fails = 0;
  pthread_t t;
  pthread_create(&t, NULL, oa_setter, (void *)(long)sig);
  while (atomic_load(&oa_sets) < 100) usleep(1000);
  for (int i = 0; i < n; i++) {
    hc_check_t *c = hc_check_begin("own-action");
    if (!hc_check_end(c, 0)) fails++;
    hc_check_free(c);
  }
  atomic_store(&done, 1);
  pthread_join(t, NULL);
  struct sigaction cur;
  sigaction(sig, NULL, &cur);
  printf("own-action: %d checks, %d failed, %ld handler calls, %ld read-backs not its own, final %s\n", n, fails,
         (long)oa_calls, (long)oa_mismatch, cur.sa_handler == oa_last ? "its own" : "wrong");
  return 0;
}

/* ---------------------------------------------------------------- own-dfl, own-resethand */
static long ms_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (long)((b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000);
}

static void od_handler(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  if (write(1, "handled\n", 8) != 8) {}
}
static void *od_sleeper(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}
static int own_default(bool resethand) {
  int sig = SIGRTMAX - 3;
  if (resethand) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = od_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigaction(sig, &sa, NULL);
  }
  /* Checks back to back beside eight threads: the signal comes while the
   * fallback's handler is the action, before the threads are parked or
   * after they are let go, in about a third of the runs. */
  pthread_t t;
  for (int i = 0; i < 8; i++) pthread_create(&t, NULL, od_sleeper, NULL);
  pid_t parent = getpid(), c = fork();
  if (c == 0) {
    usleep(100000);
    kill(parent, sig);
    if (resethand) {
      usleep(300000);
      kill(parent, sig);
    }
    _exit(0);
  }
  struct timespec a;
  clock_gettime(CLOCK_MONOTONIC, &a);
  while (ms_since(&a) < 1000) {
    hc_check_t *ck = hc_check_begin("own-default");
    hc_check_end(ck, 0);
    hc_check_free(ck);
  }
  waitpid(c, NULL, 0);
  printf("own-%s: survived\n", resethand ? "resethand" : "dfl");
  return 0;
}

/* ---------------------------------------------------------------- io-uring */
/* The raw interface (no liburing): a ring of 4, one read submitted. */
struct uring_sqe {
  uint8_t opcode, flags;
  uint16_t ioprio;
  int32_t fd;
  uint64_t off, addr;
  uint32_t len, rw_flags;
  uint64_t user_data, pad[3];
};
struct uring_params {
  uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
  struct { uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1; uint64_t resv2; } sq_off;
  struct { uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1; uint64_t resv2; } cq_off;
};
static _Atomic long ur_eintr, ur_other;
static int ur_fd, ur_pipe[2];
static volatile uint32_t *ur_chead, *ur_ctail;
static int uring_setup_read(void) {
  struct uring_params p;
  memset(&p, 0, sizeof p);
  ur_fd = (int)syscall(SYS_io_uring_setup, 4, &p);
  if (ur_fd < 0 || pipe(ur_pipe)) return -1;
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(uint32_t), cq_len = p.cq_off.cqes + p.cq_entries * 16;
  char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ur_fd, 0);
  char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ur_fd, 0x8000000);
  struct uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                                ur_fd, 0x10000000);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) return -1;
  static char buf[8];
  uint32_t tail = *(volatile uint32_t *)(sq + p.sq_off.tail), i = tail & *(uint32_t *)(sq + p.sq_off.ring_mask);
  memset(&sqes[i], 0, sizeof sqes[i]);
  sqes[i].opcode = 22; /* IORING_OP_READ */
  sqes[i].fd = ur_pipe[0];
  sqes[i].addr = (uintptr_t)buf;
  sqes[i].len = 1;
  ((uint32_t *)(sq + p.sq_off.array))[i] = i;
  __atomic_store_n((uint32_t *)(sq + p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
  ur_chead = (volatile uint32_t *)(cq + p.cq_off.head);
  ur_ctail = (volatile uint32_t *)(cq + p.cq_off.tail);
  return syscall(SYS_io_uring_enter, ur_fd, 1, 0, 0, NULL, 0) == 1 ? 0 : -1;
}
static void *ur_waiter(void *arg) {
  (void)arg;
  while (__atomic_load_n(ur_ctail, __ATOMIC_ACQUIRE) == *ur_chead) {
    long r = syscall(SYS_io_uring_enter, ur_fd, 0, 1, 1 /* IORING_ENTER_GETEVENTS */, NULL, 0);
    if (r < 0 && errno == EINTR) atomic_fetch_add(&ur_eintr, 1);
    else if (r < 0) atomic_fetch_add(&ur_other, 1), usleep(1000);
  }
  return NULL;
}
static int io_uring_case(int n) {
  if (uring_setup_read()) return 77;
  pthread_t t;
  pthread_create(&t, NULL, ur_waiter, NULL);
  usleep(50000);
  checks(n);
  if (write(ur_pipe[1], "x", 1) != 1) return 3;
  pthread_join(t, NULL);
  printf("io-uring: %d checks, %ld EINTR, %ld other errors\n", n, (long)ur_eintr, (long)ur_other);
  return 0;
}

/* ---------------------------------------------------------------- rt-prio */
static int rt_pipe[2];
static void *rt_reader(void *arg) {
  (void)arg;
  char c;
  while (read(rt_pipe[0], &c, 1) < 0 && errno == EINTR) {}
  return NULL;
}
static int rt_prio(int n) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one) || pipe(rt_pipe)) return 77;
  pthread_t t;
  pthread_create(&t, NULL, rt_reader, NULL);
  struct sched_param lo = {.sched_priority = 5}, hi = {.sched_priority = 10}, none = {.sched_priority = 0};
  if (pthread_setschedparam(t, SCHED_FIFO, &lo) || pthread_setschedparam(pthread_self(), SCHED_FIFO, &hi)) {
    printf("rt-prio: SCHED_FIFO refused\n");
    return 77;
  }
  usleep(20000);
  int fails = 0;
  long slowest = 0;
  for (int i = 0; i < n; i++) {
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    hc_check_t *c = hc_check_begin("rt-prio");
    if (!hc_check_end(c, 0)) fails++;
    hc_check_free(c);
    long ms = ms_since(&a);
    if (ms > slowest) slowest = ms;
  }
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &none);
  if (write(rt_pipe[1], "x", 1) != 1) return 3;
  pthread_join(t, NULL);
  printf("rt-prio: %d checks, %d failed\n", n, fails);
  fprintf(stderr, "rt-prio: the slowest check took %ld ms\n", slowest);
  return 0;
}

/* ---------------------------------------------------------------- plain, filtered */
static _Atomic int plain_eintr[2], plain_other[2];
static void *plain_waiter(void *arg) {
  int k = (int)(long)arg;
  while (!atomic_load(&done)) {
    struct epoll_event ev;
    struct pollfd pf = {rfd, POLLIN, 0};
    int r = k ? poll(&pf, 1, -1) : epoll_wait(epfd, &ev, 1, -1);
    if (r < 0 && errno == EINTR) atomic_fetch_add(&plain_eintr[k], 1);
    else if (r < 0) atomic_fetch_add(&plain_other[k], 1), usleep(1000);
  }
  return NULL;
}
static int plain(int n) {
  pthread_t t[2];
  for (long k = 0; k < 2; k++) pthread_create(&t[k], NULL, plain_waiter, (void *)k);
  usleep(50000);
  checks(n);
  atomic_store(&done, 1);
  if (write(wfd, "x", 1) != 1) return 3;
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  printf("plain: %d checks, epoll_wait EINTR %d, poll EINTR %d, other errors %d\n", n, (int)plain_eintr[0],
         (int)plain_eintr[1], (int)(plain_other[0] + plain_other[1]));
  return 0;
}
static int filtered(bool kill, const char *n) {
  static const int nrs[] = {SYS_epoll_pwait,
#ifdef SYS_epoll_pwait2
                            SYS_epoll_pwait2,
#endif
                            SYS_ppoll, SYS_pselect6, SYS_rt_sigsuspend};
  struct sock_filter f[16] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))};
  unsigned len = 1, nn = sizeof nrs / sizeof nrs[0];
  for (unsigned i = 0; i < nn; i++)
    f[len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i], nn - i, 0);
  f[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  f[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | EPERM);
  struct sock_fprog prog = {(unsigned short)len, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
    perror("filtered: seccomp");
    return 77;
  }
  char *args[] = {(char *)"fx_fallback_waits", (char *)"plain", (char *)n, NULL};
  execv("/proc/self/exe", args);
  perror("filtered: execv");
  return 9;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && !strcmp(argv[1], "timer-thread")) return timer_thread();
  if (argc > 3 && !strcmp(argv[1], "vfork")) return vfork_case(atoi(argv[2]), atoi(argv[3]));
  if (argc > 2 && !strcmp(argv[1], "own-action")) return own_action(atoi(argv[2]));
  if (argc > 2 && !strcmp(argv[1], "rt-prio")) return rt_prio(atoi(argv[2]));
  if (argc > 2 && !strcmp(argv[1], "io-uring")) return io_uring_case(atoi(argv[2]));
  if (argc > 1 && !strcmp(argv[1], "own-dfl")) return own_default(false);
  if (argc > 1 && !strcmp(argv[1], "own-resethand")) return own_default(true);
  if (argc > 3 && !strcmp(argv[1], "same-signal")) return same_signal(atoi(argv[2]), atoi(argv[3]));
  if (argc > 2 && !strcmp(argv[1], "filtered")) return filtered(!strcmp(argv[2], "kill"), argc > 3 ? argv[3] : "20");
  int n = argc > 1 ? atoi(argv[argc > 2 ? 2 : 1]) : 200;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  int p[2];
  if (pipe(p) || (epfd = epoll_create1(0)) < 0) return 77;
  rfd = p[0], wfd = p[1];
  struct epoll_event ev = {.events = EPOLLIN};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, rfd, &ev)) return 77;
  if (argc > 1 && !strcmp(argv[1], "plain")) return plain(n);
  for (int k = 0; k < K_N; k++) pthread_create(&tids[k], NULL, waiter, (void *)(long)k);
  usleep(50000);

  checks(n);
  long quiet = 0, e0[K_N], h0[K_N];
  for (int k = 0; k < K_N; k++) {
    e0[k] = atomic_load(&eintr[k]), h0[k] = atomic_load(&handled[k]);
    if (e0[k]) printf("quiet: %s saw EINTR %ld times\n", names[k], e0[k]);
    quiet += e0[k];
  }
  printf("quiet: %d checks, %ld EINTR\n", n, quiet);

  atomic_store(&pinging, 1);
  pthread_t pt;
  pthread_create(&pt, NULL, pinger, NULL);
  checks(n);
  atomic_store(&pinging, 0);
  pthread_join(pt, NULL);
  usleep(50000); /* the last signal's handler and EINTR */
  long ours = 0, lost = 0, sent = 0;
  for (int k = 0; k < K_N; k++) {
    long e = atomic_load(&eintr[k]) - e0[k], h = atomic_load(&handled[k]) - h0[k];
    printf("pinged: %-17s handled %4ld eintr %4ld\n", names[k], h, e);
    if (e > h) ours += e - h;
    if (masked[k] && h > e) lost += h - e;
    sent += h;
  }
  printf("pinged: %d checks, %ld EINTR of ours, %ld of %ld program signals lost\n", n, ours, lost, sent);

  atomic_store(&done, 1);
  int never = 0;
  for (int k = 0; k < K_N; k++) {
    int i = 0;
    for (; i < 2000 && pthread_tryjoin_np(tids[k], NULL) != 0; i++) {
      pthread_kill(tids[k], SIGUSR1);
      usleep(1000);
    }
    if (i == 2000) printf("woke: %s never woke\n", names[k]);
    never += i == 2000;
  }
  if (!never) printf("woke: every wait ended by a signal of the program's\n");

  atomic_store(&checking, 1);
  pthread_t ct;
  pthread_create(&ct, NULL, checker, NULL);
  int rounds = 40, cancelled = 0;
  for (int i = 0; i < rounds; i++) {
    pthread_t w;
    void *res = NULL;
    pthread_create(&w, NULL, cancel_waiter, NULL);
    usleep(1000 + (unsigned)(i * 397) % 5000);
    pthread_cancel(w);
    pthread_join(w, &res);
    cancelled += res == PTHREAD_CANCELED;
  }
  atomic_store(&checking, 0);
  pthread_join(ct, NULL);
  printf("cancel: %d of %d cancelled, %d cleanups\n", cancelled, rounds, (int)atomic_load(&cleanups));
  return quiet || ours || never || cancelled != rounds || cleanups != rounds ? 1 : 0;
}
