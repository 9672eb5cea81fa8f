/* report_opts.c - HEAPCHECK_REPORT, parsed once, for the leak checker's
 * report files (checker/report_out.c) and the heap profiler's (top sites,
 * the live heap's flame graph at exit).  See docs/report-formats.md.
 * No malloc; the first call parses, later calls return the same table.
 */
#include <limits.h>
#include <string.h>

#include "hc_base.h"

// ---- HEAPCHECK_REPORT ----

static hci_report_opts_t R;
static bool r_read;
static char r_text[4 * PATH_MAX]; /* private copy of the variable, items cut in place */

/* "5m", "30s", "500ms", "2h", "10" (seconds); 0 on error. */
static uint64_t parse_duration(const char *s) {
  if (!*s) return 0;
  uint64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > 1000000000ull) return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (p == s) return 0;
  uint64_t unit = 1000000000ull;
  if (hci_env_word_is(p, "ms")) unit = 1000000ull;
  else if (hci_env_word_is(p, "m")) unit = 60ull * 1000000000ull;
  else if (hci_env_word_is(p, "h")) unit = 3600ull * 1000000000ull;
  else if (*p && !hci_env_word_is(p, "s")) return 0;
  return v * unit;
}

static void bad_item(const char *item, const char *why) {
  hci_warn("HEAPCHECK_REPORT: \"%s\": %s; item ignored (items: top[:N], json:FILE, sarif:FILE, svg:FILE, "
           "folded:FILE, suppressions[:FILE], old:AGE[:PERIOD], peak)",
           item, why);
}

static void parse_item(char *it) {
  char *arg = strchr(it, ':');
  if (arg) *arg++ = 0;
  if (hci_env_word_is(it, "top")) {
    R.top_n = 10;
    if (arg) {
      long n = 0;
      const char *p = arg;
      for (; *p >= '0' && *p <= '9' && n < 1000000; p++) n = n * 10 + (*p - '0');
      if (*p || n <= 0 || n > 100000) hci_warn("HEAPCHECK_REPORT=top:%s: bad N; using the default 10", arg);
      else R.top_n = (int)n;
    }
    return;
  }
  const char **file = hci_env_word_is(it, "json")     ? &R.json
                      : hci_env_word_is(it, "sarif")  ? &R.sarif
                      : hci_env_word_is(it, "svg")    ? &R.svg
                      : hci_env_word_is(it, "folded") ? &R.folded
                                                  : NULL;
  if (file) {
    if (!arg || !*arg) bad_item(it, "needs a file name (e.g. json:/tmp/leaks.%p.json)");
    else *file = arg;
    return;
  }
  if (hci_env_word_is(it, "suppressions")) {
    if (arg && *arg) R.supp_file = arg;
    else R.supp_print = true;
    return;
  }
  if (strcmp(it, "peak") == 0) {
    R.peak = true;
    return;
  }
  if (strcmp(it, "old") == 0) {
    char *period = arg ? strchr(arg, ':') : NULL;
    if (period) *period++ = 0;
    uint64_t age = arg ? parse_duration(arg) : 0;
    uint64_t per = period ? parse_duration(period) : age;
    if (!age || !per) {
      bad_item("old", "needs AGE[:PERIOD] like old:5m:10m (units ms, s, m, h)");
      return;
    }
    R.old_age_ns = age;
    R.old_period_ns = per;
    return;
  }
  bad_item(it, "unknown item");
}

const hci_report_opts_t *hci_report_opts(void) {
  if (r_read) return &R;
  r_read = true;
  const char *v = hci_opt_str(HCO_HEAPCHECK_REPORT);
  if (!v || !*v) return &R;
  size_t n = strlen(v);
  if (n >= sizeof r_text) {
    hci_warn("HEAPCHECK_REPORT is longer than %zu characters; ignored", sizeof r_text - 1);
    return &R;
  }
  memcpy(r_text, v, n + 1);
  for (char *it = r_text; it;) {
    char *comma = strchr(it, ',');
    if (comma) *comma = 0;
    if (*it) parse_item(it);
    it = comma ? comma + 1 : NULL;
  }
  return &R;
}

