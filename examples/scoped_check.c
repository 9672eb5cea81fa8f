/* scoped_check.c - check one piece of code instead of the whole program.
 *
 * hc_check_begin("parse") starts a named check; hc_check_end reports the
 * objects allocated since then that are unreachable now.  parse_line()
 * below forgets to free its copy for one input out of four, so the check
 * finds one leak of 16 bytes (the copy of "x=1"), whatever was allocated
 * before the check began.
 *
 * Build:  cc -g -fno-omit-frame-pointer scoped_check.c -o scoped_check -lheapcheck
 * Run:    HEAPCHECK=local ./scoped_check    only the explicit check runs; exit 0
 *         HEAPCHECK=normal ./scoped_check   and the at-exit check reports the
 *                                           same leak again; exit 1
 * Without HEAPCHECK the check is inactive and reports nothing.
 */
#include <heapcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *names[4];  /* allocated before the check: not its business */

/* Returns the value of "key=value", or -1.  The bug: an early return leaks. */
__attribute__((noinline)) static long parse_line(const char *line) {
  char *copy = malloc(16);
  if (!copy) return -1;
  snprintf(copy, 16, "%s", line);
  char *eq = strchr(copy, '=');
  if (!eq) {
    free(copy);
    return -1;
  }
  long v = strtol(eq + 1, NULL, 10);
  if (v == 1) return v;  /* forgot free(copy) */
  free(copy);
  return v;
}

int main(void) {
  for (int i = 0; i < 4; i++) names[i] = strdup("allocated before the check");

  hc_check_t *check = hc_check_begin("parse");
  const char *input[] = {"a=5", "b", "x=1", "y=7"};
  long sum = 0;
  for (int i = 0; i < 4; i++) sum += parse_line(input[i]);
  int ok = hc_check_end(check, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE);

  printf("sum=%ld\n", sum);
  if (hc_is_active())
    printf("check \"%s\": %s, %zd bytes in %zd objects leaked\n", hc_check_name(check),
           ok ? "no leaks" : "leaks found", hc_check_bytes_leaked(check), hc_check_objects_leaked(check));
  else
    printf("checker off: set HEAPCHECK=local to run the check\n");
  hc_check_free(check);
  for (int i = 0; i < 4; i++) free(names[i]);
  return 0;
}
