/* test_options.c - the options table (base/hc_options.h) and its readers,
 * linked with base/ alone (a per-layer unit test: nothing above base/ is on
 * its include path or link line).
 *
 *  - every row is well formed: a name, a layer, a doc line; an integer's
 *    default lies in its range (or has a default text); names are unique;
 *  - unset: the table's default; set: the value (K/M suffixes, booleans in
 *    any case, the empty value true);
 *  - a bad value: a warning naming the variable, then the default, and the
 *    default returned (out of range, not a number, not a boolean).
 * Usage: test_options; exit 0 = pass.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_base.h"
#include "hc_check.h"

/* Runs the reader with fd 2 on a file and returns what it wrote there. */
static const char *stderr_of(void (*fn)(void *), void *arg) {
  static char buf[4096];
  char path[] = "/tmp/hc_test_options.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  unlink(path);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  return buf;
}

static long long got_int;
static bool got_bool;
static void read_int(void *o) { got_int = hci_opt_int(*(hci_opt_t *)o); }
static void read_bool(void *o) { got_bool = hci_opt_bool(*(hci_opt_t *)o); }

static void int_case(hci_opt_t o, const char *value, long long want, const char *warn) {
  const char *name = hci_options[o].name;
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  const char *err = stderr_of(read_int, &o);
  CHECK(got_int == want, "%s=%s: %lld, expected %lld", name, value ? value : "(unset)", got_int, want);
  if (warn) {
    char head[256];
    snprintf(head, sizeof head, "heapcheck: warning: %s=\"%s\"", name, value);
    CHECK(strstr(err, head) == err, "%s=%s: warning %s", name, value, err);
    CHECK(strstr(err, warn) != NULL, "%s=%s: warning lacks '%s': %s", name, value, warn, err);
  } else {
    CHECK(err[0] == 0, "%s=%s: unexpected output %s", name, value ? value : "(unset)", err);
  }
  unsetenv(name);
}

static void bool_case(hci_opt_t o, const char *value, bool want, bool warns) {
  const char *name = hci_options[o].name;
  setenv(name, value, 1);
  const char *err = stderr_of(read_bool, &o);
  CHECK(got_bool == want, "%s=\"%s\": %d, expected %d", name, value, got_bool, want);
  CHECK((strstr(err, name) != NULL) == warns, "%s=\"%s\": output '%s'", name, value, err);
  if (warns) CHECK(strstr(err, "using the default") != NULL, "%s: no default named: %s", name, err);
  unsetenv(name);
}

int main(void) {
  /* The table itself. */
  for (int i = 0; i < HCO_COUNT; i++) {
    const hci_opt_info_t *o = &hci_options[i];
    CHECK(o->name && o->name[0] && o->owner && o->doc && o->doc[0], "row %d incomplete", i);
    if (o->type == HCI_OPT_INT)
      CHECK(o->min <= o->max && ((o->def >= o->min && o->def <= o->max) || o->def_text), "%s: default %lld outside [%lld, %lld]",
            o->name, o->def, o->min, o->max);
    if (o->type == HCI_OPT_STR) CHECK(o->def_text != NULL, "%s: no default text", o->name);
    for (int j = 0; j < i; j++) CHECK(strcmp(o->name, hci_options[j].name) != 0, "%s twice", o->name);
    static const char *const layers[] = {"base", "stacks", "allocator", "symbolizer", "checker", "profiler", "runtime"};
    bool known = false;
    for (size_t k = 0; k < sizeof layers / sizeof *layers; k++) known |= strcmp(o->owner, layers[k]) == 0;
    CHECK(known, "%s: owner %s is not a layer", o->name, o->owner);
  }

  /* Integers. */
  int_case(HCO_HEAP_CHECK_MAX_LEAKS, NULL, 20, NULL);
  int_case(HCO_HEAP_CHECK_MAX_LEAKS, "7", 7, NULL);
  int_case(HCO_HEAP_CHECK_MAX_LEAKS, "many", 20, "is not an integer in [-1000000000, 1000000000]; using the default 20");
  int_case(HCO_HEAP_CHECK_EXIT_CODE, "300", 1, "is not an integer in [0, 255]; using the default 1");
  int_case(HCO_HEAPCHECK_SAMPLE_PARAMETER, "64k", 65536, NULL);
  int_case(HCO_HEAPCHECK_SAMPLE_PARAMETER, "-1", HC_DEFAULT_SAMPLE_INTERVAL, "using the default 524288");
  setenv("HEAP_CHECK_STOP_SIGNAL", "40", 1);
  CHECK(hci_opt_int_or(HCO_HEAP_CHECK_STOP_SIGNAL, 61) == 40, "int_or: value");
  unsetenv("HEAP_CHECK_STOP_SIGNAL");
  CHECK(hci_opt_int_or(HCO_HEAP_CHECK_STOP_SIGNAL, 61) == 61, "int_or: the caller's default");

  /* Booleans. */
  bool_case(HCO_HEAPCHECK_VERBOSE, "YES", true, false);
  bool_case(HCO_HEAPCHECK_VERBOSE, "", true, false);
  bool_case(HCO_HEAPCHECK_VERBOSE, "f", false, false);
  bool_case(HCO_HEAPCHECK_VERBOSE, "10", false, true);
  bool_case(HCO_HEAP_CHECK_RUN_UNDER_GDB, "maybe", true, true);
  CHECK(hci_opt_bool(HCO_HEAP_CHECK_RUN_UNDER_GDB), "unset: the table's default true");

  /* Strings. */
  setenv("HEAPCHECK_UNWINDER", "fp", 1);
  CHECK(hci_opt_set(HCO_HEAPCHECK_UNWINDER) && strcmp(hci_opt_str(HCO_HEAPCHECK_UNWINDER), "fp") == 0, "string");
  unsetenv("HEAPCHECK_UNWINDER");
  CHECK(!hci_opt_set(HCO_HEAPCHECK_UNWINDER) && hci_opt_str(HCO_HEAPCHECK_UNWINDER) == NULL, "unset string");

  printf("%d checks, %d failed (%d variables in the table)\n", checks, failures, HCO_COUNT);
  return failures != 0;
}
