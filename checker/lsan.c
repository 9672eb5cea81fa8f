/* lsan.c - LeakSanitizer's interface: the functions of
 * <sanitizer/lsan_interface.h>, LSAN_OPTIONS and the program's hooks
 * (__lsan_default_options, __lsan_default_suppressions, __lsan_is_turned_off).
 *
 * A program written for LeakSanitizer switches by linking -lheapcheck (or
 * preloading libheapcheck.so): with HEAPCHECK unset, LSAN_OPTIONS (or an
 * __lsan_default_options() in the program) turns the checker on with LSan's
 * defaults (one check at exit, exit status 23, quiet unless something
 * leaked), and each LSan option is mapped onto the checker's own (the table
 * is in docs/leak-checking.md).  HEAPCHECK, when set, decides the mode and
 * LSAN_OPTIONS only adjusts it.
 *
 * Option syntax (sanitizer_common's): name=value pairs separated by spaces,
 * tabs, newlines, ',' or ':'; a value may be quoted with ' or " (then it may
 * hold separators).  __lsan_default_options() is parsed first, LSAN_OPTIONS
 * after it (the later value wins).  An option we do not support, or a bad
 * value, gets a one-line warning naming it.
 *
 * The hooks are weak references: they resolve to the program's definitions
 * when the program is linked with -lheapcheck (the linker then exports
 * them) or linked statically; a program that only preloads the library
 * must export them itself (-rdynamic).
 *
 * Runs inside the first malloc (options) or from the program's calls:
 * no malloc, no stdio; strings kept are copied into the metadata arena.
 * Locks: none of its own (the checker's functions take what they need).
 */
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "heapcheck.h"

/* The program's hooks (default visibility: a hidden undefined weak symbol
 * would never resolve outside the library). */
extern const char *__lsan_default_options(void) __attribute__((weak, visibility("default")));
extern const char *__lsan_default_suppressions(void) __attribute__((weak, visibility("default")));
extern int __lsan_is_turned_off(void) __attribute__((weak, visibility("default")));

// ---- the parser ----

typedef void (*opt_fn)(const char *src, const char *name, size_t nlen, const char *val, size_t vlen);

static bool is_sep(char c) { return c == ' ' || c == ',' || c == ':' || c == '\n' || c == '\t' || c == '\r'; }

/* Calls fn for each name=value of s; src names the string in messages. */
static void parse(const char *src, const char *s, opt_fn fn) {
  if (!s) return;
  for (size_t i = 0; s[i];) {
    while (s[i] && is_sep(s[i])) i++;
    if (!s[i]) break;
    size_t n0 = i;
    while (s[i] && s[i] != '=' && !is_sep(s[i])) i++;
    size_t nlen = i - n0;
    if (s[i] != '=') {
      hci_warn("%s: expected name=value, got \"%.*s\" (ignored)", src, (int)nlen, s + n0);
      continue;
    }
    i++;
    const char *val = s + i;
    size_t vlen;
    if (s[i] == '\'' || s[i] == '"') {
      char q = s[i++];
      val = s + i;
      while (s[i] && s[i] != q) i++;
      if (!s[i]) {
        hci_warn("%s: unterminated quoted value of %.*s (ignored)", src, (int)nlen, s + n0);
        return;
      }
      vlen = (size_t)(s + i - val);
      i++;
    } else {
      while (s[i] && !is_sep(s[i])) i++;
      vlen = (size_t)(s + i - val);
    }
    fn(src, s + n0, nlen, val, vlen);
  }
}

static bool name_is(const char *name, size_t nlen, const char *want) {
  return strlen(want) == nlen && memcmp(name, want, nlen) == 0;
}

/* sanitizer_common's booleans: 0/no/false and 1/yes/true. */
static bool get_bool(const char *src, const char *name, size_t nlen, const char *v, size_t vlen, bool *out) {
  static const char *const t[] = {"1", "yes", "true"}, *const f[] = {"0", "no", "false"};
  for (int k = 0; k < 3; k++) {
    if (name_is(v, vlen, t[k])) return *out = true;
    if (name_is(v, vlen, f[k])) return !(*out = false);
  }
  hci_warn("%s: %.*s=%.*s is not a boolean (0/1, no/yes, false/true); option ignored", src, (int)nlen, name,
           (int)vlen, v);
  return false;
}

static bool get_int(const char *src, const char *name, size_t nlen, const char *v, size_t vlen, long long min,
                    long long max, long long *out) {
  size_t i = 0;
  bool neg = vlen > 0 && v[0] == '-';
  if (neg) i++;
  long long x = 0;
  bool ok = i < vlen;
  for (; i < vlen && ok; i++) {
    ok = v[i] >= '0' && v[i] <= '9' && x < 1000000000000LL;
    x = x * 10 + (v[i] - '0');
  }
  if (neg) x = -x;
  if (!ok || x < min || x > max) {
    hci_warn("%s: %.*s=%.*s is not a number in [%lld, %lld]; option ignored", src, (int)nlen, name, (int)vlen, v,
             min, max);
    return false;
  }
  *out = x;
  return true;
}

/* A copy of the value in the metadata arena (kept for the whole run). */
static const char *keep(const char *v, size_t vlen) {
  char *c = hci_meta_alloc(vlen + 1);
  if (!c) return NULL;
  memcpy(c, v, vlen);
  c[vlen] = 0;
  return c;
}

// ---- the options ----

enum { T_BOOL, T_INT, T_STR };

static const struct lsan_opt {
  const char *name;
  int type;
  const char *doc;
} opts[] = {
    {"detect_leaks", T_BOOL, "check for leaks at all (0: the checker stays off; HEAPCHECK overrides)"},
    {"leak_check_at_exit", T_BOOL, "run the whole-program check at exit (__lsan_do_leak_check works either way)"},
    {"exitcode", T_INT, "exit status when the final check finds leaks (default 23; 0: keep the program's)"},
    {"suppressions", T_STR, "suppressions file (leak:<pattern> lines), as HEAPCHECK_SUPPRESSIONS"},
    {"print_suppressions", T_BOOL, "print the \"Suppressions used:\" block after a report (default 1)"},
    {"log_path", T_STR, "write reports to <log_path>.<pid> (as HEAPCHECK_LOG_PATH)"},
    {"report_objects", T_BOOL, "list the address and size of every leaked object under its record"},
    {"max_leaks", T_INT, "records printed per report (0: all, the default)"},
    {"use_globals", T_BOOL, "writable data of loaded modules are roots"},
    {"use_stacks", T_BOOL, "thread stacks are roots"},
    {"use_registers", T_BOOL, "thread registers are roots"},
    {"use_tls", T_BOOL, "threads' static TLS is a root"},
    {"use_ld_allocations", T_BOOL, "objects the dynamic loader allocated (DTV, dynamic TLS) are roots"},
    {"use_root_regions", T_BOOL, "regions given to __lsan_register_root_region are roots"},
    {"use_unaligned", T_BOOL, "look for pointers at every byte offset, not only aligned words"},
    {"malloc_context_size", T_INT, "frames recorded per allocation stack, malloc's own counted as in LSan"},
    {"strip_path_prefix", T_STR, "prefix cut from file and module paths in reports"},
    {"verbosity", T_INT, "message level (PERFTOOLS_VERBOSE): 1 adds timings, 2 their breakdown"},
    {"help", T_BOOL, "print this list at start-up"},
};

static const struct lsan_opt *find_opt(const char *name, size_t nlen) {
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
    if (name_is(name, nlen, opts[k].name)) return &opts[k];
  return NULL;
}

static bool detect_leaks = true;
static bool seen_any; /* LSAN_OPTIONS set or __lsan_default_options defined */

static void detect_only(const char *src, const char *name, size_t nlen, const char *v, size_t vlen) {
  bool b;
  if (name_is(name, nlen, "detect_leaks") && get_bool(src, name, nlen, v, vlen, &b)) detect_leaks = b;
}

static void print_help(void) {
  int fd = hci_log_stream_fd();
  if (fd < 0) return;
  hci_fdprintf(fd, "Available flags for LeakSanitizer: heapcheck's LSan mode (LSAN_OPTIONS)\n"); /* LSan's first words */
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
    hci_fdprintf(fd, "\t%s\n\t\t- %s\n", opts[k].name, opts[k].doc);
}

static void apply_one(const char *src, const char *name, size_t nlen, const char *v, size_t vlen) {
  const struct lsan_opt *o = find_opt(name, nlen);
  if (!o) {
    hci_warn("%s: unsupported option %.*s (ignored)", src, (int)nlen, name);
    return;
  }
  bool b = false;
  long long x = 0;
  if (o->type == T_BOOL && !get_bool(src, name, nlen, v, vlen, &b)) return;
  if (o->type == T_INT && !get_int(src, name, nlen, v, vlen, -1000000, 1000000000, &x)) return;
  const char *n = o->name;
  if (!strcmp(n, "detect_leaks")) {
    if (!b && !hci_chk.lsan)
      hci_warn("%s: detect_leaks=0 ignored: HEAPCHECK=%s decides whether leaks are checked", src,
               hci_chk.mode_name);
  } else if (!strcmp(n, "leak_check_at_exit")) {
    hci_chk.check_at_exit = b && hci_chk.global_check;
  } else if (!strcmp(n, "exitcode")) {
    if (x < 0 || x > 255) {
      hci_warn("%s: exitcode=%lld is not in [0, 255]; option ignored", src, x);
      return;
    }
    hci_chk.exit_code = (int)x;
    hci_chk.no_leak_exit = x == 0;
  } else if (!strcmp(n, "suppressions")) {
    hci_chk.suppressions = vlen ? keep(v, vlen) : NULL;
  } else if (!strcmp(n, "print_suppressions")) {
    hci_chk.quiet_suppressions = !b;
  } else if (!strcmp(n, "log_path")) {
    char v0[4096];
    hci_snprintf(v0, sizeof v0, "%.*s", (int)vlen, v);
    hci_log_stream_set_path(v0, "LSAN_OPTIONS log_path");
  } else if (!strcmp(n, "report_objects")) {
    hci_chk.report_objects = b;
  } else if (!strcmp(n, "max_leaks")) {
    hci_chk.max_leaks = (int)x;
  } else if (!strcmp(n, "use_globals")) {
    hci_chk.scan_globals = b;
  } else if (!strcmp(n, "use_stacks") || !strcmp(n, "use_registers") || !strcmp(n, "use_tls")) {
    unsigned bit = n[4] == 's' ? HCI_ROOTS_STACKS : n[4] == 'r' ? HCI_ROOTS_REGISTERS : HCI_ROOTS_TLS;
    unsigned parts = hci_chk.scan_threads ? (hci_chk.thread_parts ? hci_chk.thread_parts : HCI_ROOTS_THREADS) : 0;
    parts = b ? parts | bit : parts & ~bit;
    hci_chk.scan_threads = parts != 0;
    hci_chk.thread_parts = parts;
  } else if (!strcmp(n, "use_ld_allocations")) {
    hci_chk.no_ld_roots = !b;
  } else if (!strcmp(n, "use_root_regions")) {
    hci_chk.no_regions = !b;
  } else if (!strcmp(n, "use_unaligned")) {
    hci_chk.pointer_alignment = b ? 1 : (int)sizeof(void *);
  } else if (!strcmp(n, "malloc_context_size")) {
    /* LSan's count includes its malloc interceptor's frame; ours starts at malloc's caller. */
    if (x > 0) hci_set_stack_depth(x > 1 ? (int)x - 1 : 1);
  } else if (!strcmp(n, "strip_path_prefix")) {
    hci_chk.strip_path_prefix = vlen ? keep(v, vlen) : NULL;
  } else if (!strcmp(n, "verbosity")) {
    hci_chk.verbose = (int)x;
  } else if (!strcmp(n, "help")) {
    if (b) print_help();
  }
}

bool hci_lsan_mode(void) {
  const char *env = hci_opt_str(HCO_LSAN_OPTIONS);
  const char *def = __lsan_default_options ? __lsan_default_options() : NULL;
  seen_any = env || __lsan_default_options;
  if (!seen_any) return false;
  parse("__lsan_default_options()", def, detect_only);
  parse("LSAN_OPTIONS", env, detect_only);
  return detect_leaks;
}

void hci_lsan_apply(void) {
  const char *env = hci_opt_str(HCO_LSAN_OPTIONS);
  if (__lsan_default_options) parse("__lsan_default_options()", __lsan_default_options(), apply_one);
  parse("LSAN_OPTIONS", env, apply_one);
}

bool hci_lsan_turned_off(void) {
  if (!__lsan_is_turned_off || !__lsan_is_turned_off()) return false;
  hci_chk_log(1, "heapcheck: __lsan_is_turned_off() returned non-zero: no leak check");
  return true;
}

const char *hci_lsan_default_suppressions(void) {
  return __lsan_default_suppressions ? __lsan_default_suppressions() : NULL;
}

// ---- <sanitizer/lsan_interface.h> ----

/* LSan's Die(): the process ends with the exit code at once. */
static __attribute__((noreturn)) void die(void) { _exit(hci_chk.exit_code ? hci_chk.exit_code : 1); }

hc_public void __lsan_ignore_object(const void *p) {
  hci_ensure_init();
  if (!hci_chk.active) return;
  size_t size;
  int rc = hci_api_ignore(p, &size);
  if (rc < 0) hci_chk_log(1, "__lsan_ignore_object(): no heap object found at %p", p);
  else if (rc > 0) hci_chk_log(1, "__lsan_ignore_object(): heap object at %p is already being ignored", p);
  else hci_chk_log(1, "__lsan_ignore_object(): ignoring heap object at %p", p);
}

hc_public void __lsan_disable(void) { hc_disable_begin(); }

hc_public void __lsan_enable(void) {
  hci_ensure_init();
  if (hci_api_disable_depth() <= 0) {
    if (!hci_chk.active) return;
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: unmatched call to __lsan_enable()");
    die();
  }
  hc_disable_end();
}

hc_public void __lsan_register_root_region(const void *p, size_t size) {
  if (size == 0) return;
  if (hc_register_root_region(p, size) == 0) hci_chk_log(1, "Registered root region at %p of size %zu", p, size);
}

hc_public void __lsan_unregister_root_region(const void *p, size_t size) {
  if (size == 0) return;
  hci_ensure_init();
  if (hci_api_unregister_region(p, size) == 0) {
    hci_chk_log(1, "Unregistered root region at %p of size %zu", p, size);
    return;
  }
  hci_chk_log(HCI_LOG_ERROR,
              "heapcheck: error: __lsan_unregister_root_region(): region at %p of size %zu has not been registered",
              p, size);
  if (hci_chk.active) die();
}

hc_public hc_noinline void __lsan_do_leak_check(void) {
  HCI_ENTRY_SP(sp);
  hci_ensure_init();
  hci_chk_final_now(sp);
}

hc_public hc_noinline int __lsan_do_recoverable_leak_check(void) {
  HCI_ENTRY_SP(sp);
  hci_ensure_init();
  return hci_chk_recoverable_now(sp);
}
