/* test_stop_world.c - stopping and resuming every thread of the process.
 *
 * Threads in every state the checker meets: spinning (with a magic value in
 * a callee-saved register and another in a volatile local), blocked in
 * read() on a pipe, in nanosleep, in pthread_cond_wait, running its own
 * signal handler on a sigaltstack, creating and joining threads in a loop
 * (threads appear and exit during the stop), and - in a second phase -
 * threads that block every signal (one known to the allocator's thread
 * registry, one not).  Each stop checks, while the world is stopped:
 *  - every listed thread is STOPPED (phase A) and no unlisted thread exists;
 *  - the saved sp lies in the thread's stack (or its altstack);
 *  - the magic local is inside the stack range, the magic register value is
 *    among the saved registers (x86-64);
 *  - hci_roots_threads reports ranges covering every magic local (for the
 *    thread in its handler: its normal stack, scanned whole);
 *  - the spinners' counters do not move.
 * Phase D runs the checks from another thread, so the main thread (in
 * pthread_join) is stopped like any other ([stack] and __libc_stack_end).
 * After each resume the spinners move again, the reader reads, the sleeper
 * sleeps and the waiter wakes.  200 stop/resume rounds.
 * Run twice: with the ptrace stop (the default: the blockers stop like the
 * others, nanosleep never sees EINTR) and with HEAP_CHECK_STOP_METHOD=signal
 * (argument "signal": the blockers do not stop and are scanned whole).
 * Nothing between stop and resume calls malloc or stdio: failures are
 * formatted with hci_snprintf into a static buffer and printed afterwards. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"

#define ROUNDS 200
#define NSPIN 3
#define STACK_MAGIC 0x5eed5eed00c0ffeeull
#define REG_MAGIC 0x0badcafe12340000ull

enum { T_SPIN0, T_SPIN1, T_SPIN2, T_READER, T_SLEEPER, T_WAITER, T_HANDLER, T_SPAWNER, T_MAIN, T_BLOCK_REG,
       T_BLOCK_ANON, NT };
static const char *const tname[NT] = {"spin0", "spin1", "spin2", "reader", "sleeper", "waiter", "in-handler",
                                      "spawner", "main", "blocker(registry)", "blocker(unknown)"};

typedef struct tinfo {
  _Atomic int tid;
  uintptr_t stk_lo, stk_hi;     /* from pthread_getattr_np */
  uintptr_t alt_lo, alt_hi;     /* the handler thread's sigaltstack */
  uintptr_t magic_addr;         /* address of a volatile local holding STACK_MAGIC + index */
  _Atomic int ready;
} tinfo_t;

static tinfo_t info[NT];
static _Atomic unsigned long spin_count[NSPIN];
static _Atomic unsigned long handler_count;
static _Atomic int quit, block_quit;
static int pipefd[2];
static _Atomic int reads_ok, read_errors, sleeps_ok, sleep_errors, sleep_eintr, wakeups, spawned;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_round;

static char errbuf[8192];
static size_t errlen;
static int nerr;
static void fail(const char *msg) {
  nerr++;
  size_t n = strlen(msg);
  if (errlen + n + 2 < sizeof errbuf) {
    memcpy(errbuf + errlen, msg, n);
    errlen += n;
    errbuf[errlen++] = '\n';
  }
}
#define FAILF(...)                                 \
  do {                                             \
    char m_[256];                                  \
    hci_snprintf(m_, sizeof m_, __VA_ARGS__);      \
    fail(m_);                                      \
  } while (0)

static void record_self(tinfo_t *ti, int idx) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, &addr, &size);
    ti->stk_lo = (uintptr_t)addr;
    ti->stk_hi = (uintptr_t)addr + size;
    pthread_attr_destroy(&a);
  }
  (void)idx;
  atomic_store(&ti->tid, (int)syscall(SYS_gettid));
}

static void *spinner(void *arg) {
  int i = (int)(intptr_t)arg;
  record_self(&info[i], i);
  volatile uint64_t magic = STACK_MAGIC + (uint64_t)i;
  info[i].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[i].ready, 1);
#if defined(__x86_64__)
  register uint64_t r asm("r15") = REG_MAGIC + (uint64_t)i;
  __asm__ __volatile__("" : "+r"(r));
  while (!atomic_load_explicit(&quit, memory_order_relaxed)) {
    atomic_fetch_add_explicit(&spin_count[i], 1, memory_order_relaxed);
    __asm__ __volatile__("" : "+r"(r));
  }
#else
  while (!atomic_load_explicit(&quit, memory_order_relaxed))
    atomic_fetch_add_explicit(&spin_count[i], 1, memory_order_relaxed);
#endif
  (void)magic;
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  record_self(&info[T_READER], T_READER);
  volatile uint64_t magic = STACK_MAGIC + T_READER;
  info[T_READER].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[T_READER].ready, 1);
  for (;;) {
    char c;
    ssize_t n = read(pipefd[0], &c, 1);
    if (n == 1 && c == 'q') break;
    if (n == 1) atomic_fetch_add(&reads_ok, 1);
    else atomic_fetch_add(&read_errors, 1); /* SA_RESTART: read() must never fail with EINTR */
  }
  (void)magic;
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  record_self(&info[T_SLEEPER], T_SLEEPER);
  volatile uint64_t magic = STACK_MAGIC + T_SLEEPER;
  info[T_SLEEPER].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[T_SLEEPER].ready, 1);
  while (!atomic_load(&quit)) {
    struct timespec ts = {0, 2000000}, rem;
    while (nanosleep(&ts, &rem) != 0) {
      if (errno != EINTR) {
        atomic_fetch_add(&sleep_errors, 1);
        break;
      }
      atomic_fetch_add(&sleep_eintr, 1); /* nanosleep is never restarted: EINTR is documented */
      ts = rem;
    }
    atomic_fetch_add(&sleeps_ok, 1);
  }
  (void)magic;
  return NULL;
}

static void *waiter(void *arg) {
  (void)arg;
  record_self(&info[T_WAITER], T_WAITER);
  volatile uint64_t magic = STACK_MAGIC + T_WAITER;
  info[T_WAITER].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[T_WAITER].ready, 1);
  pthread_mutex_lock(&mu);
  int seen = cv_round;
  while (!atomic_load(&quit)) {
    pthread_cond_wait(&cv, &mu);
    if (cv_round != seen) {
      seen = cv_round;
      atomic_fetch_add(&wakeups, 1);
    }
  }
  pthread_mutex_unlock(&mu);
  (void)magic;
  return NULL;
}

static void usr1_handler(int sig) {
  (void)sig;
  volatile uint64_t magic = STACK_MAGIC + 100;
  (void)magic;
  stack_t ss;
  sigaltstack(NULL, &ss);
  if (ss.ss_flags & SS_ONSTACK) atomic_store(&info[T_HANDLER].ready, 1);
  else atomic_store(&info[T_HANDLER].ready, -1);
  while (!atomic_load_explicit(&quit, memory_order_relaxed))
    atomic_fetch_add_explicit(&handler_count, 1, memory_order_relaxed);
}

static void *in_handler(void *arg) {
  (void)arg;
  record_self(&info[T_HANDLER], T_HANDLER);
  volatile uint64_t magic = STACK_MAGIC + T_HANDLER; /* on the normal stack */
  info[T_HANDLER].magic_addr = (uintptr_t)&magic;
  size_t alt_size = 256 << 10;
  void *alt = mmap(NULL, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  stack_t ss = {.ss_sp = alt, .ss_size = alt_size, .ss_flags = 0};
  sigaltstack(&ss, NULL);
  info[T_HANDLER].alt_lo = (uintptr_t)alt;
  info[T_HANDLER].alt_hi = (uintptr_t)alt + alt_size;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = usr1_handler;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  pthread_kill(pthread_self(), SIGUSR1); /* returns when quit is set */
  (void)magic;
  return NULL;
}

static void *child(void *arg) {
  atomic_fetch_add(&spawned, 1);
  return arg;
}

static void *spawner(void *arg) {
  (void)arg;
  record_self(&info[T_SPAWNER], T_SPAWNER);
  volatile uint64_t magic = STACK_MAGIC + T_SPAWNER;
  info[T_SPAWNER].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[T_SPAWNER].ready, 1);
  while (!atomic_load(&quit)) {
    pthread_t t[4];
    int n = 0;
    for (int i = 0; i < 4; i++)
      if (pthread_create(&t[n], NULL, child, NULL) == 0) n++;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  }
  (void)magic;
  return NULL;
}

static void *blocker(void *arg) {
  int idx = (int)(intptr_t)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  if (idx == T_BLOCK_REG) {
    record_self(&info[idx], idx);    /* pthread_getattr_np mallocs: registers our cache */
    free(malloc(100));
  } else {
    atomic_store(&info[idx].tid, (int)syscall(SYS_gettid)); /* no malloc in this thread */
  }
  volatile uint64_t magic = STACK_MAGIC + (uint64_t)idx;
  info[idx].magic_addr = (uintptr_t)&magic;
  atomic_store(&info[idx].ready, 1);
  while (!atomic_load_explicit(&block_quit, memory_order_relaxed)) {
  }
  /* Stale stop signals are delivered now, with no stop in progress. */
  pthread_sigmask(SIG_UNBLOCK, &all, NULL);
  (void)magic;
  return NULL;
}

/* ---------------------------------------------------------------- checks while stopped */

static int index_of_tid(int tid) {
  for (int i = 0; i < NT; i++)
    if (atomic_load(&info[i].tid) == tid) return i;
  return -1;
}

struct rctx {
  bool covered[NT];
  bool unstable[NT];   /* covered by a range of a running thread */
  int nranges;
};

static void root_cb(void *ctx, uintptr_t lo, uintptr_t hi, hci_root_kind_t kind) {
  struct rctx *r = ctx;
  r->nranges++;
  bool unstable = hci_root_kind_unstable(kind);
  for (int i = 0; i < NT; i++) {
    uintptr_t a = info[i].magic_addr;
    if (!a || a < lo || a + 8 > hi) continue;
    uint64_t v;
    if (unstable) hci_copy_safe(&v, a, sizeof v); /* a running thread may unmap it */
    else v = *(volatile uint64_t *)a;
    if (v == STACK_MAGIC + (uint64_t)i) {
      r->covered[i] = true;
      r->unstable[i] |= unstable;
    }
  }
}

/* Every task of the process must be in the world. */
static void check_all_listed(const hci_world_t *w) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
  char buf[4096] __attribute__((aligned(8)));
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      const struct dirent64 *d = (const void *)(buf + off); /* getdents64's record */
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int tid = atoi(d->d_name);
      bool found = false;
      for (int i = 0; i < w->nthreads; i++)
        if (w->threads[i].tid == tid && atomic_load(&w->threads[i].state) != HCI_T_EXITED) found = true;
      if (!found) FAILF("tid %d runs but is not in the stopped world", tid);
    }
  }
  close(fd);
}

static bool scan_for(uintptr_t lo, uintptr_t hi, uint64_t value) {
  for (uintptr_t a = (lo + 7) & ~(uintptr_t)7; a + 8 <= hi; a += 8)
    if (*(volatile uint64_t *)a == value) return true;
  return false;
}

typedef struct stop_ctx {
  hci_world_t *w;
  bool phase_b;
  bool main_is_target;   /* phase D: another thread checks, main is stopped like the others */
  int round;
  int nnot;
} stop_ctx_t;

static bool use_ptrace;

static void check_thread(const hci_thread_t *t, int i, bool phase_b, int round) {
  const tinfo_t *ti = &info[i];
  bool blocker = i == T_BLOCK_REG || i == T_BLOCK_ANON;
  if (blocker && use_ptrace) {
    /* ptrace stops a thread whatever its signal mask. */
    if (!t->stopped) FAILF("round %d: %s (tid %d) did not stop with ptrace", round, tname[i], t->tid);
    else if (ti->magic_addr < t->stack_lo || ti->magic_addr >= t->stack_hi)
      FAILF("round %d: %s stack range [%p,%p) misses its local %p", round, tname[i], (void *)t->stack_lo,
            (void *)t->stack_hi, (void *)ti->magic_addr);
    return;
  }
  if (blocker) {
    if (t->stopped || atomic_load(&t->state) != HCI_T_NOT_STOPPED)
      FAILF("round %d: %s (tid %d) blocks every signal but state is %d", round, tname[i], t->tid,
            atomic_load(&t->state));
    if (i == T_BLOCK_REG && !t->in_registry) FAILF("round %d: %s not found in the registry", round, tname[i]);
    if (i == T_BLOCK_REG && (ti->magic_addr < t->stack_lo || ti->magic_addr >= t->stack_hi))
      FAILF("round %d: %s whole-stack range [%p,%p) misses its local %p", round, tname[i], (void *)t->stack_lo,
            (void *)t->stack_hi, (void *)ti->magic_addr);
    return;
  }
  (void)phase_b;
  if (!t->stopped) {
    FAILF("round %d: %s (tid %d) did not stop (state %d)", round, tname[i], t->tid, atomic_load(&t->state));
    return;
  }
  if (t->tp == 0) FAILF("round %d: %s has no thread pointer", round, tname[i]);
  if (i == T_HANDLER) {
    if (!t->on_altstack || t->sp < ti->alt_lo || t->sp >= ti->alt_hi)
      FAILF("round %d: in-handler sp %p not on its altstack [%p,%p) (on_altstack=%d)", round, (void *)t->sp,
            (void *)ti->alt_lo, (void *)ti->alt_hi, t->on_altstack);
    /* The signal stop knows the altstack's bounds; ptrace sees only sp, and
     * scans from there to the end of its mapping (maybe merged with others). */
    if (use_ptrace ? t->stack_lo > t->sp || t->stack_hi < ti->alt_hi
                   : t->stack_lo < ti->alt_lo || t->stack_hi > ti->alt_hi || t->stack_lo > t->sp)
      FAILF("round %d: in-handler stack range [%p,%p) not within its altstack", round, (void *)t->stack_lo,
            (void *)t->stack_hi);
    if (t->nstack_lo > ti->magic_addr || t->nstack_hi <= ti->magic_addr)
      FAILF("round %d: in-handler normal stack [%p,%p) misses %p", round, (void *)t->nstack_lo,
            (void *)t->nstack_hi, (void *)ti->magic_addr);
    if (!scan_for(t->stack_lo, t->stack_hi, STACK_MAGIC + 100))
      FAILF("round %d: in-handler: the handler's local not in the altstack range", round);
    return;
  }
  if (t->sp < ti->stk_lo || t->sp >= ti->stk_hi)
    FAILF("round %d: %s sp %p outside its stack [%p,%p)", round, tname[i], (void *)t->sp, (void *)ti->stk_lo,
          (void *)ti->stk_hi);
  if (t->stack_lo > t->sp || t->stack_hi <= t->sp || t->stack_hi > ti->stk_hi + 65536)
    FAILF("round %d: %s stack range [%p,%p) vs sp %p / stack top %p", round, tname[i], (void *)t->stack_lo,
          (void *)t->stack_hi, (void *)t->sp, (void *)ti->stk_hi);
  if (!scan_for(t->stack_lo, t->stack_hi, STACK_MAGIC + (uint64_t)i))
    FAILF("round %d: %s: magic local not found in its stack range", round, tname[i]);
#if defined(__x86_64__)
  if (i < NSPIN) {
    bool found = false;
    for (int k = 0; k < t->nregs; k++)
      if (t->regs[k] == REG_MAGIC + (uint64_t)i) found = true;
    if (!found) FAILF("round %d: %s: magic register value not among %d saved registers", round, tname[i], t->nregs);
  }
#endif
}

static int stop_cb(void *arg) {
  stop_ctx_t *c = arg;
  hci_world_t *w = c->w;
  hci_lock_all();
  c->nnot = hci_world_stop(w);
  unsigned long before[NSPIN], after[NSPIN];
  for (int i = 0; i < NSPIN; i++) before[i] = atomic_load(&spin_count[i]);
  unsigned long hbefore = atomic_load(&handler_count);

  int seen[NT] = {0};
  for (int k = 0; k < w->nthreads; k++) {
    const hci_thread_t *t = &w->threads[k];
    if (t->is_self) {
      if (t->tid != (int)syscall(SYS_gettid) || k != 0) FAILF("self slot wrong");
      continue;
    }
    int i = index_of_tid(t->tid);
    if (i >= 0) {
      seen[i]++;
      check_thread(t, i, c->phase_b, c->round);
    } else if (!c->phase_b && !t->stopped && atomic_load(&t->state) != HCI_T_EXITED) {
      FAILF("round %d: unnamed thread %d neither stopped nor exited (state %d)", c->round, t->tid,
            atomic_load(&t->state));
    }
  }
  for (int i = 0; i < NT; i++) {
    bool present = (i != T_BLOCK_REG && i != T_BLOCK_ANON) || c->phase_b;
    if (i == T_MAIN) present = c->main_is_target;
    if (present && seen[i] != 1) FAILF("round %d: %s listed %d times", c->round, tname[i], seen[i]);
  }
  int want_method = use_ptrace ? HCI_STOP_PTRACE : HCI_STOP_SIGNAL;
  if (w->method != want_method) FAILF("round %d: stopped with method %d, expected %d", c->round, w->method, want_method);
  int want_not = c->phase_b && !use_ptrace ? 2 : 0;
  if (c->nnot != want_not) FAILF("round %d: %d threads did not stop, expected %d", c->round, c->nnot, want_not);
  check_all_listed(w);

  struct rctx r;
  memset(&r, 0, sizeof r);
  hci_roots_threads(w, (uintptr_t)__builtin_frame_address(0), root_cb, &r);
  for (int i = 0; i < NT; i++) {
    bool present = (i != T_BLOCK_REG && i != T_BLOCK_ANON) || c->phase_b;
    if (i == T_MAIN) present = c->main_is_target;
    if (present && !r.covered[i]) FAILF("round %d: no root range covers %s's local", c->round, tname[i]);
    bool blocker = (i == T_BLOCK_REG || i == T_BLOCK_ANON) && !use_ptrace;
    if (present && blocker && !r.unstable[i])
      FAILF("round %d: %s runs but its range is not marked unstable", c->round, tname[i]);
  }

  /* The world is stopped: nothing may move. */
  struct timespec ts = {0, 3000000};
  nanosleep(&ts, NULL);
  for (int i = 0; i < NSPIN; i++) {
    after[i] = atomic_load(&spin_count[i]);
    if (after[i] != before[i]) FAILF("round %d: spinner %d moved while stopped (%lu -> %lu)", c->round, i,
                                     before[i], after[i]);
  }
  if (atomic_load(&handler_count) != hbefore) FAILF("round %d: the in-handler thread moved while stopped", c->round);

  hci_world_resume(w);
  hci_unlock_all();
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool wait_until(bool (*cond)(void *), void *arg) {
  double deadline = now_s() + 30;
  while (!cond(arg)) {
    if (now_s() > deadline) return false;
    sched_yield();
  }
  return true;
}

static bool spinners_moved(void *arg) {
  unsigned long *base = arg;
  for (int i = 0; i < NSPIN; i++)
    if (atomic_load(&spin_count[i]) == base[i]) return false;
  return true;
}
static bool reads_reached(void *arg) { return atomic_load(&reads_ok) >= *(int *)arg; }
static bool wakeups_reached(void *arg) { return atomic_load(&wakeups) >= *(int *)arg; }
static bool sleeps_past(void *arg) { return atomic_load(&sleeps_ok) > *(int *)arg; }

static void flush_errors(const char *when) {
  if (errlen) {
    fwrite(errbuf, 1, errlen, stderr);
    errlen = 0;
  }
  if (nerr) {
    fprintf(stderr, "FAIL (%s): %d errors\n", when, nerr);
    exit(1);
  }
}

static bool main_is_target;

static void one_stop(hci_world_t *w, bool phase_b, int round) {
  stop_ctx_t c = {w, phase_b, main_is_target, round, 0};
  unsigned long base[NSPIN];
  for (int i = 0; i < NSPIN; i++) base[i] = atomic_load(&spin_count[i]);
  hci_with_loader_lock(stop_cb, &c);
  flush_errors("stopped world");
  /* After resume everything goes on. */
  for (int i = 0; i < NSPIN; i++) base[i] = atomic_load(&spin_count[i]);
  if (!wait_until(spinners_moved, base)) {
    fprintf(stderr, "FAIL: spinners did not resume after round %d\n", round);
    exit(1);
  }
  int want = round + 1;
  char b = 'x';
  if (write(pipefd[1], &b, 1) != 1) abort();
  if (!wait_until(reads_reached, &want)) {
    fprintf(stderr, "FAIL: the reader did not read after round %d (reads %d, errors %d)\n", round,
            atomic_load(&reads_ok), atomic_load(&read_errors));
    exit(1);
  }
  pthread_mutex_lock(&mu);
  cv_round++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  int wk = cv_round;
  if (!wait_until(wakeups_reached, &wk)) {
    fprintf(stderr, "FAIL: the cond waiter did not wake after round %d\n", round);
    exit(1);
  }
  int s = atomic_load(&sleeps_ok);
  if (!wait_until(sleeps_past, &s)) {
    fprintf(stderr, "FAIL: the sleeper did not sleep again after round %d\n", round);
    exit(1);
  }
}

/* Phase D: the check runs on another thread; main waits in pthread_join. */
static hci_world_t *phase_d_world;
static void *phase_d(void *arg) {
  (void)arg;
  for (int round = ROUNDS + 13; round < ROUNDS + 23; round++) one_stop(phase_d_world, false, round);
  return NULL;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  use_ptrace = !(argc > 1 && strcmp(argv[1], "signal") == 0);
  if (!use_ptrace) setenv("HEAP_CHECK_STOP_METHOD", "signal", 1);
  record_self(&info[T_MAIN], T_MAIN);
  volatile uint64_t magic = STACK_MAGIC + T_MAIN;
  info[T_MAIN].magic_addr = (uintptr_t)&magic;
  /* A short deadline keeps phase B quick; generous enough for a loaded machine. */
  setenv("HEAP_CHECK_STOP_TIMEOUT_MS", "700", 1);
  if (pipe(pipefd) != 0) return 1;
  pthread_t th[NT];
  for (int i = 0; i < NSPIN; i++) pthread_create(&th[i], NULL, spinner, (void *)(intptr_t)i);
  pthread_create(&th[T_READER], NULL, reader, NULL);
  pthread_create(&th[T_SLEEPER], NULL, sleeper, NULL);
  pthread_create(&th[T_WAITER], NULL, waiter, NULL);
  pthread_create(&th[T_HANDLER], NULL, in_handler, NULL);
  pthread_create(&th[T_SPAWNER], NULL, spawner, NULL);
  for (int i = 0; i < T_MAIN; i++)
    while (atomic_load(&info[i].ready) == 0) sched_yield();
  if (atomic_load(&info[T_HANDLER].ready) != 1) {
    fprintf(stderr, "FAIL: the USR1 handler does not run on its altstack\n");
    return 1;
  }

  hci_world_t w;
  if (hci_world_init(&w) != 0) {
    fprintf(stderr, "FAIL: hci_world_init\n");
    return 1;
  }
  printf("method %s, stop signal %d, tls [tp%+ld, tp%+ld), pthread %zu\n", use_ptrace ? "ptrace" : "signal", hci_stop_signal(),
         (long)hci_tls_geometry()->lo_off, (long)hci_tls_geometry()->hi_off, hci_tls_geometry()->pthread_size);

  /* Phase A: every thread answers. */
  int exited = 0;
  for (int round = 0; round < ROUNDS; round++) {
    one_stop(&w, false, round);
    exited += w.nexited;
  }
  printf("phase A: %d rounds, %d threads spawned, %d exited during a stop, nanosleep EINTR %d\n", ROUNDS,
         atomic_load(&spawned), exited, atomic_load(&sleep_eintr));

  /* Phase B: two threads block every signal. */
  pthread_t b1, b2;
  pthread_create(&b1, NULL, blocker, (void *)(intptr_t)T_BLOCK_REG);
  pthread_create(&b2, NULL, blocker, (void *)(intptr_t)T_BLOCK_ANON);
  while (!atomic_load(&info[T_BLOCK_REG].ready) || !atomic_load(&info[T_BLOCK_ANON].ready)) sched_yield();
  for (int round = ROUNDS; round < ROUNDS + 3; round++) one_stop(&w, true, round);
  atomic_store(&block_quit, 1);
  pthread_join(b1, NULL);
  pthread_join(b2, NULL);
  atomic_store(&info[T_BLOCK_REG].tid, 0);
  atomic_store(&info[T_BLOCK_ANON].tid, 0);
  printf(use_ptrace ? "phase B: blockers stopped like the others\n"
                    : "phase B: blockers reported as not stopped and scanned whole\n");

  /* Phase C: after the stale signals were delivered, stopping still works. */
  for (int round = ROUNDS + 3; round < ROUNDS + 13; round++) one_stop(&w, false, round);

  main_is_target = true;
  phase_d_world = &w;
  pthread_t d;
  pthread_create(&d, NULL, phase_d, NULL);
  pthread_join(d, NULL);
  main_is_target = false;
  printf("phase D: the main thread stopped by another checking thread\n");

  atomic_store(&quit, 1);
  char q = 'q';
  if (write(pipefd[1], &q, 1) != 1) return 1;
  pthread_mutex_lock(&mu);
  cv_round++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  for (int i = 0; i < T_MAIN; i++) pthread_join(th[i], NULL);
  hci_world_destroy(&w);
  if (use_ptrace && atomic_load(&sleep_eintr)) {
    fprintf(stderr, "FAIL: nanosleep returned EINTR %d times under the ptrace stop\n", atomic_load(&sleep_eintr));
    return 1;
  }
  if (atomic_load(&read_errors) || atomic_load(&sleep_errors)) {
    fprintf(stderr, "FAIL: read errors %d, nanosleep errors %d\n", atomic_load(&read_errors),
            atomic_load(&sleep_errors));
    return 1;
  }
  (void)magic;
  printf("PASS\n");
  return 0;
}
