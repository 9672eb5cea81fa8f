// EXPECT: bytes=120 objects=1
/* alloc_getline.c - getline() into a NULL buffer allocates glibc's initial 120
 * bytes for a short line; the stream itself is closed (freed). */
#include <stdio.h>

#include "scenario.h"

static SC_NOINLINE void build(void) {
  static char text[] = "hello\nworld\n";
  FILE *f = fmemopen(text, sizeof text - 1, "r");
  if (!f) exit(2);
  char *line = NULL;
  size_t cap = 0;
  if (getline(&line, &cap, f) != 6) exit(2);
  fclose(f);
  sc_sink = line;
  sc_sink = NULL;
}

int main(void) {
  build();
  sc_end();
  return 0;
}
