/* test_rlimit_as.c - a program under an address-space limit gets about
 * as much heap with the library preloaded as with glibc's malloc.
 *
 * Built without the library.  The parent runs this program twice as a
 * child, once plain (glibc) and once with HC_LIB preloaded; each child
 * lowers its own RLIMIT_AS after start-up (when the library's metadata
 * arena has already reserved its address space: base/meta.c), allocates
 * 1 MiB blocks until malloc gives NULL (which must set ENOMEM), frees
 * them, allocates once more, and writes how many it got.  The library
 * keeps its own image and what its metadata committed (the pagemap's 8 MiB
 * leaf and zero leaf, a 4 MiB chunk: 21-29 MiB); before the reservation's
 * unused part was given back on a refused heap mapping it also kept that
 * part (32 MiB in all), and got about 42 MiB less than glibc.
 *
 * Usage: test_rlimit_as            (the parent; needs HC_LIB)
 *        test_rlimit_as child LIMIT_MIB
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIMIT_MIB 256
#define BLOCK ((size_t)1 << 20)
#define MAXB 4096
/* the library's own image, committed metadata and its own mappings (29 MiB
 * since main 6ee7228, 21 before), and room; without the cut: 42-50 below */
#define SLACK_MIB 36

static int child(long limit_mib) {
  static void *b[MAXB];
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return 10;
  rl.rlim_cur = (rlim_t)limit_mib << 20;
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 11;
  size_t n = 0;
  errno = 0;
  while (n < MAXB) {
    void *p = malloc(BLOCK);
    if (!p) break;
    memset(p, 1, 64);
    b[n++] = p;
  }
  if (n == MAXB) return 12;
  if (errno != ENOMEM) return 13;
  for (size_t i = 0; i < n; i++) free(b[i]);
  void *again = malloc(BLOCK); /* freed memory serves again */
  if (!again) return 14;
  free(again);
  printf("%zu\n", n);
  fflush(stdout);
  return 0;
}

/* Runs `self child LIMIT` with LD_PRELOAD=preload (NULL: unset); the count, or -1. */
static long run(const char *self, const char *preload) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    char lim[32];
    snprintf(lim, sizeof lim, "%d", LIMIT_MIB);
    execl(self, self, "child", lim, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[64] = {0};
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  if (waitpid(pid, &st, 0) != pid) return -1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "child (%s) failed: status %d\n", preload ? preload : "glibc", st);
    return -1;
  }
  return got > 0 ? atol(buf) : -1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "child") == 0) return child(atol(argv[2]));
  const char *lib = getenv("HC_LIB");
  if (!lib || !*lib) {
    fprintf(stderr, "HC_LIB not set\n");
    return 1;
  }
  long g = run("/proc/self/exe", NULL);
  long h = run("/proc/self/exe", lib);
  printf("RLIMIT_AS %d MiB: glibc %ld MiB of 1 MiB blocks, heapcheck %ld MiB\n", LIMIT_MIB, g, h);
  if (g < 0 || h < 0) return 1;
  if (g < LIMIT_MIB / 2) {
    fprintf(stderr, "glibc got only %ld MiB: the test's premise fails\n", g);
    return 1;
  }
  if (h + SLACK_MIB < g) {
    fprintf(stderr, "FAIL: heapcheck got %ld MiB, more than %d below glibc's %ld\n", h, SLACK_MIB, g);
    return 1;
  }
  return 0;
}
