/* test_rlimit_as.c - a program under an address-space limit gets about
 * as much heap with the library preloaded as with glibc's malloc; the
 * same under a data limit (RLIMIT_DATA, `ulimit -d`).
 *
 * Built without the library.  The parent runs this program twice as a
 * child, once plain (glibc) and once with HC_LIB preloaded; each child
 * lowers its own limit after start-up (when the library's metadata
 * arena has already reserved its address space: base/meta.c), allocates
 * blocks until malloc gives NULL (which must set ENOMEM), frees them,
 * allocates once more, and writes how many MiB it got.  Two block sizes:
 * 1 MiB, and 1 MiB and a 64-byte header (python's bytearray(1 << 20)),
 * which took 2 MiB of address space each while the heap grew by 2 MiB at
 * a time (page_heap.c, grow): half of glibc's heap.  The library
 * keeps its own image and what its metadata committed (the pagemap's root,
 * zero leaf and leaf, 4 + 2.5 + 2.5 MiB, a 4 MiB chunk); before the reservation's
 * unused part was given back on a refused heap mapping it also kept that
 * part (32 MiB in all), and got about 42 MiB less than glibc.
 * A data limit counts private writable memory only: the pagemap's leaves
 * are read-only but for the granules the heap uses, its zero leaf
 * read-only (pagemap.c), so the library keeps about 8 MiB there (it kept
 * 28.7: the 10 MiB leaf and the 10 MiB zero leaf counted whole).
 *
 * Usage: test_rlimit_as            (the parent; needs HC_LIB)
 *        test_rlimit_as child as|data LIMIT_MIB BLOCK_BYTES
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIMIT_MIB 256
#define MAXB 4096
/* the library's own image, committed metadata and its own mappings, and
 * room: 13-16 MiB below glibc since session 20's 2.5 MiB pagemap leaves
 * (a heap that straddles a 512 MiB boundary needs a second one); with 10
 * MiB leaves 25-28, and 35-38 when it straddled a 2 GiB boundary; without
 * the reservation's cut 42-50. */
#define SLACK_MIB 22
/* Under the data limit: the library's 4 MiB metadata chunk, its heap's
 * first 2 MiB, the root's pages, the leaf's granule (8.3 MiB in all), and
 * room. */
#define SLACK_DATA_MIB 14

static int child(int resource, long limit_mib, size_t block) {
  static void *b[MAXB];
  struct rlimit rl;
  if (getrlimit(resource, &rl) != 0) return 10;
  rl.rlim_cur = (rlim_t)limit_mib << 20;
  if (setrlimit(resource, &rl) != 0) return 11;
  size_t n = 0;
  errno = 0;
  while (n < MAXB) {
    void *p = malloc(block);
    if (!p) break;
    memset(p, 1, 64);
    b[n++] = p;
  }
  if (n == MAXB) return 12;
  if (errno != ENOMEM) return 13;
  for (size_t i = 0; i < n; i++) free(b[i]);
  void *again = malloc(block); /* freed memory serves again */
  if (!again) return 14;
  free(again);
  printf("%zu\n", n * block >> 20);
  fflush(stdout);
  return 0;
}

/* Runs `self child RES LIMIT BLOCK` with LD_PRELOAD=preload (NULL: unset); the MiB it got, or -1. */
static long run(const char *self, const char *res, const char *preload, size_t block) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    else unsetenv("LD_PRELOAD");
    char lim[32], blk[32];
    snprintf(lim, sizeof lim, "%d", LIMIT_MIB);
    snprintf(blk, sizeof blk, "%zu", block);
    execl(self, self, "child", res, lim, blk, (char *)NULL);
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
  if (argc == 5 && strcmp(argv[1], "child") == 0)
    return child(strcmp(argv[2], "data") == 0 ? RLIMIT_DATA : RLIMIT_AS, atol(argv[3]), strtoul(argv[4], NULL, 0));
  const char *lib = getenv("HC_LIB");
  if (!lib || !*lib) {
    fprintf(stderr, "HC_LIB not set\n");
    return 1;
  }
  static const size_t blocks[] = {(size_t)1 << 20, ((size_t)1 << 20) + 64};
  static const struct {
    const char *res, *name;
    long slack;
  } limits[] = {{"as", "RLIMIT_AS", SLACK_MIB}, {"data", "RLIMIT_DATA", SLACK_DATA_MIB}};
  int failed = 0;
  for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++)
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
      long g = run("/proc/self/exe", limits[k].res, NULL, blocks[i]);
      long h = run("/proc/self/exe", limits[k].res, lib, blocks[i]);
      printf("%s %d MiB, %zu-byte blocks: glibc %ld MiB, heapcheck %ld MiB\n", limits[k].name, LIMIT_MIB, blocks[i],
             g, h);
      if (g < 0 || h < 0) return 1;
      if (g < LIMIT_MIB / 2) {
        fprintf(stderr, "glibc got only %ld MiB: the test's premise fails\n", g);
        return 1;
      }
      if (h + limits[k].slack < g) {
        fprintf(stderr, "FAIL: heapcheck got %ld MiB under %s, more than %ld below glibc's %ld\n", h,
                limits[k].name, limits[k].slack, g);
        failed = 1;
      }
    }
  return failed;
}
