/* double_free_fixture.c - double and invalid frees for test_double_free.sh:
 * the checker's report of each (checker/mem_errors.c) must name the
 * functions below: where the block was allocated (make_block), first freed
 * (first_free) and freed again (second_free).
 *
 * Usage: double_free_fixture CASE, CASE one of small, large, realloc,
 * interior, race, smallstack (the double free on a thread with a 16 KiB
 * stack), paths (the block first freed through path_b after other blocks
 * through path_a, from the same place of the stack), nofile (the double
 * free under RLIMIT_NOFILE 3: the report cannot open any file), ok.  Prints
 * "completed" when the program goes on to its end (a double free let
 * pass, or the ok case). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static volatile int step; /* a different store in each function: no two are folded into one */

static NOINLINE void *make_block(size_t n) {
  void *p = malloc(n);
  step = 1; /* not a tail call: this frame is on the stack */
  return p;
}
static NOINLINE void first_free(void *p) {
  free(p);
  step = 2;
}
static NOINLINE void second_free(void *p) {
  free(p);
  step = 3;
}
/* Two callers of first_free with frames of one size: its free starts at
 * the same return address and frame record from both (the memo of free
 * stacks keys its slots so), and only the frames further out differ. */
static NOINLINE void path_a(void *p) {
  first_free(p);
  step = 5;
}
static NOINLINE void path_b(void *p) {
  first_free(p);
  step = 6;
}
/* Exported (the fixture links with -rdynamic): in .dynsym, which names it
 * when no descriptor is left to open the executable's file (nofile). */
void df_exported_free(void *p);
NOINLINE void df_exported_free(void *p) {
  free(p);
  step = 7;
}
static NOINLINE void *grow(void *p, size_t n) {
  void *q = realloc(p, n);
  step = 4;
  return q;
}

/* Threads freeing one block at the same moment: one frees it, every other
 * free is a double free (the first of them is reported). */
enum { RACERS = 8 };
static pthread_barrier_t start;
static void *racer(void *arg) {
  pthread_barrier_wait(&start);
  free(arg);
  return NULL;
}

static void *small_stack_thread(void *arg) {
  first_free(arg);
  second_free(arg);
  return NULL;
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "small") || !strcmp(c, "large")) {
    void *p = make_block(!strcmp(c, "large") ? (size_t)2 << 20 : 24);
    first_free(p);
    sink = make_block(100); /* another block in between: the entry is p's still */
    second_free(p);
  } else if (!strcmp(c, "realloc")) {
    void *p = make_block(40);
    first_free(p);
    sink = grow(p, 80);
  } else if (!strcmp(c, "interior")) {
    char *p = make_block(64);
    sink = p;
    second_free(p + 16);
  } else if (!strcmp(c, "race")) {
    void *p = make_block(64);
    pthread_t t[RACERS];
    pthread_barrier_init(&start, NULL, RACERS);
    for (int i = 0; i < RACERS; i++) pthread_create(&t[i], NULL, racer, p);
    for (int i = 0; i < RACERS; i++) pthread_join(t[i], NULL);
  } else if (!strcmp(c, "smallstack")) {
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, PTHREAD_STACK_MIN);
    pthread_create(&t, &at, small_stack_thread, make_block(48));
    pthread_join(t, NULL);
  } else if (!strcmp(c, "paths")) {
    for (int i = 0; i < 4; i++) path_a(make_block(24));
    void *p = make_block(24);
    path_b(p);
    second_free(p);
  } else if (!strcmp(c, "nofile")) {
    void *p = make_block(32);
    df_exported_free(p);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 3; /* 0, 1 and 2 are open: no file can be opened */
    setrlimit(RLIMIT_NOFILE, &rl);
    df_exported_free(p);
  } else if (!strcmp(c, "ok")) {
    for (int i = 0; i < 1000; i++) first_free(make_block((size_t)i * 40));
  } else {
    fprintf(stderr, "usage: %s small|large|realloc|interior|race|smallstack|paths|nofile|ok\n", argv[0]);
    return 2;
  }
  free(sink);
  printf("completed\n");
  return 0;
}
