/* hc_check.h - the assertion every C test uses: CHECK(cond, fmt, ...)
 * prints "FAIL file:line: cond: message" and counts a failure; the test
 * returns non-zero when `failures` is. Include after <stdio.h>. */
#ifndef HC_CHECK_H
#define HC_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      failures++;                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

#endif
