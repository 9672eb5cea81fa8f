/* inflate_tool.c - symbolizer/inflate.c on a file, for test_inflate.py.
 *
 * inflate_tool IN SIZE OUT: decodes the zlib stream in file IN into SIZE
 * bytes written to OUT; exit 0 when hci_inflate_zlib accepted it, 1 when
 * it refused it, 2 on a usage or I/O error.  The stream is copied to a
 * buffer of exactly its size, so a read past its end would be seen by
 * ASan/valgrind runs of the tool. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hc_symbolize.h"

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  unsigned char *b = malloc(cap);
  size_t got;
  while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) b = realloc(b, cap *= 2);
  }
  fclose(f);
  if (!b) return NULL;
  unsigned char *exact = malloc(len ? len : 1);
  for (size_t i = 0; exact && i < len; i++) exact[i] = b[i];
  free(b);
  *n = len;
  return exact;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: inflate_tool IN SIZE OUT\n");
    return 2;
  }
  size_t n = 0, size = (size_t)strtoull(argv[2], NULL, 10);
  unsigned char *in = slurp(argv[1], &n);
  unsigned char *out = malloc(size ? size : 1);
  if (!in || !out) return 2;
  if (!hci_inflate_zlib(in, n, out, size)) return 1;
  FILE *f = fopen(argv[3], "wb");
  if (!f || fwrite(out, 1, size, f) != size || fclose(f) != 0) return 2;
  return 0;
}
