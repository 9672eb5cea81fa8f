/* test_fork_signals.c - fork where it used to hang: from signal handlers,
 * and next to stdio (issue 9 point 3).  Our own scenarios, written after
 * the situations glibc's tests tst-mallocfork, tst-mallocfork2 and
 * tst-malloc-fork-deadlock put malloc in:
 *
 *   handler   single-threaded; SIGALRM arrives every 200 us from an interval
 *             timer while main allocates and frees (10 signals); the handler forks, the
 *             child allocates nothing and _exits, the handler waits for it.
 *   nested    single-threaded; a sender process sends SIGUSR1 at each step
 *             of main, which alternates malloc/free with fork+wait of its
 *             own, one step just before each fork, so the handler's fork
 *             also interrupts main's fork (prepare, parent and child
 *             handlers run inside one another).
 *   threaded  as handler, with a second thread alive (it blocks every
 *             signal and sleeps), so that fork's prepare handler takes the
 *             library's locks; 40 signals per run.  The handler often
 *             interrupts main inside one of the allocator's locked sections
 *             (a page-heap or sampled allocation): prepare must not wait
 *             for the lock its own thread holds (it hung before).
 *   both      as threaded, but the second thread allocates and frees too
 *             and takes signals as well: both threads' handlers fork, often
 *             at once, one of them interrupted inside a locked section
 *             (prepare held glibc's stdio list lock while it waited for
 *             our lock; the other's fork waited for the list lock: a hang).
 *   exit      as both, but the handler calls exit(0) at the 20th signal
 *             (a SIGTERM handler's shape): under HEAPCHECK the exit check
 *             then runs on a thread whose interrupted frame may hold one of
 *             the library's locks; it must say it could not complete
 *             (status 125) instead of waiting for that lock (it hung).
 *   malloc    SIGALRM every 200 us on main, whose handler mallocs and frees
 *             (not async-signal-safe, but common: a handler that formats a
 *             message); a second thread allocates in a loop (SIGALRM
 *             blocked); 200 k live objects and a leak; main returns with the
 *             timer running.  Under HEAPCHECK the handler ran on the checking
 *             thread while it or a stopped thread held the lock its malloc
 *             needed: the exit check hung.  Main allocates nothing while the
 *             timer runs: a handler's malloc that interrupts an allocator
 *             slow path holding a lock on its own thread deadlocks with any
 *             allocator (glibc's too), and that is not what this tests.
 *   stdio     four threads loop on getline over a file, fflush(NULL) and
 *             malloc/free while main forks; each child allocates, frees,
 *             calls fflush(NULL) and _exits.
 *
 * usage: test_fork_signals [SCENARIO [RUNS]]: RUNS fresh processes of each
 * scenario (default all of them, 100 runs), each bounded by a watchdog of
 * 60 s (a hang is a failure, not a timing measurement).  The environment
 * (HEAPCHECK=normal...) is passed to every run, so a run is also checked
 * for leaks at exit; its exit status must be 0. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hc_check.h"

#define SLOTS 257
static void *slots[SLOTS];
static _Atomic int handled; /* forks done by handlers, any thread */

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

/* Forks a child that exits at once and waits for it (async-signal-safe). */
static void fork_and_wait(void) {
  int saved = errno;
  pid_t pid = fork();
  if (pid < 0) {
    say("fork failed\n");
    _exit(3);
  }
  if (pid == 0) _exit(0);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    say("child of a handler's fork failed\n");
    _exit(4);
  }
  handled++;
  errno = saved;
}

static int signals_wanted = 10;

static void on_signal(int sig) {
  fork_and_wait();
  /* A fork and wait outlasts the 200 us period, so the next SIGALRM is
   * always pending when this handler returns: main would never run again.
   * The handler stops the timer itself once enough have been handled. */
  if (sig == SIGALRM && handled >= signals_wanted) {
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
  }
}

/* One step on a thread's slots: a random one freed and refilled. */
static void churn(void **in, unsigned *seed) {
  int k = rand_r(seed) % SLOTS;
  free(in[k]);
  in[k] = malloc((size_t)(rand_r(seed) % 70000));
  if (!in[k]) {
    say("malloc failed\n");
    _exit(5);
  }
}

static void free_slots(void **in) {
  for (int k = 0; k < SLOTS; k++) {
    free(in[k]);
    in[k] = NULL;
  }
}

static int run_handler(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, NULL);
  unsigned seed = 1;
  while (handled < signals_wanted) churn(slots, &seed);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  free_slots(slots);
  return 0;
}

static void *sleeper(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

/* The sleeper is born with every signal blocked, so only main's handler
 * forks.  (Two threads forking from handlers at once, one of them
 * interrupted inside malloc, can deadlock with glibc's malloc as well: the
 * other's fork holds glibc's stdio list lock while its prepare handlers
 * wait, and the interrupted one's fork waits for that list lock.) */
static int run_threaded(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t t;
  int rc = pthread_create(&t, NULL, sleeper, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return 6;
  signals_wanted = 40;
  return run_handler();
}

static atomic_int churner_stop;

static void *churner(void *arg) {
  (void)arg;
  static void *mine[SLOTS];
  unsigned seed = 7;
  while (!atomic_load(&churner_stop)) churn(mine, &seed);
  free_slots(mine);
  return NULL;
}

static int run_both(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, churner, NULL) != 0) return 6;
  signals_wanted = 40;
  int rc = run_handler();
  atomic_store(&churner_stop, 1);
  pthread_join(t, NULL);
  return rc;
}

/* exit: SIGALRM's handler calls exit(0) at the 20th signal while both
 * threads churn, so it often interrupts a locked section of the allocator
 * on its own thread.  The exit check used to wait for the lock that thread
 * holds (a hang); it now says it could not complete (status 125). */
static atomic_int exit_signals;
static void on_signal_exit(int sig) {
  (void)sig;
  if (atomic_fetch_add(&exit_signals, 1) + 1 == 20) exit(0);
}

static int run_exit(void) {
  struct sigaction sa = {.sa_handler = on_signal_exit};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  pthread_t t;
  if (pthread_create(&t, NULL, churner, NULL) != 0) return 6;
  struct itimerval it = {{0, 500}, {0, 500}};
  setitimer(ITIMER_REAL, &it, NULL);
  unsigned seed = 3;
  for (;;) churn(slots, &seed);
}

/* malloc: SIGALRM's handler allocates and frees; it runs on main only (the
 * churner blocks the signal), and main allocates nothing while the timer
 * runs, so the handler interrupts no allocator code of ours - except the
 * exit check's, which must not let it run while it holds the locks. */
static atomic_uint malloc_signals;
static void on_signal_malloc(int sig) {
  (void)sig;
  unsigned k = atomic_fetch_add(&malloc_signals, 1);
  void *p = malloc(32 + (k & 255));
  free(p);
}

static void *small_churner(void *arg) {
  (void)arg;
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alrm, NULL);
  for (;;) {
    void *p = malloc(64);
    free(p);
  }
  return NULL;
}

static void **live; /* 200 k objects: the exit check takes long enough for signals to arrive */
void *volatile sink;

static int run_malloc(void) {
  live = malloc(200000 * sizeof *live);
  if (!live) return 5;
  for (int i = 0; i < 200000; i++) live[i] = malloc(24 + (size_t)(i & 63));
  /* A leak: under HEAPCHECK the world stays stopped through the report
   * (status 1), the longest time a handler could have run. */
  sink = malloc(77);
  sink = NULL;
  pthread_t t;
  if (pthread_create(&t, NULL, small_churner, NULL) != 0) return 6;
  struct sigaction sa = {.sa_handler = on_signal_malloc, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &it, NULL);
  while (atomic_load(&malloc_signals) < 200) {
  }
  return 0; /* the timer and the churner still run through the exit check */
}

static int run_nested(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  pid_t self = getpid();
  /* Main's steps, shared with the sender, which sends one signal per step.
   * A sender that never paused kept a signal pending through every
   * handler (each forks and waits), so one was delivered at every
   * sigreturn and main never ran again: a livelock of the test itself,
   * with glibc's malloc too, that hung it whenever the sender kept a CPU. */
  atomic_int *steps = mmap(NULL, sizeof *steps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (steps == MAP_FAILED) {
    say("mmap failed\n");
    return 1;
  }
  pid_t sender = fork();
  if (sender == 0) {
    for (int last = 0;;) {
      int now = atomic_load(steps);
      if (now == last) {
        if (getppid() != self) _exit(0);
        sched_yield();
        continue;
      }
      last = now;
      if (kill(self, SIGUSR1) != 0) _exit(0);
    }
  }
  unsigned seed = 2;
  for (int i = 0; handled < 30 || i < 100; i++) {
    atomic_fetch_add(steps, 1);
    churn(slots, &seed);
    if (i % 4 == 0) {
      /* A step just before fork: the signal it sends arrives while main
       * is in fork (the clone returns between _Fork and the parent's
       * handlers), so the handler's fork runs inside main's. */
      atomic_fetch_add(steps, 1);
      pid_t pid = fork();
      if (pid == 0) _exit(0);
      int st;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "main's fork child: status %#x", st);
    }
  }
  signal(SIGUSR1, SIG_IGN);
  kill(sender, SIGKILL);
  waitpid(sender, NULL, 0);
  free_slots(slots);
  return failures != 0;
}

static atomic_int stop;
static const char *lines_path;

static void *stdio_worker(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  void *mine[16] = {0};
  while (!atomic_load(&stop)) {
    FILE *f = fopen(lines_path, "r");
    if (!f) {
      say("fopen failed\n");
      _exit(6);
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
      int k = rand_r(&seed) % 16;
      free(mine[k]);
      mine[k] = malloc(strlen(line) + (size_t)(rand_r(&seed) % 4096));
    }
    free(line);
    fclose(f);
    fflush(NULL);
  }
  for (int k = 0; k < 16; k++) free(mine[k]);
  return NULL;
}

static int run_stdio(void) {
  char path[] = "/tmp/hc_fork_stdio_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
  if (fd < 0) return 1;
  FILE *w = fdopen(fd, "w");
  for (int i = 0; i < 500; i++) fprintf(w, "line %d of the file the workers read with getline\n", i);
  fclose(w);
  lines_path = path;
  pthread_t th[4];
  for (uintptr_t i = 0; i < 4; i++) pthread_create(&th[i], NULL, stdio_worker, (void *)(i + 1));
  for (int i = 0; i < 30; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      void *p = malloc(100);
      free(p);
      fflush(NULL);
      _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child: status %#x", st);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  unlink(path);
  return failures != 0;
}

/* Runs `self scenario --one` as a fresh process, killed after 60 s. */
static int run_once(const char *self, const char *scenario) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", self, scenario, "--one", (char *)NULL);
    _exit(127);
  }
  for (int waited_ms = 0;; waited_ms += 10) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (waited_ms >= 60000) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  static const char *const all[] = {"handler", "nested", "stdio", "threaded", "both", "exit", "malloc"};
  if (argc >= 3 && strcmp(argv[2], "--one") == 0) {
    if (strcmp(argv[1], "handler") == 0) return run_handler();
    if (strcmp(argv[1], "nested") == 0) return run_nested();
    if (strcmp(argv[1], "stdio") == 0) return run_stdio();
    if (strcmp(argv[1], "threaded") == 0) return run_threaded();
    if (strcmp(argv[1], "both") == 0) return run_both();
    if (strcmp(argv[1], "exit") == 0) return run_exit();
    if (strcmp(argv[1], "malloc") == 0) return run_malloc();
    return 2;
  }
  int runs = argc >= 3 ? atoi(argv[2]) : 100;
  /* A checked exit from a handler that interrupted a locked section cannot
   * check: HEAP_CHECK_ERROR_EXIT_CODE's 125, never a hang. */
  bool checked = getenv("HEAPCHECK") != NULL;
  for (int s = 0; s < 7; s++) {
    if (argc >= 2 && strcmp(argv[1], all[s]) != 0) continue;
    int ok = 0, incomplete = 0;
    for (int i = 0; i < runs; i++) {
      int rc = run_once(argv[0], all[s]);
      if (rc == 125 && checked && s == 5) incomplete++;
      if (rc == 0 || (rc == 125 && checked && s == 5) || (rc == 1 && checked && s == 6)) ok++;
      else fprintf(stderr, "%s run %d: %s %d\n", all[s], i, rc < 0 ? "hung (killed after 60 s)" : "exit status", rc);
      if (rc < 0) break; /* one hang fails the scenario; don't wait 100 times */
    }
    printf("%s: %d of %d runs passed (%d could not check)\n", all[s], ok, runs, incomplete);
    CHECK(ok == runs, "%s: %d of %d runs passed", all[s], ok, runs);
  }
  return failures != 0;
}
