// EXPECT: bytes=12 objects=1
/* alloc_asprintf.c - asprintf of "12345-abcde" leaked: libc sizes the result to
 * strlen + 1 = 12 bytes (its temporary buffers are freed). */
#include <stdio.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  char *s = NULL;
  if (asprintf(&s, "%d-%s", 12345, "abcde") != 11) exit(2);
  sc_sink = s;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
