/* fx_hostile_mod.c - a module that fx_hostile's fifo-module scenario loads
 * from a copy and leaks through (its frame makes the report open the
 * module's file, which the program has replaced by a FIFO), and that its
 * dlopen-poll scenario loads from a thread: with FX_MOD_WAIT_FD set, the
 * constructor waits for a byte the main thread's event loop writes there
 * (a plugin that asks the main loop for something while dlopen holds the
 * loader's lock). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void wait_for_main(void) {
  const char *fd = getenv("FX_MOD_WAIT_FD");
  char c;
  if (fd && read(atoi(fd), &c, 1) < 0) abort();
}

__attribute__((noinline, visibility("default"))) void *fx_hostile_mod_leak(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 0x33, n);
  return p;
}
