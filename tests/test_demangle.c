/* test_demangle.c - symbolizer/demangle.c against c++filt, and on hostile input.
 *
 * Usage: test_demangle NAMES_FILE CXXFILT
 *  1. every name of NAMES_FILE (real symbols, tests/symbolize/demangle_names.txt)
 *     is demangled and compared with what CXXFILT prints for it, run now on
 *     the same file: each must be demangled, and identically.  No c++filt
 *     (binutils) is a failure, not a skip;
 *     The same for a few hand-written names of constructs the libraries
 *     lack (features[]: reference temporaries, TLS wrappers, construction
 *     vtables, covariant thunks, operator new/delete/"", vectors, _Float16,
 *     vendor qualifiers, complex, template constructors...);
 *  2. names the demangler must refuse (unsupported constructs, malformed
 *     and truncated names, symbols that are not C++) give false and an empty
 *     output;
 *  3. bounds: every prefix of every table name is demangled without a crash;
 *     an output buffer one byte short gives false and nothing is written
 *     past it; hostile shapes (20000 nested pointers, substitution chains
 *     whose text doubles at each step, deep template nesting) are refused,
 *     not expanded; 3000 substitutions fit a big buffer, not a small one.
 * Exit 0 when all pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_demangle.h"

static hci_demangle_work_t work;
static int failures, checks;
static char out[65536 + 64];

#define CHECK(cond, ...)                                  \
  do {                                                    \
    checks++;                                             \
    if (!(cond)) {                                        \
      failures++;                                         \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
      printf(__VA_ARGS__);                                \
      printf("\n");                                       \
    }                                                     \
  } while (0)

static char **read_names(const char *path, int *n) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return NULL;
  char **v = NULL;
  int cap = 0;
  char line[20000];
  *n = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (line[0] == '#' || line[0] == 0) continue;
    if (*n == cap) v = realloc(v, (size_t)(cap = cap * 2 + 256) * sizeof *v);
    v[(*n)++] = strdup(line);
  }
  fclose(f);
  return v;
}

/* c++filt's line for each name, run now on a file of the names */
static char **run_cxxfilt(const char *cxxfilt, char **names, int n) {
  char tmpl[] = "/tmp/test_demangle.XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  for (int i = 0; i < n; i++) fprintf(f, "%s\n", names[i]);
  fclose(f);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' < '%s'", cxxfilt, tmpl);
  FILE *p = popen(cmd, "r");
  char **v = calloc((size_t)n, sizeof *v);
  static char line[200000];
  int k = 0;
  while (p && k < n && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    v[k++] = strdup(line);
  }
  int st = p ? pclose(p) : -1;
  unlink(tmpl);
  if (st != 0 || k != n) {
    printf("FAIL: %s gave %d lines of %d (status %d): c++filt (binutils) is needed\n", cxxfilt, k, n, st);
    return NULL;
  }
  return v;
}

static bool dm(const char *s, size_t cap) {
  memset(out + cap, 0x5a, 64);
  bool ok = hci_demangle(s, out, cap, &work);
  for (int i = 0; i < 64; i++)
    if ((unsigned char)out[cap + i] != 0x5a) {
      CHECK(0, "wrote past cap %zu for %s", cap, s);
      break;
    }
  if (ok) CHECK(strlen(out) < cap, "length %zu >= cap %zu for %s", strlen(out), cap, s);
  else CHECK(cap == 0 || out[0] == 0, "refusal left text for %s", s);
  return ok;
}

static void test_table(char **names, char **want, int n) {
  int same = 0;
  for (int i = 0; i < n; i++) {
    bool ok = dm(names[i], 65536);
    CHECK(ok, "refused %s (c++filt: %s)", names[i], want[i]);
    if (!ok) continue;
    CHECK(strcmp(out, want[i]) == 0, "%s\n  ours:     %s\n  c++filt:  %s", names[i], out, want[i]);
    same += strcmp(out, want[i]) == 0;
  }
  printf("table: %d of %d names demangled as c++filt does\n", same, n);
}

/* constructs the real table lacks, checked against c++filt like it */
static const char *const features[] = {
  "_ZN1AC1IiEET_", "_ZN1AC2IiEET_", "_Z1fU3fooi", "_Z1fPU3fooKi", "_ZGRZ1fvE1x_", "_ZTHN1A1xE",
  "_ZTW1x", "_ZTCN1A1BE0_N1C1DE", "_ZTch0_h8_N1A1fEv", "_ZTcv0_n16_h8_N1A1fEv", "_ZN1AnwEm",
  "_ZN1AdlEPv", "_ZN1AnaEm", "_ZN1AdaEPv", "_ZN1AixEi", "_ZN1AclEv", "_ZNK1AcviEv", "_Zli3_kmy",
  "_Z1fDv4_f", "_Z1fDF16_", "_Z1fDF32x", "_ZN1AUt0_E", "_ZN3fooB5cxx11B3abcEv",
  "_Z3foov.lto_priv.0", "_Z3foov.constprop.0.isra.0", "_Z1fM1AKFivE", "_Z1fPFPFivEcE",
  "_Z1fIiEPFivEv", "_Z1fRKA3_i", "_Z1fPrVKi", "_ZNKR1A1fEv", "_ZNO1A1fEv", "_Z1fIJEEvDpT_",
  "_Z1fIRiEvOT_", "_ZZ1fvEs", "_ZZ1fvEd_1x", "_Z1fILDnEEvv", "_Z1fILc97EEvv", "_Z1fILin5EEvv",
  "_Z1fCf", "_Z1fGf", "_Z1fSsSiSoSdSaSb", "_ZNSsC1Ev", "_ZNSoD1Ev", "_ZNSdD0Ev",
  "_ZZ1fIiEvT_ENKUlT_E_clIiEEDaS0_",
};

static void test_refusals(void) {
  static const char *const bad[] = {
    "", "_", "_Z", "main", "_Zv", "_Z1", "_Z3fo", "_Z9foo", "_ZN3foo3barEv_junk",
    "_Z3fooS_", "_Z3fooS0_", "_Z3fooT_", /* no substitution, no template in scope */
    "_Z1fIiEvT0_", "_ZC1v", /* no class name before C1 */
    "_Z1fIJiEEvDTflplfp_EE", /* fold expression: not supported */
    "_ZN1AcvT_IiEEv",        /* template conversion operator: not supported */
    "_Z1fDB8_", "_ZW3modE1fv", /* _BitInt, modules: not supported */
    "_ZNKSt6vectorIiSaIiEE4sizeEv.", "_Z1fv.@", "_Z1fA", "_Z1fPF", "_Z1fIiEvLi", "_Z3fooILi5", "_Z1fM1A",
    "_ZTh", "_ZThn8_", "_ZTv0_n24_", "_ZGV", "_ZTC1A0_", "_ZZ1fvE", "_Z1fUl",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(!dm(bad[i], 4096), "accepted %s as %s", bad[i], out);
}

static void test_bounds(char **names, int n) {
  char buf[20000];
  for (int i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (len >= sizeof buf) continue;
    for (size_t k = 0; k < len; k++) {
      memcpy(buf, names[i], k);
      buf[k] = 0;
      dm(buf, 65536); /* prefixes: no crash, bounded output (checked in dm) */
    }
    if (dm(names[i], 65536)) {
      size_t need = strlen(out) + 1;
      CHECK(!dm(names[i], need - 1), "fits in %zu bytes but needs %zu: %s", need - 1, need, names[i]);
      CHECK(dm(names[i], need), "does not fit in %zu bytes: %s", need, names[i]);
    }
  }
  /* hostile shapes */
  static char big[70000];
  strcpy(big, "_Z1f");
  memset(big + 4, 'P', 20000);
  strcpy(big + 20004, "i");
  CHECK(!dm(big, 65536), "20000 nested pointers accepted");
  strcpy(big, "_Z1fIiE");
  for (int i = 0; i < 3000; i++) strcat(big, "S_");
  CHECK(dm(big, 65536) && strlen(out) == 3 * 2999 + 8, /* "f f<int>(f, ..., f)" */
        "3000 substitutions: %zu bytes", strlen(out));
  CHECK(!dm(big, 1000), "3000 substitutions fit in 1000 bytes");
  /* each step's type holds the previous one twice: 2^60 characters */
  strcpy(big, "_Z1fPi");
  for (int i = 0; i < 60; i++) {
    char t[32];
    snprintf(t, sizeof t, i == 0 ? "N1AIS_S_EE" : "N1AIS%d_S%d_EE", 2 * i - 1, 2 * i - 1);
    strcat(big, t);
  }
  CHECK(!dm(big, 65536), "exponential substitution chain accepted");
  strcpy(big, "_Z1f");
  for (int i = 0; i < 1000; i++) strcat(big, "N1AI");
  CHECK(!dm(big, 65536), "1000 nested templates accepted");
  strcpy(big, "_Z1fIiEvDpDpDpDpDpDpDpDpT_");
  dm(big, 65536);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_demangle NAMES_FILE CXXFILT\n");
    return 2;
  }
  int n = 0;
  char **names = read_names(argv[1], &n);
  CHECK(names != NULL && n >= 300, "cannot read 300 names from %s", argv[1]);
  if (names == NULL) return 1;
  char **want = run_cxxfilt(argv[2], names, n);
  CHECK(want != NULL, "c++filt did not run");
  if (want) test_table(names, want, n);
  int nf = (int)(sizeof features / sizeof features[0]);
  char **want_f = run_cxxfilt(argv[2], (char **)features, nf);
  CHECK(want_f != NULL, "c++filt did not run");
  if (want_f) test_table((char **)features, want_f, nf);
  test_refusals();
  test_bounds(names, n);
  printf("test_demangle: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
