/* inflate_fixture.c - a leak whose report needs the program's own debug
 * sections, which test_inflate.py makes SHF_COMPRESSED in a copy: it wants
 * this file's name and the leak's line in the report. */
#include <stdlib.h>

void *volatile inflate_fixture_sink;

__attribute__((noinline)) void inflate_fixture_leak(void) {
  inflate_fixture_sink = malloc(48); /* INFLATE_FIXTURE_LEAK_LINE */
  inflate_fixture_sink = NULL;
}

int main(void) {
  inflate_fixture_leak();
  return 0;
}
