/* fx_job_stop.c - job control reaches a process while a check has its
 * threads stopped.  Run by test_job_stop.sh, linked with libheapcheck and
 * -static.
 *
 * The parent forks a child that holds many live objects (so its checks
 * last a while), runs two idle threads and leaks 48 bytes.  Once a thread
 * of the child is traced (the check's ptrace stop: TracerPid in
 * /proc/<pid>/task/<tid>/status), the parent sends SIGSTOP and waits for
 * the stop with waitpid(WUNTRACED), as a shell's job control, a supervisor
 * or a debugger front end does; then SIGCONT, a second SIGSTOP and
 * SIGCONT, and the child's end.  Every wait is bounded (10 s): a stop
 * never reported is a failure, not a hang.
 *
 *   fx_job_stop exit     the child's exit check is the one stopped; it
 *                        exits 0 after the leak (status 1 under HEAPCHECK)
 *   fx_job_stop scoped   a scoped check (hc_check_begin/end) is the one
 *                        stopped; the child then exits 0 with no leak left
 *
 * Prints "stop 1: reported" (or "NOT reported"), the same for stop 2
 * ("reported" or "ended": the check may be over by then), and "child
 * status N"; exits 2 when a stop was not reported, 3 when no check was
 * seen in progress (three tries, more objects each time).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <heapcheck.h>

static void *idle(void *arg) {
  for (;;) pause();
  return arg;
}

static void *volatile sink;

static void child(long n, int ready, int scoped) {
  pthread_t t;
  pthread_create(&t, NULL, idle, NULL);
  pthread_create(&t, NULL, idle, NULL);
  void **a = malloc((size_t)n * sizeof *a);
  for (long i = 0; i < n; i++) a[i] = malloc(32);
  sink = a;
  if (scoped) {
    hc_check_t *c = hc_check_begin("job_stop");
    if (write(ready, "x", 1) != 1) _exit(9);
    hc_check_end(c, HC_CHECK_REPORT);
    hc_check_free(c);
    exit(0);
  }
  sink = malloc(48); /* the leak */
  sink = a;
  if (write(ready, "x", 1) != 1) _exit(9);
  exit(0);
}

/* Whether a thread of pid is traced (a check's ptrace stop). */
static int traced(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sp[128], line[256];
    snprintf(sp, sizeof sp, "/proc/%d/task/%s/status", (int)pid, e->d_name);
    FILE *f = fopen(sp, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "TracerPid:", 10)) found = atoi(line + 10) != 0;
    fclose(f);
  }
  closedir(d);
  return found;
}

static void on_alarm(int sig) { (void)sig; }

/* waitpid(pid, WUNTRACED) for at most 10 s: 1 stopped, 0 ended (*st its
 * status), -1 neither. */
static int wait_stop(pid_t pid, int *st) {
  alarm(10);
  pid_t r = waitpid(pid, st, WUNTRACED);
  alarm(0);
  if (r != pid) return -1;
  return WIFSTOPPED(*st) ? 1 : 0;
}

/* SIGSTOP and the wait for it (stop `which`); exits 2 when not reported. */
static int stop_once(pid_t pid, int which, int *st) {
  kill(pid, SIGSTOP);
  int r = wait_stop(pid, st);
  printf("stop %d: %s\n", which, r == 1 ? "reported" : r == 0 ? "ended" : "NOT reported");
  if (r < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    exit(2);
  }
  return r;
}

int main(int argc, char **argv) {
  int scoped = argc > 1 && !strcmp(argv[1], "scoped");
  struct sigaction sa = {0};
  sa.sa_handler = on_alarm; /* no SA_RESTART: the wait returns EINTR */
  sigaction(SIGALRM, &sa, NULL);
  for (long n = 1000000, tries = 0; tries < 3; tries++, n *= 2) {
    int p[2];
    if (pipe(p) != 0) return 9;
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      child(n, p[1], scoped);
    }
    close(p[1]);
    char b;
    if (read(p[0], &b, 1) != 1) return 9;
    close(p[0]);
    struct timespec ms = {0, 1000000};
    int seen = 0;
    for (int i = 0; i < 10000 && !(seen = traced(pid)); i++) {
      if (waitpid(pid, NULL, WNOHANG) == pid) break;
      nanosleep(&ms, NULL);
    }
    if (!seen) {
      waitpid(pid, NULL, 0);
      continue;
    }
    int st = 0, ended = stop_once(pid, 1, &st) == 0;
    if (!ended) {
      kill(pid, SIGCONT);
      ended = stop_once(pid, 2, &st) == 0;
      if (!ended) kill(pid, SIGCONT);
    }
    if (!ended && waitpid(pid, &st, 0) != pid) return 9;
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
  }
  printf("no check seen in progress\n");
  return 3;
}
