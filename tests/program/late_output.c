/* late_output.c - leaks 100 bytes, then writes output that only the rest of
 * exit delivers, as libgfortran does (its units are buffered in its own
 * memory and flushed by its destructor): a line kept in a buffer of the
 * program's own and written by an exit handler registered in a constructor
 * (so it runs after the checker's handler), and a line printed by a
 * destructor.  argv[1] = "exit0": the destructor then ends the process
 * with _exit(0).  A leaking program's output must be the same as without
 * the checker: only its status changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char pending[64];
static size_t pending_len;
static int exit0;
static void *volatile sink;

static void flush_pending(void) {
  if (write(1, pending, pending_len) < 0) _exit(9);
}

__attribute__((constructor)) static void start(void) { atexit(flush_pending); }

__attribute__((destructor)) static void finish(void) {
  printf("late_output: destructor\n");
  fflush(stdout);
  if (exit0) _exit(0);
}

int main(int argc, char **argv) {
  exit0 = argc > 1 && strcmp(argv[1], "exit0") == 0;
  sink = malloc(100);
  memset(sink, 0, 100);
  sink = NULL;
  printf("late_output: main\n");
  pending_len = (size_t)snprintf(pending, sizeof pending, "late_output: buffered\n");
  return 0;
}
