/* lsan_prog.c - one program per LeakSanitizer function and option, built
 * twice by test_lsan.sh's callers: linked with -lheapcheck (meson) and, in
 * the test itself, with `cc -fsanitize=leak` when LeakSanitizer works on the
 * machine, so both verdicts are compared on the same source.
 *
 * argv[1] names the case; stdout gets "marker" lines the test compares;
 * every leak comes from its own function so suppressions can name it.
 * Built with -DLSAN_HOOKS it also defines the program's hooks
 * (__lsan_default_options, __lsan_default_suppressions, __lsan_is_turned_off).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sanitizer/lsan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

void *volatile g_keep;            /* a global root */
static void *volatile g_sink;

NOINLINE void *leak_a(size_t n) { return malloc(n); }
NOINLINE void *leak_b(size_t n) { return malloc(n); }
NOINLINE void *leak_for_supp(size_t n) { return malloc(n); }

/* Overwrites the dead stack below the caller, so no stale copy of a pointer
 * stays where a stack scan could find it. */
NOINLINE void scrub(void) {
  volatile char buf[4096];
  memset((char *)buf, 0, sizeof buf);
}

/* A leak reachable from nothing: the pointer is dropped. */
NOINLINE void drop(void *(*fn)(size_t), size_t n) {
  g_sink = fn(n);
  g_sink = NULL;
}

#if defined(LSAN_HOOKS)
const char *__lsan_default_options(void) { return "exitcode=42:report_objects=0"; }
const char *__lsan_default_suppressions(void) { return "leak:leak_for_supp\n"; }
/* TEST_LSAN_TURNED_OFF=1: always off; =2: off at the second question only
 * (the second run of a check with tries=2). */
int __lsan_is_turned_off(void) {
  static int calls;
  const char *v = getenv("TEST_LSAN_TURNED_OFF");
  calls++;
  return v && (*v == '1' || (*v == '2' && calls == 2));
}
#endif

/* use_registers: a running thread holds the only pointer in r12. */
static volatile int reg_ready, reg_stop;
static uintptr_t reg_hidden;
#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

NOINLINE static void hide_in_global(void) { reg_hidden = (uintptr_t)leak_a(48) ^ MASK; }

static void *reg_thread(void *arg) {
  (void)arg;
  hide_in_global();
  scrub();
#if defined(__x86_64__)
  uintptr_t mask = MASK;
  __asm__ volatile(
      "movq %0, %%r12\n\t"
      "xorq %1, %%r12\n\t"
      "movl $1, %2\n"
      "1:\n\t"
      "pause\n\t"
      "cmpl $0, %3\n\t"
      "je 1b\n\t"
      "xorl %%r12d, %%r12d\n\t"
      :
      : "m"(reg_hidden), "r"(mask), "m"(reg_ready), "m"(reg_stop)
      : "r12", "memory");
#endif
  return NULL;
}

static void *idle_thread(void *arg) { return arg; }

/* sanitizer_common's allocator interface (<sanitizer/allocator_interface.h>,
 * which gcc does not install): its prototypes. */
int __sanitizer_install_malloc_and_free_hooks(void (*m)(const volatile void *, size_t), void (*f)(const volatile void *));
int __sanitizer_get_ownership(const volatile void *p);
size_t __sanitizer_get_allocated_size(const volatile void *p);
static void *volatile hk_watch;
static int hk_mallocs, hk_frees, hk_owned_in_free;
static size_t hk_size_in_free;
static void hk_on_malloc(const volatile void *p, size_t size) {
  if (p == hk_watch || size == 4242) hk_mallocs++;
}
static void hk_on_free(const volatile void *p) {
  if (p != hk_watch) return;
  hk_frees++;
  hk_owned_in_free = __sanitizer_get_ownership(p);
  hk_size_in_free = __sanitizer_get_allocated_size(p);
}

/* use_tls: a thread keeps the only pointer in its static TLS. */
static __thread void *tls_ptr;
static volatile int tls_ready;
static void *tls_thread(void *arg) {
  (void)arg;
  tls_ptr = leak_a(64);
  scrub();
  tls_ready = 1;
  for (;;) __asm__ volatile("pause" ::: "memory");
  return NULL;
}

/* use_tls and dynamic TLS: the only pointer to a block is in a dlopen'ed
 * module's __thread variable (tests/roots_tls_module.c, named by
 * $TEST_DTLS_MODULE), whose per-thread copy ld.so mallocs on first use and
 * hangs off the thread's DTV; in main and, for dtls_thread, in a second
 * live thread too. */
static void (*dtls_set)(void *);
static volatile int dtls_ready;
NOINLINE void *leak_dtls(size_t n) { return malloc(n); }
static void *dtls_thread(void *arg) {
  (void)arg;
  dtls_set(leak_dtls(2222));
  scrub();
  dtls_ready = 1;
  for (;;) __asm__ volatile("pause" ::: "memory");
  return NULL;
}
NOINLINE static void dtls_setup(int with_thread) {
  const char *m = getenv("TEST_DTLS_MODULE");
  void *h = m ? dlopen(m, RTLD_NOW) : NULL;
  *(void **)&dtls_set = h ? dlsym(h, "roots_mod_set_tls") : NULL;
  if (!dtls_set) {
    fprintf(stderr, "cannot load TEST_DTLS_MODULE=%s\n", m ? m : "(unset)");
    exit(2);
  }
  dtls_set(leak_dtls(1111));
  if (with_thread) {
    pthread_t t;
    pthread_create(&t, NULL, dtls_thread, NULL);
    while (!dtls_ready) __asm__ volatile("" ::: "memory");
  }
}

/* use_stacks: main's frame holds the only pointer. */
NOINLINE static int on_stack(void) {
  void *volatile p = leak_a(72);
  int leaked = __lsan_do_recoverable_leak_check();
  printf("stack leaked=%d\n", leaked);
  fflush(stdout);
  g_sink = p;  /* keeps p alive up to here */
  g_sink = NULL;
  return 0;
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "leak";
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!strcmp(c, "leak")) {                 /* one direct leak at exit */
    drop(leak_a, 7);
  } else if (!strcmp(c, "clean")) {         /* nothing leaks: nothing printed */
    g_keep = leak_a(11);
  } else if (!strcmp(c, "two")) {           /* two records, three objects */
    drop(leak_a, 100);
    drop(leak_b, 10);
    drop(leak_b, 10);
  } else if (!strcmp(c, "supp")) {          /* one leak a suppression can name */
    drop(leak_for_supp, 33);
  } else if (!strcmp(c, "recoverable")) {   /* reported now and again at exit */
    drop(leak_a, 10);
    printf("recoverable=%d\n", __lsan_do_recoverable_leak_check());
    printf("continued\n");
  } else if (!strcmp(c, "recoverable_clean")) {
    g_keep = leak_a(10);
    printf("recoverable=%d\n", __lsan_do_recoverable_leak_check());
  } else if (!strcmp(c, "final")) {         /* the final check ends the process */
    drop(leak_a, 20);
    __lsan_do_leak_check();
    printf("after final check\n");
  } else if (!strcmp(c, "final_clean")) {   /* no leak now: none checked at exit either */
    g_keep = leak_a(20);
    __lsan_do_leak_check();
    printf("after final check\n");
    g_keep = NULL;                          /* a leak nobody checks */
    __lsan_do_leak_check();                 /* only once */
    printf("after second final check\n");
  } else if (!strcmp(c, "disable")) {       /* allocations while disabled are not leaks */
    __lsan_disable();
    drop(leak_a, 30);
    __lsan_disable();                       /* nests */
    drop(leak_a, 31);
    __lsan_enable();
    __lsan_enable();
    drop(leak_b, 32);                       /* this one is */
  } else if (!strcmp(c, "enable_unmatched")) { /* LSan dies */
    __lsan_enable();
    printf("after unmatched enable\n");
  } else if (!strcmp(c, "ignore")) {        /* an ignored object and what it points to */
    void **p = leak_a(40);
    p[0] = leak_b(41);
    __lsan_ignore_object(p);
    __lsan_ignore_object(p);                /* twice: harmless */
    __lsan_ignore_object((const void *)&g_sink);         /* not a heap object: harmless */
    p = NULL;
    drop(leak_a, 42);                       /* still a leak */
  } else if (!strcmp(c, "root_region")) {   /* a registered region is a root */
    void **r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r[10] = leak_a(50);
    __lsan_register_root_region(r, 4096);
    printf("registered leaked=%d\n", __lsan_do_recoverable_leak_check());
    __lsan_unregister_root_region(r, 4096);
    printf("unregistered leaked=%d\n", __lsan_do_recoverable_leak_check());
    __lsan_register_root_region(r, 4096);   /* a root again at exit */
  } else if (!strcmp(c, "unregister_bad")) { /* LSan dies */
    static char region[64];
    __lsan_unregister_root_region(region, sizeof region);
    printf("after bad unregister\n");
  } else if (!strcmp(c, "global")) {        /* reachable only from a global */
    g_keep = leak_a(60);
    printf("global leaked=%d\n", __lsan_do_recoverable_leak_check());
  } else if (!strcmp(c, "stack")) {
    return on_stack();
  } else if (!strcmp(c, "registers")) {
    pthread_t t;
    pthread_create(&t, NULL, reg_thread, NULL);
    while (!reg_ready) __asm__ volatile("" ::: "memory");
    printf("registers leaked=%d\n", __lsan_do_recoverable_leak_check());
    reg_stop = 1;
    pthread_join(t, NULL);
  } else if (!strcmp(c, "tls")) {
    pthread_t t;
    pthread_create(&t, NULL, tls_thread, NULL);
    while (!tls_ready) __asm__ volatile("" ::: "memory");
    printf("tls leaked=%d\n", __lsan_do_recoverable_leak_check());
    fflush(stdout);
    _exit(0);
  } else if (!strcmp(c, "dtls") || !strcmp(c, "dtls_thread")) {
    dtls_setup(!strcmp(c, "dtls_thread"));
    scrub();
    printf("dtls leaked=%d\n", __lsan_do_recoverable_leak_check());
    fflush(stdout);
    _exit(0);                               /* the thread never ends: no check at exit */
  } else if (!strcmp(c, "unaligned")) {     /* a pointer stored at an odd address */
    char *buf = leak_a(64);
    void *p = leak_b(24);
    memcpy(buf + 3, &p, sizeof p);
    p = NULL;
    g_keep = buf;
    scrub();
    printf("unaligned leaked=%d\n", __lsan_do_recoverable_leak_check());
  } else if (!strcmp(c, "deep")) {          /* a deep stack for malloc_context_size */
    drop(leak_a, 5);
  } else if (!strcmp(c, "joined")) {        /* joined threads: glibc keeps their DTVs (pthread_create's) */
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, idle_thread, NULL);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  } else if (!strcmp(c, "too_big")) {       /* max_allocation_size_mb=16: one byte more fails */
    g_keep = leak_a(9);
    memset(g_keep, 'k', 9);
    errno = 0;
    void *q = realloc(g_keep, ((size_t)16 << 20) + 1);
    printf("realloc null=%d\nenomem=%d\n", q == NULL, errno == ENOMEM);
    printf("kept=%d\n", q == NULL && memcmp(g_keep, "kkkkkkkkk", 9) == 0);
    if (q) g_keep = q;
    g_sink = malloc(((size_t)17 << 20));
    printf("malloc null=%d\n", g_sink == NULL);
    free(g_sink);
    g_sink = calloc(((size_t)1 << 20) + 1, 16);
    printf("calloc null=%d\n", g_sink == NULL);
    free(g_sink);
    g_sink = malloc((size_t)16 << 20); /* the limit itself is allowed */
    printf("limit null=%d\n", g_sink == NULL);
    free(g_sink);
  } else if (!strcmp(c, "alloc_hooks")) {   /* the hooks, ownership and size */
    printf("slot=%d\n", __sanitizer_install_malloc_and_free_hooks(hk_on_malloc, hk_on_free));
    char *p = malloc(4242);
    hk_watch = p;
    /* The interface: "returned by the allocator and not yet freed".  Clang
     * 14's LSan also owns interior pointers and freed blocks and dies on a
     * global's address: those answers are heapcheck's only (EXTRA). */
    printf("owned=%d\nsize=%d\n", __sanitizer_get_ownership(p), (int)__sanitizer_get_allocated_size(p));
    if (getenv("TEST_OWNERSHIP_EXTRA"))
      printf("interior owned=%d\nglobal owned=%d\n", __sanitizer_get_ownership(p + 8), __sanitizer_get_ownership(&hk_watch));
    free(p);
    printf("mallocs=%d\nfrees=%d\nowned in free=%d\nsize in free=%d\n", hk_mallocs, hk_frees, hk_owned_in_free,
           (int)hk_size_in_free);
    if (getenv("TEST_OWNERSHIP_EXTRA")) printf("freed owned=%d\n", __sanitizer_get_ownership(p));
  } else if (!strcmp(c, "fail_leak")) {     /* a failing program that leaks: status 3 kept (LSan: 23) */
    drop(leak_a, 9);
    exit(3);
  } else if (!strcmp(c, "fail_clean")) {    /* a failing program without leaks keeps its status */
    g_keep = leak_a(11);
    exit(3);
  } else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  return 0;
}
