/* hc_check.h - the assertion the C tests use: CHECK(cond, fmt, ...)
 * prints "FAIL file:line: cond: message" and counts a failure (atomically:
 * threads may check too); the test returns non-zero when `failures` is.
 * `checks` counts every CHECK evaluated (for a "N passed" line). */
#ifndef HC_CHECK_H
#define HC_CHECK_H

#include <stdio.h>

static int failures;
static int checks __attribute__((unused));
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);                     \
    if (!(cond)) {                                                        \
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                 \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

#endif
