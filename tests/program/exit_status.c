/* exit_status.c - leaks 100 bytes, then ends with the status argv[1] (issue 9
 * point 6): "return N" from main, or "exit:N" through exit() from a thread
 * other than main ("thread:N").  Under the checker the leak is reported;
 * the status must be the program's own unless it is 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) static void leak_site(void) {
  sink = malloc(100);
  memset(sink, 0, 100);
  sink = NULL;
}

static void *exiter(void *arg) { exit(atoi(arg)); }

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "0";
  leak_site();
  fprintf(stderr, "exit_status: ending with %s\n", how);
  if (strncmp(how, "exit:", 5) == 0) exit(atoi(how + 5));
  if (strncmp(how, "thread:", 7) == 0) {
    pthread_t t;
    pthread_create(&t, NULL, exiter, (void *)(how + 7));
    pthread_join(t, NULL);
  }
  return atoi(how);
}
