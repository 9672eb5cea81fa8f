/* options.c - environment variables without getenv or malloc, and the
 * table of every variable the library reads (hc_options.h).
 *
 * The allocator reads its options before main, possibly before libc has
 * finished initialising, so it scans environ itself; before libc has set
 * even environ (a malloc in a function of the executable's .preinit_array,
 * which the loader runs before every constructor), the environment the
 * kernel put on the initial stack: HEAPCHECK was not seen there, and the
 * checker stayed off for good (no report, status 0).  A setuid/setgid
 * process (AT_SECURE) sees every variable as unset: an attacker-controlled
 * environment must not make a privileged program write files. */
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "hc_base.h"

extern char **environ;
/* The initial stack: argc, argv[argc], NULL, then envp (ld.so's, libc.a's). */
extern void *__libc_stack_end __attribute__((weak));

bool hci_is_secure(void) { return getauxval(AT_SECURE) != 0; }

static char **initial_envp(void) {
  const long *sp = &__libc_stack_end ? (const long *)__libc_stack_end : NULL;
  if (!sp || sp[0] < 0 || sp[0] > (1 << 20)) return NULL;
  return (char **)(sp + 1 + sp[0] + 1);
}

const char *hci_env_get(const char *name) {
  char **env = environ ? environ : initial_envp();
  if (env == NULL || hci_is_secure()) return NULL;
  size_t n = strlen(name);
  for (; *env; env++)
    if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') return *env + n + 1;
  return NULL;
}

static bool parse_int(const char *s, long long *out) {
  bool neg = false;
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (*s < '0' || *s > '9') return false;
  unsigned long long v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (~0ull >> 1) / 10) return false;
    v = v * 10 + (unsigned)(*s - '0');
  }
  unsigned shift = 0;
  switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    default: break;
  }
  if ((*s == 'b' || *s == 'B') && shift) s++;
  while (*s == ' ' || *s == '\t') s++;
  if (*s) return false;
  if (shift && v > ((~0ull >> 1) >> shift)) return false;
  v <<= shift;
  if (v > (unsigned long long)(~0ull >> 1)) return false;
  *out = neg ? -(long long)v : (long long)v;
  return true;
}

long long hci_env_int(const char *name, long long def, long long min, long long max) {
  const char *s = hci_env_get(name);
  if (!s) return def;
  long long v;
  if (!parse_int(s, &v) || v < min || v > max) {
    hci_warn("%s=\"%s\" is not an integer in [%lld, %lld]; using the default %lld", name, s, min, max,
             def);
    return def;
  }
  return v;
}

bool hci_env_word_is(const char *value, const char *word) { return strcasecmp(value, word) == 0; }

/* gperftools' EnvToBool accepts the empty value as true; the words are
 * whole and their case does not matter (as for every keyword value). */
bool hci_env_bool(const char *name, bool def) {
  const char *s = hci_env_get(name);
  if (!s) return def;
  static const char *const yes[] = {"", "1", "t", "true", "y", "yes"};
  static const char *const no[] = {"0", "f", "false", "n", "no"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    if (hci_env_word_is(s, yes[i])) return true;
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (hci_env_word_is(s, no[i])) return false;
  hci_warn("%s=\"%s\" is not a boolean (use 1/0, true/false, yes/no, t/f, y/n); using the default %s", name, s,
           def ? "true" : "false");
  return def;
}

// ---- the table (hc_options.h) ----

#define HCO_ROW_INT(n, def, lo, hi, text, owner, doc) {#n, HCI_OPT_INT, (def), (lo), (hi), (text), #owner, (doc)},
#define HCO_ROW_BOOL(n, def, owner, doc) {#n, HCI_OPT_BOOL, (def), 0, 1, NULL, #owner, (doc)},
#define HCO_ROW_STR(n, text, owner, doc) {#n, HCI_OPT_STR, 0, 0, 0, (text), #owner, (doc)},
const hci_opt_info_t hci_options[HCO_COUNT] = {HC_OPTIONS(HCO_ROW_INT, HCO_ROW_BOOL, HCO_ROW_STR)};
const hci_opt_info_t hci_lsan_options[HCL_COUNT] = {HC_LSAN_OPTIONS(HCO_ROW_INT, HCO_ROW_BOOL, HCO_ROW_STR)};

const char *hci_opt_str(hci_opt_t o) { return hci_env_get(hci_options[o].name); }
bool hci_opt_set(hci_opt_t o) { return hci_opt_str(o) != NULL; }

long long hci_opt_int_or(hci_opt_t o, long long def) {
  const hci_opt_info_t *i = &hci_options[o];
  return hci_env_int(i->name, def, i->min, i->max);
}
long long hci_opt_int(hci_opt_t o) { return hci_opt_int_or(o, hci_options[o].def); }

bool hci_opt_bool_or(hci_opt_t o, bool def) { return hci_env_bool(hci_options[o].name, def); }
bool hci_opt_bool(hci_opt_t o) { return hci_opt_bool_or(o, hci_options[o].def != 0); }
