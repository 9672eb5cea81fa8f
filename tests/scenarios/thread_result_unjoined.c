// EXPECT: bytes=77 objects=1
/* thread_result_unjoined.c - a thread returns a malloc'ed 234-byte result
 * and exits; main never joins it.  glibc keeps the result in the thread's
 * descriptor until pthread_join, so it is not a leak (valgrind: reachable,
 * it scans the dead thread's stack mapping).  Control: 77. */
#include <dirent.h>
#include <unistd.h>

#include "sc_thread.h"

static void *producer(void *arg) {
  (void)arg;
  void *r = malloc(234);
  sc_scrub_stack();
  return r;
}

/* Threads of the process still alive (the kernel's count). */
static int live_threads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

int main(void) {
  sc_spawn(producer, NULL);
  /* Wait until it has exited (not joined: its descriptor keeps the result). */
  for (int i = 0; i < 10000 && live_threads() != 1; i++) usleep(1000);
  sc_leak(77);
  sc_end();
  return 0;
}
