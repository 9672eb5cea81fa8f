/* bench_common.h - the pieces every benchmark program shares.
 *
 * Purpose: one definition of the random generator, the clock, the size
 * pickers, the checked allocations, the command-line parser, the thread
 * start/join loop and the result line, so bench_*.c, checker_*.c and
 * cg_pair.c differ only in their workloads.
 *
 * Invariants: header-only (static inline), so each program stays a single
 * .c file that lib.sh and run_checker.sh can also compile alone with
 * `cc`/`clang -fsanitize=leak` when the meson build is not there.  Every
 * helper computes exactly what the programs computed inline before it
 * existed (same arithmetic, same seeds are kept by the callers), so results
 * stay comparable with earlier runs.  The result line keeps the format
 * "NAME: SECONDS s, OPS ops/s (DETAILS)" that the scripts parse.
 * Nothing here asserts a timing.
 *
 * Locks: none.  bench_parse_opts runs in the main thread before any worker
 * starts (getopt keeps global state); the rest is thread-safe.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* xorshift64: cheap next to malloc, deterministic for a given seed (the
 * seeds are the callers', a non-zero constant per program or per thread). */
static inline uint64_t bench_rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Wall time from the monotonic clock, in seconds. */
static inline double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Uniform size in [lo, hi] from the random word r. */
static inline size_t bench_size_in(uint64_t r, size_t lo, size_t hi) {
  return lo + (size_t)(r % (hi - lo + 1));
}

/* Log-uniform size: octave k = r % octaves, then uniform in
 * [base << k, 2 * (base << k)] from the bits of r above the low byte. */
static inline size_t bench_size_octave(uint64_t r, size_t base, unsigned octaves) {
  unsigned k = (unsigned)(r % octaves);
  size_t lo = base << k;
  return lo + (size_t)((r >> 8) % (lo + 1));
}

/* malloc/calloc that end the program (status 1) when they fail: a
 * benchmark has nothing useful to do without its memory. */
static inline void *bench_malloc(size_t sz) {
  void *p = malloc(sz);
  if (!p) {
    fprintf(stderr, "malloc(%zu) failed\n", sz);
    exit(1);
  }
  return p;
}

static inline void *bench_calloc(size_t n, size_t sz) {
  void *p = calloc(n, sz);
  if (!p) {
    perror("calloc");
    exit(1);
  }
  return p;
}

/* Index of word in the NULL-terminated list words, or -1. */
static inline long bench_word_index(const char *word, const char *const *words) {
  for (long i = 0; words[i]; i++)
    if (strcmp(word, words[i]) == 0) return i;
  return -1;
}

/* One option "-LETTER VALUE" of a benchmark program. */
struct bench_opt {
  char letter;
  long *value;              /* where the value goes; its initial value is the default */
  long min;                 /* smallest accepted value (checked after parsing) */
  const char *help;         /* the usage line shows "[-LETTER HELP]" */
  const char *const *words; /* NULL: VALUE is a number (atol); else VALUE must be one of
                               these words (NULL-terminated) and *value gets its index */
};

#define BENCH_NOPTS(a) (sizeof(a) / sizeof((a)[0]))

/* Prints "usage: PROG [-a HELP] [-b HELP]..." on stderr and exits 2. */
static inline void bench_usage(const char *prog, const struct bench_opt *opts, size_t nopts) {
  fprintf(stderr, "usage: %s", prog);
  for (size_t i = 0; i < nopts; i++) fprintf(stderr, " [-%c %s]", opts[i].letter, opts[i].help);
  fputc('\n', stderr);
  exit(2);
}

/* getopt over opts (plus -h): unknown options, -h, a word not in the list and
 * a value below its minimum print the usage and exit 2. */
static inline void bench_parse_opts(int argc, char **argv, const struct bench_opt *opts,
                                    size_t nopts) {
  char optstring[2 * 26 + 2];
  size_t n = 0;
  if (nopts > 26) bench_usage(argv[0], opts, 0);
  for (size_t i = 0; i < nopts; i++) {
    optstring[n++] = opts[i].letter;
    optstring[n++] = ':';
  }
  optstring[n++] = 'h';
  optstring[n] = 0;
  int c;
  while ((c = getopt(argc, argv, optstring)) != -1) {
    size_t i = 0;
    while (i < nopts && opts[i].letter != c) i++;
    if (i == nopts) bench_usage(argv[0], opts, nopts);
    if (opts[i].words) {
      long w = bench_word_index(optarg, opts[i].words);
      if (w < 0) bench_usage(argv[0], opts, nopts);
      *opts[i].value = w;
    } else {
      *opts[i].value = atol(optarg);
    }
  }
  for (size_t i = 0; i < nopts; i++)
    if (*opts[i].value < opts[i].min) bench_usage(argv[0], opts, nopts);
}

/* Runs fn on n threads, thread i getting (char *)args + i * stride, and waits
 * for all of them.  tids (n entries) is the caller's, allocated before its
 * clock starts, so the timed region holds no allocation of ours. */
static inline void bench_run_threads(long n, void *(*fn)(void *), void *args, size_t stride,
                                     pthread_t *tids) {
  for (long t = 0; t < n; t++) {
    if (pthread_create(&tids[t], NULL, fn, (char *)args + (size_t)t * stride) != 0) {
      perror("pthread_create");
      exit(1);
    }
  }
  for (long t = 0; t < n; t++) pthread_join(tids[t], NULL);
}

/* The result line: "NAME: SECONDS s, OPS ops/s (DETAILS)" on stdout. */
__attribute__((format(printf, 4, 5))) static inline void bench_report(const char *name,
                                                                       double seconds,
                                                                       double ops,
                                                                       const char *fmt, ...) {
  va_list ap;
  printf("%s: %.3f s, %.0f ops/s (", name, seconds, ops / seconds);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf(")\n");
}

#endif /* BENCH_COMMON_H */
