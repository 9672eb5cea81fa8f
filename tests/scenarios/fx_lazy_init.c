/* fx_lazy_init.c - a stand-in for a container's first process, or for a
 * child subreaper, that runs one program and says what it was left with.
 * Not linked with heapcheck (test_adopter.sh).
 *
 * usage: fx_lazy_init never|catch|subreaper PROG ARGS...
 *   never      SIGCHLD left at its default, waits for PROG's pid only: an
 *              orphan it adopts stays a zombie (`tail -f /dev/null` or
 *              `sleep infinity` as pid 1 of a container);
 *   catch      a SIGCHLD handler, reaps every child (tini, bash);
 *   subreaper  PR_SET_CHILD_SUBREAPER, then as never.
 * Once PROG ended it waits (5 s at most) until every other child of its is a
 * zombie (never, subreaper) or reaped (catch), prints
 *   lazy-init MODE: status S, Z zombies left, R adopted reaped
 * and exits with PROG's exit status (or 128 + its signal).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void on_chld(int sig) { (void)sig; }

/* Our children other than reaped ones: *zombies of them are zombies. */
static int children(int *zombies) {
  int n = 0, me = getpid();
  *zombies = 0;
  DIR *d = opendir("/proc");
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *p = strrchr(buf, ')');
    char st;
    int ppid;
    if (!p || sscanf(p + 1, " %c %d", &st, &ppid) != 2 || ppid != me) continue;
    n++;
    if (st == 'Z') ++*zombies;
  }
  closedir(d);
  return n;
}

static void nap_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s never|catch|subreaper PROG ARGS...\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  int catching = !strcmp(mode, "catch");
  if (catching) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
  } else if (!strcmp(mode, "subreaper")) {
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
      perror("PR_SET_CHILD_SUBREAPER");
      return 2;
    }
  } else if (strcmp(mode, "never")) {
    fprintf(stderr, "fx_lazy_init: unknown mode %s\n", mode);
    return 2;
  }
  fflush(stdout);
  pid_t kid = fork();
  if (kid < 0) return 2;
  if (kid == 0) {
    execvp(argv[2], argv + 2);
    perror("execvp");
    _exit(127);
  }
  int st = 0, adopted = 0;
  if (catching) {
    pid_t r;
    while ((r = waitpid(-1, &st, 0)) != kid)
      if (r > 0) adopted++;
  } else {
    while (waitpid(kid, &st, 0) != kid) {
    }
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  int zombies = 0;
  for (int i = 0; i < 500; i++) {
    if (catching) {
      int ws;
      pid_t r;
      while ((r = waitpid(-1, &ws, WNOHANG)) > 0) adopted++;
      if (r < 0) break; /* ECHILD: none left */
    } else if (children(&zombies) == zombies) {
      break;
    }
    nap_ms(10);
  }
  printf("lazy-init %s: status %d, %d zombies left, %d adopted reaped\n", mode, code, zombies, adopted);
  return code;
}
