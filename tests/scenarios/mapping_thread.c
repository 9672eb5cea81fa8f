// EXPECT: bytes=200 objects=20
// EXPECT-STDOUT: scoped: 20 of 20 found their leak
/* mapping_thread.c - a thread keeps mapping, filling, mprotect'ing and
 * unmapping anonymous memory (it stores heap pointers there) while main runs
 * 20 scoped checks, each leaking one 10-byte object: every check must find
 * exactly its leak, and the process must neither fault nor hang; it still
 * runs during the final check.  The thread's own object stays reachable
 * from a global.  With
 * SC_BLOCK_ALL_SIGNALS (mapping_thread_sigblock.c) the thread blocks every
 * signal, so a signal-based stop cannot stop it: its mappings change while
 * the check reads.  Control: 20 leaks of 10 bytes. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scenario.h"

#ifndef SC_BLOCK_ALL_SIGNALS
#define SC_BLOCK_ALL_SIGNALS 0
#endif
#ifndef SC_CHECKS
#define SC_CHECKS 20
#endif

void *volatile thread_obj;

static void *mapper(void *arg) {
  (void)arg;
  if (SC_BLOCK_ALL_SIGNALS) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
  }
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  for (;;) { /* until the process exits: the final check runs meanwhile too */
    void **m = mmap(NULL, 16 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) continue;
    for (size_t i = 0; i < 16 * pg / sizeof(void *); i += 64) m[i] = thread_obj;
    mprotect((char *)m + 4 * pg, 4 * pg, PROT_NONE);
    munmap((char *)m + 8 * pg, 4 * pg);
    /* The rest in two pieces, not munmap(m, 16 pages): the hole above may
     * be another thread's mapping by now (the checker's 16 KiB of task ids
     * fit it exactly; 1 run in 2 crashed on a loaded machine), and
     * unmapping it would be this program's own bug. */
    munmap(m, 8 * pg);
    munmap((char *)m + 12 * pg, 4 * pg);
  }
  return NULL;
}

int main(void) {
  thread_obj = malloc(64);
  void *(*begin)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "hc_check_begin");
  int (*end)(void *, int) = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "hc_check_end");
  pthread_t t;
  if (pthread_create(&t, NULL, mapper, NULL) != 0) return 2;
  int found = 0;
  for (int i = 0; i < SC_CHECKS; i++) {
    void *c = begin && end ? begin("mapping_thread") : NULL;
    sc_leak(10);
    sc_scrub_stack();
    if (c == NULL || !end(c, 0)) found++;
    usleep(1000);
  }
  printf("scoped: %d of %d found their leak\n", found, SC_CHECKS);
  fflush(stdout);
  sc_end();
  return 0;
}
