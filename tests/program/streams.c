/* streams.c - a program whose descriptors and signals the checker must leave
 * alone (issue 9 point 6).  Preloaded with libheapcheck; modes (argv[1]):
 *
 *   closed-start DIR   started with fds 0-2 closed: opens DIR/data.0..2
 *                      (they get fds 0, 1, 2), writes "DATA\n" to each,
 *                      leaks, exits 0.  The report must not land in them.
 *   close-range DIR    close_range(3, ~0U), then DIR/data on every free
 *                      descriptor from 3 up; leaks, exits 0.  The report
 *                      must reach the original stderr, not the data file.
 *   daemon DIR         daemon(0, 0); the daemon writes DIR/started, waits
 *                      (bounded) for DIR/release, writes DIR/exited, exits.
 *                      The caller's $(...) must not wait for the daemon.
 *   log-gone DIR       run with HEAPCHECK_LOG_PATH=DIR/report: closes every
 *                      descriptor above 2 (the kept log file's too) and
 *                      removes DIR/report.<pid>, leaks, exits 0.  The file
 *                      cannot be opened again: the report must reach stderr,
 *                      with a warning.
 *   redirect           puts /dev/null on fd 2 (tcsh does after each
 *                      command), leaks, exits 0.  A piped stderr must still
 *                      get the final report (the process is ending: its
 *                      kept copy is not held up for long).
 *   sigpipe MODE       stderr is a broken pipe (run it through brokenpipe):
 *                      a scoped check that leaks prints its report there;
 *                      MODE default: SIGPIPE's default action, unblocked;
 *                      blocked: SIGPIPE blocked, none pending before;
 *                      pending: SIGPIPE blocked and one raised before.
 *                      The program must live, with its SIGPIPE disposition,
 *                      mask and pending set as they were; prints the verdict
 *                      on stdout and exits 0 when they are.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile sink;

__attribute__((noinline)) static void leak(size_t n) {
  sink = malloc(n);
  memset(sink, 7, n);
  sink = NULL;
}

static void put(int fd, const char *s) {
  if (write(fd, s, strlen(s)) < 0) _exit(90);
}

static void path(char *buf, size_t size, const char *dir, const char *name) {
  snprintf(buf, size, "%s/%s", dir, name);
}

static int closed_start(const char *dir) {
  /* fds 0-2 are closed: these opens get them. */
  for (int i = 0; i < 3; i++) {
    char p[PATH_MAX], name[16];
    snprintf(name, sizeof name, "data.%d", i);
    path(p, sizeof p, dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd != i) return 80 + i; /* they were not closed at start */
    put(fd, "DATA\n");
  }
  leak(64);
  return 0;
}

static int close_range_mode(const char *dir) {
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return 81;
  char p[PATH_MAX];
  path(p, sizeof p, dir, "data");
  int data = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
  if (data != 3) return 82;
  put(data, "DATA\n");
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  int top = rl.rlim_cur > 4096 ? 4096 : (int)rl.rlim_cur;
  for (int fd = 4; fd < top; fd++) dup2(data, fd); /* every number the checker's copy could have had */
  leak(64);
  fprintf(stderr, "close-range: done\n");
  return 0;
}

static int wait_file(const char *p, int tenths) {
  struct stat st;
  for (int i = 0; i < tenths; i++) {
    if (stat(p, &st) == 0) return 1;
    usleep(100000);
  }
  return 0;
}

static int daemon_mode(const char *dir) {
  char started[PATH_MAX], release[PATH_MAX], exited[PATH_MAX];
  path(started, sizeof started, dir, "started");
  path(release, sizeof release, dir, "release");
  path(exited, sizeof exited, dir, "exited");
  fprintf(stderr, "daemon: going to the background\n");
  if (daemon(0, 0) != 0) return 83;
  close(open(started, O_WRONLY | O_CREAT, 0600));
  leak(32);
  wait_file(release, 600); /* at most 60 s, then exit anyway */
  close(open(exited, O_WRONLY | O_CREAT, 0600));
  return 0;
}

typedef void *(*begin_fn)(const char *);
typedef int (*end_fn)(void *, int);

static int sigpipe_mode(const char *mode) {
  sigset_t pipe_set, pend;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  bool blocked = strcmp(mode, "blocked") == 0 || strcmp(mode, "pending") == 0;
  if (blocked) sigprocmask(SIG_BLOCK, &pipe_set, NULL);
  if (strcmp(mode, "pending") == 0) raise(SIGPIPE);
  begin_fn begin = (begin_fn)dlsym(RTLD_DEFAULT, "hc_check_begin");
  end_fn end = (end_fn)dlsym(RTLD_DEFAULT, "hc_check_end");
  if (!begin || !end) return 84;
  void *c = begin("sigpipe");
  leak(48);
  int ok = end(c, 3); /* HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE: written to the broken pipe */
  struct sigaction sa;
  sigaction(SIGPIPE, NULL, &sa);
  sigset_t mask;
  sigprocmask(SIG_BLOCK, NULL, &mask);
  sigpending(&pend);
  int failures = 0;
  if (ok) printf("FAIL: the scoped check found no leak\n"), failures++;
  if (sa.sa_handler != SIG_DFL) printf("FAIL: SIGPIPE's disposition changed\n"), failures++;
  if ((sigismember(&mask, SIGPIPE) != 0) != blocked) printf("FAIL: SIGPIPE's mask changed\n"), failures++;
  if ((sigismember(&pend, SIGPIPE) != 0) != (strcmp(mode, "pending") == 0))
    printf("FAIL: SIGPIPE is %spending\n", sigismember(&pend, SIGPIPE) ? "" : "not "), failures++;
  printf("sigpipe %s: %s\n", mode, failures ? "disturbed" : "untouched");
  fflush(stdout);
  if (strcmp(mode, "pending") == 0) { /* take ours back before exit */
    int sig;
    sigwait(&pipe_set, &sig);
  }
  return failures ? 3 : 0;
}

static int log_gone_mode(const char *dir) {
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) return 81;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/report.%d", dir, (int)getpid());
  if (unlink(p) != 0) return 82;
  leak(64);
  puts("log-gone: done");
  return 0;
}

static int redirect_mode(void) {
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0 || dup2(fd, 2) != 2) return 80;
  close(fd);
  leak(64);
  puts("redirect: done");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *arg = argc > 2 ? argv[2] : "";
  if (strcmp(argv[1], "closed-start") == 0) return closed_start(arg);
  if (strcmp(argv[1], "close-range") == 0) return close_range_mode(arg);
  if (strcmp(argv[1], "daemon") == 0) return daemon_mode(arg);
  if (strcmp(argv[1], "redirect") == 0) return redirect_mode();
  if (strcmp(argv[1], "log-gone") == 0) return log_gone_mode(arg);
  if (strcmp(argv[1], "sigpipe") == 0) return sigpipe_mode(*arg ? arg : "default");
  return 2;
}
