/* check_options.c - HEAPCHECK modes and every HEAP_CHECK_* variable.
 *
 * Read once, from hci_checker_init (inside the first malloc, before any span
 * exists), into the read-only hci_chk.  Because it runs inside malloc it
 * uses only hci_env_* (no getenv), hci_snprintf and write(2).
 *
 * Modes keep gperftools' names (gperftools-compat.md section 2) with one
 * deliberate difference: "normal" checks before the program's global
 * destructors and "strict" after them, as gperftools' documentation says
 * (gperftools 2.10 checks after them in both).  Unlike gperftools, an
 * unknown mode is not fatal: an error lists the valid names and the run is
 * checked as "normal".  A setuid/setgid program ignores HEAPCHECK (and every
 * other variable: hci_env_get returns NULL for them).
 *
 * Invariants: hci_chk is written only here, before any other thread can
 * exist (first allocation); every other module only reads it.
 * Locks: none.
 */
#include <string.h>
#include <strings.h>

#include "hc_checker.h"

hci_chk_opts_t hci_chk = {
    .mode = HCI_MODE_OFF,
    .mode_name = "off",
    .max_leaks = 20,
    .pointer_alignment = (int)sizeof(void *),
    .max_pointer_offset = -1,
    .dump_dir = "/tmp",
    .run_under_gdb = true,
    .exit_code = 1,
    .check_at_exit = true,
    .error_exit_code = 125,
};
HC_PRIVATE_STATE(hci_chk);


// ---- modes ----

static const struct mode_def {
  const char *name;
  int mode;
} modes[] = {
    {"minimal", HCI_MODE_MINIMAL}, {"normal", HCI_MODE_NORMAL}, {"strict", HCI_MODE_STRICT},
    {"draconian", HCI_MODE_DRACONIAN}, {"as-is", HCI_MODE_AS_IS}, {"local", HCI_MODE_LOCAL},
};

/* The mode table of gperftools-compat.md section 2, with normal != strict. */
static void apply_mode(int mode) {
  hci_chk.mode = mode;
  hci_chk.active = true;
  hci_chk.global_check = mode != HCI_MODE_LOCAL;
  hci_chk.check_at_exit = hci_chk.global_check;
  hci_chk.scan_threads = true;
  hci_chk.scan_globals = true;
  switch (mode) {
    case HCI_MODE_MINIMAL:
      hci_chk.baseline_at_main = true;
      break;
    case HCI_MODE_STRICT:
      hci_chk.after_destructors = true;
      break;
    case HCI_MODE_DRACONIAN:
      hci_chk.after_destructors = true;
      hci_chk.scan_threads = false;
      hci_chk.scan_globals = false;
      hci_chk.free_libc = true;
      break;
    case HCI_MODE_AS_IS:
      hci_chk.after_destructors = hci_opt_bool(HCO_HEAP_CHECK_AFTER_DESTRUCTORS);
      hci_chk.scan_threads = hci_opt_bool(HCO_HEAP_CHECK_IGNORE_THREAD_LIVE);
      hci_chk.scan_globals = hci_opt_bool(HCO_HEAP_CHECK_IGNORE_GLOBAL_LIVE);
      break;
    default:
      break;
  }
}

/* Whether this process is the program a valgrind tool that replaces malloc
 * runs (memcheck, helgrind, drd, massif, dhat: valgrind prepends its
 * vgpreload_<tool> library to LD_PRELOAD; callgrind, cachegrind and none
 * have only vgpreload_core and leave our allocator in place).  Such a tool
 * serves every allocation itself, so our heap is empty and a check finds
 * nothing, while its scan of the stacks reads words memcheck knows to be
 * undefined: a test suite that runs its programs under valgrind and wants
 * "ERROR SUMMARY: 0 errors" failed under the launcher (json-c's). */
static bool under_valgrind_malloc(void) {
  /* The loader's variable, not one of ours (not in the options table):
   * read from environ as hci_chk_no_follow edits it. */
  extern char **environ;
  const char *v = NULL;
  for (char **e = environ; e && *e && !v; e++)
    if (strncmp(*e, "LD_PRELOAD=", 11) == 0) v = *e + 11;
  for (const char *p = v; p && *p;) {
    while (*p == ':' || *p == ' ') p++;
    const char *start = p;
    while (*p && *p != ':' && *p != ' ') p++;
    const char *base = p;
    while (base > start && base[-1] != '/') base--;
    static const char pre[] = "vgpreload_", core[] = "vgpreload_core";
    if ((size_t)(p - base) > sizeof pre - 1 && strncmp(base, pre, sizeof pre - 1) == 0 &&
        strncmp(base, core, sizeof core - 1) != 0)
      return true;
  }
  return false;
}

static void read_mode(void) {
  const char *v = hci_opt_str(HCO_HEAPCHECK);
  if ((v || hci_lsan_mode()) && under_valgrind_malloc()) {
    /* Not a word at the default verbosity: the program's stderr is what
     * the test under valgrind compares. */
    hci_chk_log(1, "heapcheck: a valgrind tool serves this program's malloc and checks it: leak checking is off");
    return;
  }
  if (!v && hci_lsan_mode()) {
    /* LeakSanitizer's defaults: one check at exit, after the program's
     * global destructors (LSan's atexit handler is registered before any
     * of them), every root. */
    hci_chk.mode_name = "lsan";
    hci_chk.lsan = true;
    apply_mode(HCI_MODE_STRICT);
    return;
  }
  if (!v) {
    if (hci_is_secure()) {
      /* hci_env_get hides everything from a privileged program; say why
       * nothing happens only when someone asked for checking (raw scan). */
      extern char **environ;
      for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "HEAPCHECK=", 10) == 0) {
          hci_chk_log(HCI_LOG_WARNING, "HeapChecker: ignoring HEAPCHECK because program seems to be setuid");
          break;
        }
    }
    return;
  }
  /* gperftools' VLOG(10) lines whenever HEAPCHECK is set; its tests grep them. */
  hci_chk_log(10, "MemoryRegionMap Init");
  hci_chk_log(10, "Starting tracking the heap");
  if (v[0] == '\0') {
    /* gperftools: set but empty turns the checker off, and says so. */
    hci_chk_log(0, "Turning perftools heap leak checking off");
    return;
  }
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (strcasecmp(v, modes[i].name) == 0) {
      hci_chk.mode_name = modes[i].name;
      apply_mode(modes[i].mode);
      return;
    }
  hci_chk_log(HCI_LOG_ERROR,
              "heapcheck: error: Unsupported heap_check flag: %s (HEAPCHECK must be one of minimal, normal, "
              "strict, draconian, as-is, local; empty turns checking off); checking as in \"normal\" mode",
              v);
  hci_chk.mode_name = "normal";
  apply_mode(HCI_MODE_NORMAL);
}

// ---- knobs ----

static void read_alignment(void) {
  long long a = hci_opt_int(HCO_HEAP_CHECK_POINTER_SOURCE_ALIGNMENT);
  if (a & (a - 1)) {
    hci_warn("HEAP_CHECK_POINTER_SOURCE_ALIGNMENT=%lld is not a power of two; using the default %d", a,
             (int)sizeof(void *));
    a = (long long)sizeof(void *);
  }
  hci_chk.pointer_alignment = (int)a;
}

static void read_max_offset(void) {
  long long v = hci_opt_int(HCO_HEAP_CHECK_MAX_POINTER_OFFSET);
  hci_chk.max_pointer_offset = v;
}

static void read_suppressions(void) {
  const char *f = hci_opt_str(HCO_HEAPCHECK_SUPPRESSIONS);
  if (!f || !*f) f = hci_opt_str(HCO_HEAP_CHECK_SUPPRESSIONS);
  hci_chk.suppressions = f && *f ? f : NULL;
}

void hci_chk_options_read(void) {
  /* Verbosity first: it gates the messages of everything below. */
  hci_chk.verbose = (int)hci_opt_int(HCO_PERFTOOLS_VERBOSE);
  if (hci_opt_bool(HCO_HEAPCHECK_VERBOSE) && hci_chk.verbose < 1) hci_chk.verbose = 1;
  hci_log_verbose = hci_chk.verbose;
  hci_chk.double_free = -1;
  read_mode();
  if (!hci_chk.active) return;
  hci_chk.free_history = hci_opt_int(HCO_HEAPCHECK_FREE_HISTORY);
  /* Unset: the frees whose callers have frame pointers; 1: all. */
  hci_chk.free_stacks = !hci_opt_bool(HCO_HEAPCHECK_FREE_STACKS) ? HC_FREE_STACKS_OFF
                        : hci_opt_set(HCO_HEAPCHECK_FREE_STACKS) ? HC_FREE_STACKS_ALL : HC_FREE_STACKS_FP;
  hci_chk.max_leaks = (int)hci_opt_int(HCO_HEAP_CHECK_MAX_LEAKS);
  hci_chk.identify_leaks = hci_opt_bool(HCO_HEAP_CHECK_IDENTIFY_LEAKS);
  hci_chk.show_possible = hci_opt_bool(HCO_HEAPCHECK_SHOW_POSSIBLY_LOST);
  hci_chk.test_pointer_alignment = hci_opt_bool(HCO_HEAP_CHECK_TEST_POINTER_ALIGNMENT);
  read_alignment();
  read_max_offset();
  /* The leak profile file is written only when asked for: a directory
   * given, or HEAPCHECK_LEAK_PROFILE=1 (then in /tmp).  Every leaking
   * process writing one to /tmp filled it (9.6 MB for one Ruby run). */
  const char *dir = hci_opt_str(HCO_HEAP_CHECK_DUMP_DIRECTORY);
  if (dir && *dir) hci_chk.dump_dir = dir;
  hci_chk.dump_profile = hci_opt_bool_or(HCO_HEAPCHECK_LEAK_PROFILE, dir && *dir);
  hci_chk.run_under_gdb = hci_opt_bool(HCO_HEAP_CHECK_RUN_UNDER_GDB);
  hci_chk.exit_code = (int)hci_opt_int(HCO_HEAP_CHECK_EXIT_CODE);
  hci_chk.keep_status = hci_opt_bool(HCO_HEAPCHECK_KEEP_STATUS);
  hci_chk.error_exit_code = (int)hci_opt_int(HCO_HEAP_CHECK_ERROR_EXIT_CODE);
  read_suppressions();
  if (hci_chk.lsan) {
    /* LSan's defaults, before LSAN_OPTIONS: exit status 23, every record,
     * quiet when nothing leaked (verbosity 0 prints only the report), no
     * leak profile file unless a dump directory is asked for. */
    hci_chk.exit_code = (int)hci_opt_int_or(HCO_HEAP_CHECK_EXIT_CODE, 23);
    hci_chk.max_leaks = (int)hci_opt_int_or(HCO_HEAP_CHECK_MAX_LEAKS, 0);
    if (!hci_opt_str(HCO_PERFTOOLS_VERBOSE) && !hci_opt_bool(HCO_HEAPCHECK_VERBOSE)) hci_chk.verbose = HCI_LOG_ERROR;
    hci_chk.no_mapping_roots = true; /* LSan scans only registered regions */
  }
  hci_lsan_apply();
  if (hci_chk.leaks_off) hci_chk.check_at_exit = false; /* detect_leaks=0: records for double frees only */
  hci_log_verbose = hci_chk.verbose; /* LSan mode's default and verbosity= */
  /* Outside as-is the mode decides; a variable that tries to change it is
   * probably a mistake worth a word (gperftools silently ignores it). */
  if (hci_chk.mode != HCI_MODE_AS_IS) {
    static const hci_opt_t as_is_only[] = {HCO_HEAP_CHECK_AFTER_DESTRUCTORS, HCO_HEAP_CHECK_IGNORE_THREAD_LIVE,
                                           HCO_HEAP_CHECK_IGNORE_GLOBAL_LIVE};
    for (size_t i = 0; i < sizeof as_is_only / sizeof as_is_only[0]; i++)
      if (hci_opt_set(as_is_only[i]))
        hci_chk_log(HCI_LOG_WARNING, "heapcheck: warning: %s is only used with HEAPCHECK=as-is (mode is %s)",
                    hci_options[as_is_only[i]].name, hci_chk.mode_name);
  }
}

// ---- HEAPCHECK_NO_FOLLOW (the launcher's --no-follow-children) ----

extern char **environ;

/* Removes the variable from environ (the array is the process's own). */
static void env_drop(const char *name) {
  size_t n = strlen(name);
  char **w = environ;
  for (char **r = environ; r && *r; r++)
    if (!(strncmp(*r, name, n) == 0 && (*r)[n] == '=')) *w++ = *r;
  if (w) *w = NULL;
}

/* Whether an LD_PRELOAD entry names this library (by file name). */
static bool is_us(const char *entry, size_t len) {
  size_t b = len;
  while (b > 0 && entry[b - 1] != '/') b--;
  static const char lib[] = "libheapcheck.so";
  return len - b >= sizeof lib - 1 && memcmp(entry + b, lib, sizeof lib - 1) == 0;
}

void hci_chk_no_follow(void) {
  if (!hci_opt_bool(HCO_HEAPCHECK_NO_FOLLOW)) return;
  /* LD_PRELOAD is edited in place: the result is never longer. */
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) continue;
    char *v = *e + 11, *out = v;
    for (char *p = v; *p;) {
      while (*p == ':' || *p == ' ') p++;
      char *start = p;
      while (*p && *p != ':' && *p != ' ') p++;
      size_t len = (size_t)(p - start);
      if (len == 0 || is_us(start, len)) continue;
      if (out != v) *out++ = ':';
      memmove(out, start, len);
      out += len;
    }
    *out = 0;
    if (out == v) env_drop("LD_PRELOAD");
    break;
  }
  env_drop("HEAPCHECK");
  env_drop("HEAPCHECK_NO_FOLLOW");
}
