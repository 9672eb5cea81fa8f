/* runstat.c - run one command and record its wall time and peak RSS.
 *
 * Purpose: the measuring wrapper of the benchmark scripts.  /usr/bin/time
 * prints wall time with 10 ms resolution and needs a package; this reads
 * the monotonic clock around fork/exec/wait4 and takes the peak RSS from the
 * rusage wait4 returns (it covers the child and the descendants it waited
 * for).  Environment changes (-e/-u) apply to the child only, so a preloaded
 * allocator or HEAPCHECK never runs inside the wrapper itself.
 *
 * Output: one line "wall_s maxrss_kb status cpu_s minflt" written to the -o file
 * (or stderr), where status is the exit code, or 128+signal when the child
 * was killed (also by the -t timeout), and cpu_s is user + system time (less
 * sensitive than wall time to other load on the machine) and minflt the
 * minor page faults (memory given back to the OS and touched again).  The wrapper exits
 * with that status.
 *
 * Usage: runstat [-o FILE] [-t SECONDS] [-e NAME=VALUE]... [-u NAME]... -- CMD [ARGS...]
 * Locks: none.  Single-threaded; the timeout uses SIGALRM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void on_alarm(int sig) {
  (void)sig;
  if (child_pid > 0) kill((pid_t)child_pid, SIGKILL);
}

static void usage(void) {
  fprintf(stderr, "usage: runstat [-o FILE] [-t SECONDS] [-e NAME=VALUE]... [-u NAME]... -- CMD [ARGS...]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *out = NULL;
  unsigned timeout_s = 0;
  /* Environment edits are collected and applied in the child after fork. */
  char **sets = calloc((size_t)argc, sizeof *sets);
  char **unsets = calloc((size_t)argc, sizeof *unsets);
  int nsets = 0, nunsets = 0;
  int opt;
  if (!sets || !unsets) return 2;
  while ((opt = getopt(argc, argv, "+o:t:e:u:h")) != -1) {
    switch (opt) {
    case 'o': out = optarg; break;
    case 't': timeout_s = (unsigned)atoi(optarg); break;
    case 'e':
      if (!strchr(optarg, '=')) usage();
      sets[nsets++] = optarg;
      break;
    case 'u': unsets[nunsets++] = optarg; break;
    default: usage();
    }
  }
  if (optind >= argc) usage();

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) {
    for (int i = 0; i < nunsets; i++) unsetenv(unsets[i]);
    for (int i = 0; i < nsets; i++) {
      char *eq = strchr(sets[i], '=');
      *eq = 0;
      setenv(sets[i], eq + 1, 1);
    }
    execvp(argv[optind], &argv[optind]);
    fprintf(stderr, "runstat: cannot run %s: %s\n", argv[optind], strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  if (timeout_s) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(timeout_s);
  }
  int st = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &st, 0, &ru) < 0) {
    if (errno != EINTR) { perror("wait4"); return 2; }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  alarm(0);
  int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  FILE *f = out ? fopen(out, "w") : stderr;
  if (!f) { perror(out); return 2; }
  double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  fprintf(f, "%.4f %ld %d %.4f %ld\n", wall, ru.ru_maxrss, status, cpu, ru.ru_minflt);
  if (out) fclose(f);
  free(sets);
  free(unsets);
  return status;
}
