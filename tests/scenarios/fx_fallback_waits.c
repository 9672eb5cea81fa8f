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
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>

#include <heapcheck.h>

enum { K_EPOLL, K_EPOLL_P, K_EPOLL_PNULL, K_POLL, K_PPOLL, K_PPOLL_NULL, K_SELECT, K_PSELECT, K_PAUSE, K_SIGSUSPEND,
       K_N };
static const char *const names[K_N] = {"epoll_wait", "epoll_pwait", "epoll_pwait(NULL)", "poll", "ppoll",
                                       "ppoll(NULL)", "select", "pselect", "pause", "sigsuspend"};
static const bool masked[K_N] = {false, true, false, false, true, false, false, true, false, true};
static int epfd, rfd;
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

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  int p[2];
  if (pipe(p) || (epfd = epoll_create1(0)) < 0) return 77;
  rfd = p[0];
  struct epoll_event ev = {.events = EPOLLIN};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, rfd, &ev)) return 77;
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
