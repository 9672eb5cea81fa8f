/* test_root_kinds.c - every kind of root keeps its objects alive, and what
 * no root reaches is found with exact byte and object counts.
 *
 * No false leak for a pointer held only in: another thread's stack, another
 * thread's register (x86-64: r15, nowhere in memory), a __thread variable of
 * the program and of a dlopen()ed module (dynamic TLS allocated by ld.so),
 * pthread_setspecific slots (first level in struct pthread, second level
 * calloc'ed by libc), a global of a dlopen()ed module, an interior pointer.
 * Found: a pointer hidden by XOR, a block of an exited thread, an interior
 * pointer past HEAP_CHECK_MAX_POINTER_OFFSET, and one block from every
 * allocation function (malloc ... operator new[]), after realloc too.
 *
 * Usage (HEAPCHECK=local or any mode; HC_ROOT_MODULE = the module's path):
 *   test_root_kinds          scoped checks (hc_check_begin/end), exit 0 = pass
 *   test_root_kinds exit     parks threads holding blocks in each kind of
 *                            root and returns from main: the at-exit check
 *                            (HEAPCHECK=normal) must find nothing -> exit 0
 *   test_root_kinds exit-leak  the same plus a hidden 99-byte leak -> exit 1
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapcheck.h"
#include "scenarios/scenario.h"

/* operator new / new[] by their mangled names (this is a C program). */
void *_Znwm(unsigned long);
void *_Znam(unsigned long);
void _ZdlPv(void *);
void _ZdaPv(void *);

static int failures;

// ---- checking helpers ----

static NOINLINE void expect_end_(hc_check_t *c, ssize_t bytes, ssize_t objects) {
  int ok = hc_check_end(c, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE);
  ssize_t b = hc_check_bytes_leaked(c), o = hc_check_objects_leaked(c);
  if (b != bytes || o != objects || ok != (bytes == 0)) {
    printf("FAIL %s: leaked %zd bytes in %zd objects (returned %d), expected %zd bytes in %zd objects\n",
           hc_check_name(c), b, o, ok, bytes, objects);
    failures++;
  } else {
    printf("ok   %s: %zd bytes in %zd objects\n", hc_check_name(c), b, o);
  }
  fflush(stdout);
  hc_check_free(c);
}
/* The caller wipes the dead stack first: expect_end_'s own frame then holds no
 * stale copy of a pointer the scenario just dropped (its padding is never
 * written, and the at-entry scan covers it). */
#define expect_end(c, bytes, objects) (wipe_stack(), expect_end_((c), (bytes), (objects)))

// ---- the dlopen'ed module ----

static void (*rk_set_global)(void *);
static void *(*rk_get_global)(void);
static void (*rk_set_tls)(void *);
static void *(*rk_get_tls)(void);

static void load_module(void) {
  const char *path = getenv("HC_ROOT_MODULE");
  void *h = path ? dlopen(path, RTLD_NOW) : NULL;
  if (!h) {
    printf("FAIL cannot dlopen HC_ROOT_MODULE=%s: %s\n", path ? path : "(unset)", dlerror());
    exit(1);
  }
  rk_set_global = (void (*)(void *))dlsym(h, "rk_set_global");
  rk_get_global = (void *(*)(void))dlsym(h, "rk_get_global");
  rk_set_tls = (void (*)(void *))dlsym(h, "rk_set_tls");
  rk_get_tls = (void *(*)(void))dlsym(h, "rk_get_tls");
  if (!rk_set_global || !rk_get_global || !rk_set_tls || !rk_get_tls) {
    printf("FAIL module symbols missing\n");
    exit(1);
  }
}

// ---- parked threads: hold a block in one kind of root until released ----

enum kind { K_STACK, K_TLS, K_MODULE_TLS, K_SPECIFIC, K_REGISTER, K_REGISTER_CONTROL, K_EXIT_TLS };
#define NKEYS 40

__thread void *volatile rk_tls; /* not static: a write-only static may be dropped */
static pthread_key_t keys[NKEYS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, released;
static volatile int spin;            /* the register thread spins while 1 */
static volatile int spinning;
static unsigned long hidden_reg;     /* the register thread's block, XOR-masked */

static void park(void) {
  pthread_mutex_lock(&mu);
  ready++;
  pthread_cond_broadcast(&cv);
  while (!released) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static NOINLINE unsigned long hidden_block(size_t n) {
  return (unsigned long)calloc(1, n) ^ HIDE_MASK;
}

/* r15 = the block's address, computed in the register only; spin until
 * released; then hand it back masked.  The control variant keeps it masked. */
static void hold_in_register(int unmask) {
#if defined(__x86_64__)
  unsigned long out, mask = unmask ? HIDE_MASK : 0;
  __asm__ __volatile__(
      "mov %[h], %%r15\n\t"
      "xor %[m], %%r15\n\t"
      "movl $1, %[flag]\n\t"
      "1: pause\n\t"
      "cmpl $0, %[spin]\n\t"
      "jne 1b\n\t"
      "mov %%r15, %[out]\n\t"
      : [out] "=&r"(out), [flag] "=m"(spinning)
      : [h] "r"(hidden_reg), [m] "r"(mask), [spin] "m"(spin)
      : "r15", "memory", "cc");
  hidden_reg = out ^ mask;
#else
  (void)unmask;
  spinning = 1;
  while (spin) __asm__ __volatile__("" ::: "memory");
#endif
}

static void *parked_thread(void *arg) {
  enum kind k = (enum kind)(intptr_t)arg;
  switch (k) {
    case K_STACK: {
      void *volatile mine = calloc(1, 1111);
      park();
      free(mine);
      break;
    }
    case K_TLS:
      rk_tls = calloc(1, 1222);
      park();
      free(rk_tls);
      rk_tls = NULL;
      break;
    case K_MODULE_TLS:
      rk_set_tls(calloc(1, 1333));
      park();
      free(rk_get_tls());
      rk_set_tls(NULL);
      break;
    case K_SPECIFIC:
      for (int i = 0; i < NKEYS; i++) pthread_setspecific(keys[i], calloc(1, 16 + i));
      park();
      for (int i = 0; i < NKEYS; i++) {
        free(pthread_getspecific(keys[i]));
        pthread_setspecific(keys[i], NULL);
      }
      break;
    case K_REGISTER:
    case K_REGISTER_CONTROL:
      hold_in_register(k == K_REGISTER);
      break;
    case K_EXIT_TLS:
      rk_tls = calloc(1, 321); /* the thread ends: nothing holds it any more */
      break;
  }
  return NULL;
}

static pthread_t start(enum kind k) {
  pthread_t t;
  pthread_create(&t, NULL, parked_thread, (void *)(intptr_t)k);
  return t;
}

static void wait_parked(int n) {
  pthread_mutex_lock(&mu);
  while (ready < n) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void release_all(void) {
  pthread_mutex_lock(&mu);
  released = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void reset_parking(void) {
  ready = 0;
  released = 0;
}

// ---- scenarios ----

static NOINLINE void main_thread_roots(void) {
  rk_tls = calloc(1, 1444);
  rk_set_tls(calloc(1, 1555));
  for (int i = 0; i < NKEYS; i++) pthread_setspecific(keys[i], calloc(1, 8));
}

static void thread_roots(void) {
  static const struct {
    enum kind k;
    const char *name;
  } cases[] = {{K_STACK, "thread-stack"}, {K_TLS, "thread-tls"}, {K_MODULE_TLS, "module-tls"},
               {K_SPECIFIC, "pthread-setspecific"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    reset_parking();
    hc_check_t *c = hc_check_begin(cases[i].name);
    pthread_t t = start(cases[i].k);
    wait_parked(1);
    expect_end(c, 0, 0);
    release_all();
    pthread_join(t, NULL);
  }
  /* The main thread's own TLS and setspecific slots. */
  hc_check_t *c = hc_check_begin("main-tls");
  main_thread_roots();
  expect_end(c, 0, 0);
  /* Clear the roots too: a stale slot would keep a later object at the same
   * address alive. */
  free(rk_tls);
  rk_tls = NULL;
  free(rk_get_tls());
  rk_set_tls(NULL);
  for (int i = 0; i < NKEYS; i++) {
    free(pthread_getspecific(keys[i]));
    pthread_setspecific(keys[i], NULL);
  }
}

static void register_roots(void) {
  static const struct {
    enum kind k;
    const char *name;
    ssize_t bytes, objects;
  } cases[] = {{K_REGISTER, "thread-register", 0, 0}, {K_REGISTER_CONTROL, "thread-register-control", 1666, 1}};
#if !defined(__x86_64__)
  printf("skip thread-register: x86-64 only\n");
  return;
#endif
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hc_check_t *c = hc_check_begin(cases[i].name);
    hidden_reg = hidden_block(1666);
    spin = 1;
    spinning = 0;
    pthread_t t = start(cases[i].k);
    while (!spinning) sched_yield();
    expect_end(c, cases[i].bytes, cases[i].objects);
    spin = 0;
    pthread_join(t, NULL);
    free((void *)(hidden_reg ^ HIDE_MASK));
  }
}

void *volatile g_interior, *volatile g_interior_large, *volatile g_interior_far;
unsigned long volatile g_hidden;

/* Scenario steps live in helpers: a pointer the caller kept in a
 * callee-saved register would be a (correct) root. */
static NOINLINE void interior_pointers(void) {
  g_interior = (char *)calloc(1, 200) + 40;
  g_interior_large = (char *)calloc(1, 100000) + 500;
}
static NOINLINE void interior_too_far(void) {
  g_interior_far = (char *)calloc(1, 100000) + 5000; /* past a HEAP_CHECK_MAX_POINTER_OFFSET of 1024 */
}
static NOINLINE void module_global(void) { rk_set_global(calloc(1, 1777)); }

static void module_and_interior(void) {
  hc_check_t *c = hc_check_begin("module-global");
  module_global();
  expect_end(c, 0, 0);
  free(rk_get_global());
  rk_set_global(NULL);

  c = hc_check_begin("interior");
  interior_pointers();
  expect_end(c, 0, 0);
  c = hc_check_begin("interior-too-far");
  interior_too_far();
  /* Any interior pointer keeps an object alive unless a limit is set
   * ("possibly lost", not a leak); with gperftools' 1024 it is a leak. */
  const char *lim = getenv("HEAP_CHECK_MAX_POINTER_OFFSET");
  if (lim && atoll(lim) >= 0 && atoll(lim) < 5000) expect_end(c, 100000, 1);
  else expect_end(c, 0, 0);
  c = hc_check_begin("xor-hidden");
  g_hidden = hidden_block(888);
  expect_end(c, 888, 1);

  reset_parking();
  c = hc_check_begin("exited-thread");
  pthread_t t = start(K_EXIT_TLS);
  pthread_join(t, NULL);
  expect_end(c, 321, 1);
}

/* One leak per allocation function; the sizes are the requested ones. */
static NOINLINE void leak_with(int which) {
  void *p = NULL;
  switch (which) {
    case 0: p = malloc(10); break;
    case 1: p = calloc(3, 7); break;
    case 2: p = realloc(NULL, 33); break;
    case 3: p = realloc(malloc(5), 100); break;     /* moved */
    case 4: p = realloc(malloc(1000), 600); break;  /* shrunk in place */
    case 5: p = memalign(64, 100); break;
    case 6: posix_memalign(&p, 128, 200); break;
    case 7: p = aligned_alloc(256, 512); break;
    case 8: p = valloc(300); break;
    case 9: p = pvalloc(100); break;                /* rounds up to a page */
    case 10: p = strdup("hello"); break;
    case 11: p = strndup("hello", 3); break;
    case 12: p = _Znwm(24); break;
    case 13: p = _Znam(40); break;
    case 14: p = malloc(300000); break;            /* a large (page-span) object */
    case 15: p = memalign(16384, 100); break;      /* over-aligned: a span of its own */
    case 16: p = realloc(malloc(300000), 400000); break;
  }
  if (p) memset(p, 0, 1);
}

static void allocation_functions(void) {
  static const ssize_t bytes[] = {10, 21, 33, 100, 600, 100, 200, 512, 300, 4096, 6, 4, 24, 40, 300000, 100, 400000};
  static const char *names[] = {"malloc", "calloc", "realloc(NULL)", "realloc-moved", "realloc-in-place",
                                "memalign", "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "strdup",
                                "strndup", "operator new", "operator new[]", "malloc-large", "memalign-large",
                                "realloc-large"};
  for (int i = 0; i < (int)(sizeof bytes / sizeof bytes[0]); i++) {
    hc_check_t *c = hc_check_begin(names[i]);
    leak_with(i);
    expect_end(c, bytes[i], 1);
  }
}

// ---- the at-exit variant ----

static int at_exit_roots(int leak) {
  load_module();
  for (int i = 0; i < NKEYS; i++) pthread_key_create(&keys[i], NULL);
  start(K_STACK);
  start(K_TLS);
  start(K_MODULE_TLS);
  start(K_SPECIFIC);
  wait_parked(4);
#if defined(__x86_64__)
  hidden_reg = hidden_block(1666);
  spin = 1;
  start(K_REGISTER);
  while (!spinning) sched_yield();
#endif
  rk_set_global(calloc(1, 1777));
  rk_tls = calloc(1, 1444);
  g_interior = (char *)calloc(1, 200) + 40;
  if (leak) g_hidden = hidden_block(99);
  wipe_stack();
  printf("test_root_kinds: returning from main with parked threads\n");
  fflush(stdout);
  return 0; /* the threads stay parked through the at-exit check */
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "exit") == 0) return at_exit_roots(0);
  if (argc > 1 && strcmp(argv[1], "exit-leak") == 0) return at_exit_roots(1);
  if (!hc_is_active()) {
    printf("FAIL: run with HEAPCHECK set (local is enough)\n");
    return 1;
  }
  load_module();
  for (int i = 0; i < NKEYS; i++) pthread_key_create(&keys[i], NULL);
  thread_roots();
  register_roots();
  module_and_interior();
  allocation_functions();
  hc_cancel_global_check(); /* the leaks above were on purpose */
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}
