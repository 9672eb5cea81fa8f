/* leaky.c - the launcher tests' leaking program: 123 bytes from leaky_site,
 * exit status argv[1] (default 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *volatile sink;
__attribute__((noinline)) void leaky_site(void) { sink = malloc(123); sink = NULL; }
__attribute__((noinline)) static void scrub(void) { volatile char b[8192]; for (size_t i = 0; i < sizeof b; i++) b[i] = 0; }
int main(int argc, char **argv) {
  leaky_site();
  scrub();
  fprintf(stderr, "leaky: done\n");
  return argc > 1 ? atoi(argv[1]) : 0;
}
