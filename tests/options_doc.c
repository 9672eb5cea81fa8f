/* options_doc.c - the variable table of docs/options.md, generated from the
 * options table (base/hc_options.h).
 *
 *   options_doc --check FILE   exit 0 when FILE's generated block is exactly
 *                              the table; 1 (and the first differing line)
 *                              when it differs or is missing
 *   options_doc --write FILE   rewrite the block (tools/gen-options-doc.sh)
 *   options_doc                print the table
 * The block lies between the lines BEGIN and END below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_base.h"

#define BEGIN "<!-- options table: generated from base/hc_options.h by tools/gen-options-doc.sh -->"
#define END "<!-- end of options table -->"

static const char *type_name(hci_opt_type_t t) {
  return t == HCI_OPT_INT ? "integer" : t == HCI_OPT_BOOL ? "boolean" : "string";
}

/* The rows of one level of the table. */
static size_t rows(char *out, size_t cap, const hci_opt_info_t *t, int count) {
  size_t n = 0;
  for (int i = 0; i < count && n < cap; i++) {
    const hci_opt_info_t *o = &t[i];
    char def[64], range[64] = "";
    if (o->def_text) snprintf(def, sizeof def, "%s", o->def_text);
    else if (o->type == HCI_OPT_BOOL) snprintf(def, sizeof def, "%s", o->def ? "true" : "false");
    else snprintf(def, sizeof def, "%lld", o->def);
    if (o->type == HCI_OPT_INT) snprintf(range, sizeof range, "%lld to %lld", o->min, o->max);
    n += (size_t)snprintf(out + n, cap - n, "| `%s` | %s | %s | %s | %s/ | %s |\n", o->name, type_name(o->type),
                          def, range, o->owner, o->doc);
  }
  return n;
}

static size_t table(char *out, size_t cap) {
  size_t n = 0;
  n += (size_t)snprintf(out + n, cap - n, "%s\n| variable | type | default | range | read by | meaning |\n"
                                           "| --- | --- | --- | --- | --- | --- |\n", BEGIN);
  n += rows(out + n, cap - n, hci_options, HCO_COUNT);
  n += (size_t)snprintf(out + n, cap - n,
                        "\nThe keys of `LSAN_OPTIONS` (and of `__lsan_default_options()`), the table's second level "
                        "(`HC_LSAN_OPTIONS`; defaults: LeakSanitizer's):\n\n"
                        "| key | type | default | range | read by | meaning |\n| --- | --- | --- | --- | --- | --- |\n");
  n += rows(out + n, cap - n, hci_lsan_options, HCL_COUNT);
  n += (size_t)snprintf(out + n, cap - n, "%s\n", END);
  return n;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)sz + 1);
  *len = fread(b, 1, (size_t)sz, f);
  b[*len] = 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  static char want[1 << 16];
  size_t wn = table(want, sizeof want);
  if (argc < 3) {
    fwrite(want, 1, wn, stdout);
    return 0;
  }
  size_t len;
  char *doc = slurp(argv[2], &len);
  if (!doc) {
    fprintf(stderr, "options_doc: cannot read %s\n", argv[2]);
    return 1;
  }
  char *b = strstr(doc, BEGIN), *e = b ? strstr(b, END) : NULL;
  if (!b || !e) {
    fprintf(stderr, "options_doc: %s has no generated options table (run tools/gen-options-doc.sh)\n", argv[2]);
    return 1;
  }
  e += strlen(END) + (e[strlen(END)] == '\n');
  if (strcmp(argv[1], "--write") == 0) {
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    fwrite(doc, 1, (size_t)(b - doc), f);
    fwrite(want, 1, wn, f);
    fwrite(e, 1, len - (size_t)(e - doc), f);
    return fclose(f) != 0;
  }
  size_t have = (size_t)(e - b);
  if (have == wn && memcmp(b, want, wn) == 0) {
    printf("docs match the options table (%d variables, %d LSAN_OPTIONS keys)\n", HCO_COUNT, HCL_COUNT);
    return 0;
  }
  /* The first line that differs. */
  const char *x = b, *y = want;
  while (*x && *y && *x == *y) x++, y++;
  while (x > b && x[-1] != '\n') x--, y--;
  fprintf(stderr, "options_doc: %s differs from base/hc_options.h (run tools/gen-options-doc.sh)\n  docs:  %.*s\n  table: %.*s\n",
          argv[2], (int)strcspn(x, "\n"), x, (int)strcspn(y, "\n"), y);
  return 1;
}
