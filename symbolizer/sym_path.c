/* sym_path.c - source paths as a report prints them.
 * Pure string code: no allocation, no lock.
 */
#include <string.h>

#include "hc_internal.h"
#include "hc_symbolize.h"

/* Lexically removes "." and "dir/.." from an absolute path, in place:
 * "/build/../src/a.c" reads better in a report than what the compiler
 * recorded (a build directory joined with a relative source path). */
void hci_sym_normalize_path(char *p) {
  if (p[0] != '/') return;
  size_t out = 0; /* p[0..out) is the normalized prefix, without a trailing '/' */
  size_t starts[256];
  size_t depth = 0;
  const char *in = p;
  while (*in) {
    while (*in == '/') in++;
    const char *comp = in;
    while (*in && *in != '/') in++;
    size_t len = (size_t)(in - comp);
    if (len == 0 || (len == 1 && comp[0] == '.')) continue;
    if (len == 2 && comp[0] == '.' && comp[1] == '.') {
      if (depth > 0) out = starts[--depth];
      continue;
    }
    if (depth == sizeof starts / sizeof *starts) return; /* absurd depth: leave it as it was */
    starts[depth++] = out;
    p[out++] = '/';
    memmove(p + out, comp, len);
    out += len;
  }
  if (out == 0) p[out++] = '/';
  p[out] = 0;
}
