/* fx_exhausted.c - a program that runs out of memory before main.
 *
 * Its constructor lowers RLIMIT_AS to 16 MiB above what the process has
 * mapped and allocates blocks of each size until malloc gives NULL, keeping
 * them all (a chain from a global: reachable).  glibc's at-exit list then
 * cannot grow either (its new blocks come from calloc): the checker's
 * handlers registered after that (start_main's, after every constructor)
 * partly fail.  main raises the limit again, frees the chain, and ends with
 * status 3 (exit, or a return from main with "return").  Under the checker
 * the process must end with that status, the check run or skipped with a
 * note, never hang (test_exhausted.sh runs it under a watchdog).
 *
 * Usage: fx_exhausted [return]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void **chain;
static long blocks;
static struct rlimit saved;

static long vm_size_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmSize:", 7) == 0) kb = strtol(line + 7, NULL, 10);
  if (f) fclose(f);
  return kb;
}

__attribute__((constructor)) static void exhaust(void) {
  long kb = vm_size_kb();
  if (kb <= 0 || getrlimit(RLIMIT_AS, &saved) != 0) return;
  struct rlimit rl = saved;
  rl.rlim_cur = ((rlim_t)kb << 10) + ((rlim_t)16 << 20);
  if (setrlimit(RLIMIT_AS, &rl) != 0) return;
  /* Large blocks first, then every size up to 4 KiB into what is left (a
   * size class's objects held elsewhere, in central lists, drained too). */
  for (size_t size = 1 << 20; size >= 16; size = size > 4096 ? size / 4 : size - 16)
    for (;;) {
      void **p = malloc(size);
      if (!p) break;
      *p = chain;
      chain = p;
      blocks++;
    }
}

int main(int argc, char **argv) {
  setrlimit(RLIMIT_AS, &saved);
  long n = 0;
  while (chain) {
    void **next = *chain;
    free(chain);
    chain = next;
    n++;
  }
  printf("exhausted: %ld blocks before main, %ld freed\n", blocks, n);
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "return") == 0) return 3;
  exit(3);
}
