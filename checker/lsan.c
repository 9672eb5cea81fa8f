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
 * after it (the later value wins).  An option we do not support gets a
 * one-line warning naming it; a bad value one naming the key, then its
 * default, which is used.  The keys, types, ranges, defaults and docs are the
 * options table's second level (HC_LSAN_OPTIONS, base/hc_options.h; the
 * generated table of docs/options.md).
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

/* The default of a key, as the warnings print it. */
static const char *def_text(const hci_opt_info_t *o, char *buf, size_t cap) {
  if (o->type == HCI_OPT_BOOL) return o->def ? "1" : "0";
  hci_snprintf(buf, cap, "%lld", o->def);
  return buf;
}

/* sanitizer_common's booleans: 0/no/false and 1/yes/true.  A bad value: a
 * warning naming the key, then its default (hc_options.h), which is used. */
static bool get_bool(const char *src, const hci_opt_info_t *o, const char *v, size_t vlen) {
  static const char *const t[] = {"1", "yes", "true"}, *const f[] = {"0", "no", "false"};
  for (int k = 0; k < 3; k++) {
    if (name_is(v, vlen, t[k])) return true;
    if (name_is(v, vlen, f[k])) return false;
  }
  char d[32];
  hci_warn("%s: %s=%.*s is not a boolean (0/1, no/yes, false/true); using the default %s", src, o->name, (int)vlen, v,
           def_text(o, d, sizeof d));
  return o->def != 0;
}

/* An integer in the key's range, else (a warning naming the key, then its
 * default) the default. */
static long long get_int(const char *src, const hci_opt_info_t *o, const char *v, size_t vlen) {
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
  if (!ok || x < o->min || x > o->max) {
    char d[32];
    hci_warn("%s: %s=%.*s is not a number in [%lld, %lld]; using the default %s", src, o->name, (int)vlen, v, o->min,
             o->max, def_text(o, d, sizeof d));
    return o->def;
  }
  return x;
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

/* The keys, their types, ranges, defaults and docs: the second level of the
 * options table (HC_LSAN_OPTIONS in base/hc_options.h). */
static int find_opt(const char *name, size_t nlen) {
  for (int k = 0; k < HCL_COUNT; k++)
    if (name_is(name, nlen, hci_lsan_options[k].name)) return k;
  return -1;
}

static bool detect_leaks = true;
static int detect_double_free = -1; /* unset */
static bool seen_any; /* LSAN_OPTIONS set or __lsan_default_options defined */

/* The two keys that decide whether the checker runs: detect_leaks, and
 * detect_double_free=1, whose reports need the allocation records. */
static void detect_only(const char *src, const char *name, size_t nlen, const char *v, size_t vlen) {
  int id = find_opt(name, nlen);
  if (id == HCL_detect_leaks) detect_leaks = get_bool(src, &hci_lsan_options[id], v, vlen);
  if (id == HCL_detect_double_free) detect_double_free = get_bool(src, &hci_lsan_options[id], v, vlen);
}

static void print_help(void) {
  int fd = hci_log_stream_fd();
  if (fd < 0) return;
  hci_fdprintf(fd, "Available flags for LeakSanitizer: heapcheck's LSan mode (LSAN_OPTIONS)\n"); /* LSan's first words */
  for (int k = 0; k < HCL_COUNT; k++) hci_fdprintf(fd, "\t%s\n\t\t- %s\n", hci_lsan_options[k].name, hci_lsan_options[k].doc);
}

/* max_allocation_size_mb: the allocator calls this (in malloc, no lock
 * held) for a request above the limit, then returns NULL with ENOMEM.
 * LSan's texts; as LSan, the report ends the process with the exit code
 * unless allocator_may_return_null=1. */
static bool may_return_null;
static __attribute__((noreturn)) void die(void);

static void too_big(size_t size, size_t limit) {
  if (may_return_null) {
    hci_warn("failed to allocate 0x%zx bytes (LSAN_OPTIONS max_allocation_size_mb=%zu): NULL, errno ENOMEM", size,
             limit >> 20);
    return;
  }
  hci_chk_log(HCI_LOG_ERROR,
              "heapcheck: error: requested allocation size 0x%zx exceeds maximum supported size of 0x%zx "
              "(LSAN_OPTIONS max_allocation_size_mb=%zu; allocator_may_return_null=1 returns NULL instead)",
              size, limit, limit >> 20);
  die();
}

static void apply_one(const char *src, const char *name, size_t nlen, const char *v, size_t vlen) {
  int id = find_opt(name, nlen);
  if (id < 0) {
    hci_warn("%s: unsupported option %.*s (ignored)", src, (int)nlen, name);
    return;
  }
  const hci_opt_info_t *o = &hci_lsan_options[id];
  bool b = o->type == HCI_OPT_BOOL && get_bool(src, o, v, vlen);
  long long x = o->type == HCI_OPT_INT ? get_int(src, o, v, vlen) : 0;
  switch ((hci_lsan_opt_t)id) {
    case HCL_detect_leaks:
      if (!b && !hci_chk.lsan)
        hci_warn("%s: detect_leaks=0 ignored: HEAPCHECK=%s decides whether leaks are checked", src,
                 hci_chk.mode_name);
      break;
    case HCL_leak_check_at_exit: hci_chk.check_at_exit = b && hci_chk.global_check; break;
    case HCL_exitcode:
      hci_chk.exit_code = (int)x;
      hci_chk.no_leak_exit = x == 0;
      break;
    case HCL_suppressions: hci_chk.suppressions = vlen ? keep(v, vlen) : NULL; break;
    case HCL_print_suppressions: hci_chk.quiet_suppressions = !b; break;
    case HCL_log_path: {
      char v0[4096];
      hci_snprintf(v0, sizeof v0, "%.*s", (int)vlen, v);
      hci_log_stream_set_path(v0, "LSAN_OPTIONS log_path");
      break;
    }
    case HCL_report_objects: hci_chk.report_objects = b; break;
    case HCL_max_leaks: hci_chk.max_leaks = (int)x; break;
    case HCL_use_globals: hci_chk.scan_globals = b; break;
    case HCL_use_stacks:
    case HCL_use_registers:
    case HCL_use_tls: {
      unsigned bit = id == HCL_use_stacks ? HCI_ROOTS_STACKS : id == HCL_use_registers ? HCI_ROOTS_REGISTERS : HCI_ROOTS_TLS;
      unsigned parts = hci_chk.scan_threads ? (hci_chk.thread_parts ? hci_chk.thread_parts : HCI_ROOTS_THREADS) : 0;
      parts = b ? parts | bit : parts & ~bit;
      hci_chk.scan_threads = parts != 0;
      hci_chk.thread_parts = parts;
      break;
    }
    case HCL_use_ld_allocations: hci_chk.no_ld_roots = !b; break;
    case HCL_use_root_regions: hci_chk.no_regions = !b; break;
    case HCL_use_unaligned: hci_chk.pointer_alignment = b ? 1 : (int)sizeof(void *); break;
    case HCL_malloc_context_size:
      /* LSan's count includes its malloc interceptor's frame; ours starts at malloc's caller. */
      hci_set_stack_depth(x > 1 ? (int)x - 1 : 1);
      break;
    case HCL_strip_path_prefix: hci_chk.strip_path_prefix = vlen ? keep(v, vlen) : NULL; break;
    case HCL_verbosity: hci_chk.verbose = (int)x; break;
    case HCL_max_allocation_size_mb: hci_alloc_set_limit((size_t)x << 20, x ? too_big : NULL); break;
    case HCL_allocator_may_return_null: may_return_null = b; break;
    case HCL_tries:
    case HCL_retries: hci_chk.tries = (int)x; break;
    case HCL_log_threads: hci_chk.log_threads = b; break;
    case HCL_detect_double_free:
      hci_chk.double_free = b;
      /* LSan's report has the first free's whole stack; a double free let
       * pass has no report to read it. */
      hci_chk.free_stacks = b ? HC_FREE_STACKS_ALL : HC_FREE_STACKS_OFF;
      break;
    case HCL_double_free_max_entries:
      /* LSan's warnings and cap (its bounded side table); 0 keeps the default. */
      if (x < 0)
        hci_warn("%s: double_free_max_entries=%lld is negative; keeping %lld", src, x, hci_chk.free_history);
      else if (x > 4194304)
        hci_warn("%s: double_free_max_entries=%lld is too large, capping it at 4194304", src, x);
      if (x > 0) hci_chk.free_history = x > 4194304 ? 4194304 : x;
      break;
    case HCL_help:
      if (b) print_help();
      break;
    case HCL_COUNT: break;
  }
}

bool hci_lsan_mode(void) {
  const char *env = hci_opt_str(HCO_LSAN_OPTIONS);
  const char *def = __lsan_default_options ? __lsan_default_options() : NULL;
  seen_any = env || __lsan_default_options;
  if (!seen_any) return false;
  parse("__lsan_default_options()", def, detect_only);
  parse("LSAN_OPTIONS", env, detect_only);
  hci_chk.double_free = detect_double_free;
  hci_chk.leaks_off = !detect_leaks;
  return detect_leaks || detect_double_free == 1;
}

void hci_lsan_apply(void) {
  const char *env = hci_opt_str(HCO_LSAN_OPTIONS);
  if (__lsan_default_options) parse("__lsan_default_options()", __lsan_default_options(), apply_one);
  parse("LSAN_OPTIONS", env, apply_one);
}

bool hci_lsan_turned_off(void) {
  if (hci_chk.leaks_off) return true; /* detect_leaks=0: on for double-free reports only */
  if (!__lsan_is_turned_off || !__lsan_is_turned_off()) return false;
  hci_chk_log(1, "heapcheck: __lsan_is_turned_off() returned non-zero: no leak check");
  return true;
}

const char *hci_lsan_default_suppressions(void) {
  return __lsan_default_suppressions ? __lsan_default_suppressions() : NULL;
}

// ---- <sanitizer/lsan_interface.h> ----

/* LSan's Die(): the process ends with the exit code at once. */
void hci_lsan_log_threads(const hci_world_t *w, uintptr_t self_sp) {
  int pid = (int)getpid();
  unsigned parts = hci_chk.thread_parts ? hci_chk.thread_parts : HCI_ROOTS_THREADS;
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    if (atomic_load_explicit(&t->state, memory_order_acquire) == HCI_T_EXITED) continue;
    hci_log(HCI_LOG_ERROR, "==%d==Processing thread %d.", pid, t->tid);
    /* LSan names the stack mapping and the stack pointer the scan starts at. */
    uintptr_t sp = t->is_self && self_sp ? self_sp : t->sp;
    uintptr_t lo = t->nstack_hi ? t->nstack_lo : t->stack_lo, hi = t->nstack_hi ? t->nstack_hi : t->stack_hi;
    if ((parts & HCI_ROOTS_STACKS) && hi)
      hci_log(HCI_LOG_ERROR, "==%d==Stack at %p-%p (SP = %p).", pid, (void *)lo, (void *)hi, (void *)sp);
    if ((parts & HCI_ROOTS_TLS) && t->tp) {
      uintptr_t tlo, thi;
      hci_tls_range(t->tp, &tlo, &thi);
      hci_log(HCI_LOG_ERROR, "==%d==TLS at %p-%p.", pid, (void *)tlo, (void *)thi);
    }
  }
}

/* LSan's Die: the process ends at once, without the final check (our _exit
 * would run it for a direct call, and too_big comes from the allocator's
 * slow path). */
static __attribute__((noreturn)) void die(void) { hci_os_exit_now(hci_chk.exit_code ? hci_chk.exit_code : 1); }

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
