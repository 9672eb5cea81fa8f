/* test_roots.c - the leak checker's roots reach a pointer wherever a program
 * may keep it, and never reach into excluded state.
 *
 * A distinct heap pointer is kept in exactly one place each:
 *   global            a global of this program            (hci_roots_globals)
 *   tls-main          a static __thread of this program, main thread (its TLS range)
 *   tls-thread        the same variable in another thread (that thread's TLS range)
 *   module-global     a global of a dlopen'ed module       (hci_roots_globals)
 *   module-tls        a __thread of the dlopen'ed module: dynamic TLS, a block
 *                     ld.so mallocs; reached through the DTV (a small flood
 *                     over heap objects, as the checker's flood will do)
 *   specific          pthread_setspecific, first-level slot (inside struct pthread)
 *   specific-2nd      pthread_setspecific, key >= 32 (libc's second-level array)
 *   stack             a volatile local of another thread
 *   register          a callee-saved register of another, spinning thread
 *   ymm-upper         the upper half of ymm9 of a spinning thread (AVX2 machines)
 *   zmm17             zmm17 of a spinning thread (AVX-512 machines)
 *   excluded          a global inside a range given to hci_roots_exclude: NOT found
 * Pointers are kept XOR-hidden everywhere else, and "found" means found at the
 * exact address where it was stored (or, for registers and struct pthread,
 * inside the right thread's register copy / TLS range), so stray copies on the
 * test's own stack cannot make a check pass. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_check.h"

#define HIDE 0x5a5a5a5a5a5a5a5aull

enum { C_GLOBAL, C_TLS_MAIN, C_TLS_THREAD, C_MOD_GLOBAL, C_MOD_TLS, C_SPECIFIC, C_SPECIFIC2, C_STACK, C_REGISTER,
       C_YMM, C_ZMM, C_EXCLUDED, NC };
static const char *const cname[NC] = {"global", "tls-main", "tls-thread", "module-global", "module-tls",
                                      "specific", "specific-2nd", "stack", "register", "ymm-upper", "zmm17",
                                      "excluded"};
static bool skipped[NC];

static uintptr_t hidden[NC];        /* value ^ HIDE */
static uintptr_t where[NC];         /* address the value was stored at (0: unknown, see the case) */
static bool found[NC];
static const char *found_kind[NC];

static void *volatile g_slot;
static __thread void *volatile t_slot;
static struct {
  void *volatile slot;
} excluded_state;

static _Atomic int quit;
static _Atomic int tid_thread, tid_stack, tid_reg, tid_ymm, tid_zmm;
static _Atomic int ready;

static hc_noinline void *reveal(int c) { return (void *)(hidden[c] ^ HIDE); }

/* ---------------------------------------------------------------- threads */

static void *tls_thread(void *arg) {
  (void)arg;
  t_slot = reveal(C_TLS_THREAD);
  where[C_TLS_THREAD] = (uintptr_t)&t_slot;
  atomic_store(&tid_thread, (int)syscall(SYS_gettid));
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&quit)) usleep(1000);
  t_slot = NULL;
  return NULL;
}

static void *stack_thread(void *arg) {
  (void)arg;
  void *volatile local = reveal(C_STACK);
  where[C_STACK] = (uintptr_t)&local;
  atomic_store(&tid_stack, (int)syscall(SYS_gettid));
  atomic_fetch_add(&ready, 1);
  while (!atomic_load(&quit)) usleep(1000);
  local = NULL;
  return NULL;
}

static void *reg_thread(void *arg) {
  (void)arg;
  atomic_store(&tid_reg, (int)syscall(SYS_gettid));
#if defined(__x86_64__)
  register uintptr_t r asm("r15") = hidden[C_REGISTER];
  __asm__ __volatile__("xor %1, %0" : "+r"(r) : "r"(HIDE)); /* the pointer now lives in r15 only */
  atomic_fetch_add(&ready, 1);
  while (!atomic_load_explicit(&quit, memory_order_relaxed)) __asm__ __volatile__("" : "+r"(r));
  __asm__ __volatile__("xor %1, %0" : "+r"(r) : "r"(HIDE));
#else
  atomic_fetch_add(&ready, 1);
  while (!atomic_load_explicit(&quit, memory_order_relaxed)) {
  }
#endif
  return NULL;
}

#if defined(__x86_64__)
/* The pointer is formed in rax, moved into the upper half of ymm9 only, and
 * rax is cleared before the thread announces it is ready. */
__attribute__((target("avx2"))) static void ymm_spin(uintptr_t h) {
  __asm__ __volatile__("mov %[h], %%rax\n\t"
                       "xor %[k], %%rax\n\t"
                       "vmovq %%rax, %%xmm9\n\t"
                       "vperm2i128 $0x08, %%ymm9, %%ymm9, %%ymm9\n\t" /* high = p, low = 0 */
                       "xor %%eax, %%eax\n\t"
                       "lock incl (%[r])\n\t"
                       "1: pause\n\t"
                       "cmpl $0, (%[f])\n\t"
                       "je 1b\n\t"
                       "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
                       "vzeroupper\n\t"
                       :
                       : [h] "r"(h), [k] "r"(HIDE), [r] "r"(&ready), [f] "r"(&quit)
                       : "rax", "xmm9", "memory", "cc");
}

__attribute__((target("avx512f"))) static void zmm_spin(uintptr_t h) {
  __asm__ __volatile__("mov %[h], %%rax\n\t"
                       "xor %[k], %%rax\n\t"
                       "vpbroadcastq %%rax, %%zmm17\n\t"
                       "xor %%eax, %%eax\n\t"
                       "lock incl (%[r])\n\t"
                       "1: pause\n\t"
                       "cmpl $0, (%[f])\n\t"
                       "je 1b\n\t"
                       "vpxorq %%zmm17, %%zmm17, %%zmm17\n\t"
                       "vzeroupper\n\t"
                       :
                       : [h] "r"(h), [k] "r"(HIDE), [r] "r"(&ready), [f] "r"(&quit)
                       : "rax", "xmm17", "memory", "cc");
}
#endif

static void *ymm_thread(void *arg) {
  (void)arg;
  atomic_store(&tid_ymm, (int)syscall(SYS_gettid));
#if defined(__x86_64__)
  ymm_spin(hidden[C_YMM]);
#endif
  return NULL;
}

static void *zmm_thread(void *arg) {
  (void)arg;
  atomic_store(&tid_zmm, (int)syscall(SYS_gettid));
#if defined(__x86_64__)
  zmm_spin(hidden[C_ZMM]);
#endif
  return NULL;
}

/* ---------------------------------------------------------------- roots while stopped */

#define MAX_RANGES 65536
typedef struct range {
  uintptr_t lo, hi;
  const char *kind;
} range_t;
static range_t *ranges;   /* mmap'd: not a global root of its own */
static int nranges;
static const hci_world_t *cur_world;

static void collect(void *ctx, uintptr_t lo, uintptr_t hi, hci_root_kind_t kind) {
  (void)ctx;
  if (nranges < MAX_RANGES) ranges[nranges++] = (range_t){lo, hi, hci_root_kind_name(kind)};
}

/* Thread slot of tid in the current world. */
static const hci_thread_t *thread_of(int tid) {
  for (int i = 0; i < cur_world->nthreads; i++)
    if (cur_world->threads[i].tid == tid) return &cur_world->threads[i];
  return NULL;
}

static void check_location(int c) {
  uintptr_t a = where[c], v = hidden[c] ^ HIDE;
  for (int i = 0; i < nranges; i++) {
    if (a >= ranges[i].lo && a + sizeof(void *) <= ranges[i].hi && *(volatile uintptr_t *)a == v) {
      found[c] = true;
      found_kind[c] = ranges[i].kind;
      return;
    }
  }
}

/* The value anywhere in [lo, hi) intersected with reported ranges of kind. */
static void check_value_in(int c, uintptr_t lo, uintptr_t hi, const char *kind) {
  uintptr_t v = hidden[c] ^ HIDE;
  for (int i = 0; i < nranges; i++) {
    if (strcmp(ranges[i].kind, kind) != 0) continue;
    uintptr_t l = ranges[i].lo > lo ? ranges[i].lo : lo, h = ranges[i].hi < hi ? ranges[i].hi : hi;
    for (uintptr_t a = (l + 7) & ~(uintptr_t)7; a + 8 <= h; a += 8)
      if (*(volatile uintptr_t *)a == v) {
        found[c] = true;
        found_kind[c] = ranges[i].kind;
        return;
      }
  }
}

/* A small flood over heap objects, breadth first, from every root range:
 * reports whether the object holding `target` (a heap address) is reached,
 * or whether `value` is found in a reached object. */
#define MAX_OBJS 200000
static uintptr_t *objs;      /* reached object starts (mmap'd) */
static size_t *objsz;
static int nobjs;
static uintptr_t *seen_tab;  /* open-addressing set of object starts */
#define SEEN_LEN (1u << 20)

static bool seen_insert(uintptr_t s) {
  size_t h = (s >> 4) * 0x9e3779b97f4a7c15ull >> 44;
  for (;;) {
    h &= SEEN_LEN - 1;
    if (seen_tab[h] == s) return false;
    if (seen_tab[h] == 0) {
      seen_tab[h] = s;
      return true;
    }
    h++;
  }
}

static void flood_range(uintptr_t lo, uintptr_t hi) {
  for (uintptr_t a = (lo + 7) & ~(uintptr_t)7; a + 8 <= hi; a += 8) {
    uintptr_t w = *(volatile uintptr_t *)a;
    hci_heap_obj_t o;
    if (w < 4096 || !hci_heap_find(w, &o)) continue;
    if (nobjs < MAX_OBJS && seen_insert(o.start)) {
      objs[nobjs] = o.start;
      objsz[nobjs] = o.size;
      nobjs++;
    }
  }
}

static void mini_flood(void) {
  nobjs = 0;
  memset(seen_tab, 0, SEEN_LEN * sizeof *seen_tab);
  for (int i = 0; i < nranges; i++) flood_range(ranges[i].lo, ranges[i].hi);
  for (int k = 0; k < nobjs; k++) flood_range(objs[k], objs[k] + objsz[k]);
}

static bool reached_location(uintptr_t a, uintptr_t v) {
  for (int k = 0; k < nobjs; k++)
    if (a >= objs[k] && a + 8 <= objs[k] + objsz[k]) return *(volatile uintptr_t *)a == v;
  return false;
}

static bool reached_value(uintptr_t v) {
  for (int k = 0; k < nobjs; k++)
    for (uintptr_t a = objs[k]; a + 8 <= objs[k] + objsz[k]; a += 8)
      if (*(volatile uintptr_t *)a == v) return true;
  return false;
}

static int nnot_stopped;
static bool tls_main_in_range, tls_thread_in_range, reg_found_on_stack;

static int check_cb(void *arg) {
  hci_world_t *w = arg;
  hci_lock_all();
  nnot_stopped = hci_world_stop(w);
  cur_world = w;
  nranges = 0;
  hci_roots_globals(collect, NULL);
  hci_roots_threads(w, (uintptr_t)__builtin_frame_address(0), collect, NULL);

  check_location(C_GLOBAL);
  check_location(C_TLS_MAIN);
  check_location(C_TLS_THREAD);
  check_location(C_MOD_GLOBAL);
  check_location(C_STACK);
  check_location(C_EXCLUDED);

  /* The static __thread variable is inside its thread's computed TLS range. */
  uintptr_t lo, hi;
  hci_tls_range((uintptr_t)__builtin_thread_pointer(), &lo, &hi);
  tls_main_in_range = where[C_TLS_MAIN] >= lo && where[C_TLS_MAIN] + 8 <= hi;
  const hci_thread_t *tt = thread_of(atomic_load(&tid_thread));
  if (tt) {
    hci_tls_range(tt->tp, &lo, &hi);
    tls_thread_in_range = where[C_TLS_THREAD] >= lo && where[C_TLS_THREAD] + 8 <= hi;
  }
  /* First-level specific slots are inside the main thread's struct pthread. */
  hci_tls_range((uintptr_t)__builtin_thread_pointer(), &lo, &hi);
  check_value_in(C_SPECIFIC, lo, hi, "tls");
  if (!found[C_SPECIFIC]) check_value_in(C_SPECIFIC, lo, hi, "stack");
  /* Registers of the spinning thread. */
  const hci_thread_t *rt = thread_of(atomic_load(&tid_reg));
  if (rt) {
    check_value_in(C_REGISTER, (uintptr_t)&rt->regs[0], (uintptr_t)&rt->regs[rt->nregs], "registers");
    if (!found[C_REGISTER]) {
      uintptr_t v = hidden[C_REGISTER] ^ HIDE;
      for (uintptr_t a = (rt->stack_lo + 7) & ~(uintptr_t)7; a + 8 <= rt->stack_hi; a += 8)
        if (*(volatile uintptr_t *)a == v) reg_found_on_stack = true;
    }
  }
  const hci_thread_t *yt = skipped[C_YMM] ? NULL : thread_of(atomic_load(&tid_ymm));
  if (yt) check_value_in(C_YMM, (uintptr_t)&yt->regs[0], (uintptr_t)&yt->regs[yt->nregs], "registers");
  const hci_thread_t *zt = skipped[C_ZMM] ? NULL : thread_of(atomic_load(&tid_zmm));
  if (zt) check_value_in(C_ZMM, (uintptr_t)&zt->regs[0], (uintptr_t)&zt->regs[zt->nregs], "registers");
  /* Heap objects reached from the roots: dynamic TLS and second-level keys. */
  mini_flood();
  if (reached_location(where[C_MOD_TLS], hidden[C_MOD_TLS] ^ HIDE)) {
    found[C_MOD_TLS] = true;
    found_kind[C_MOD_TLS] = "heap (via DTV)";
  }
  if (reached_value(hidden[C_SPECIFIC2] ^ HIDE)) {
    found[C_SPECIFIC2] = true;
    found_kind[C_SPECIFIC2] = "heap (second-level keys)";
  }

  hci_world_resume(w);
  hci_unlock_all();
  return 0;
}

/* ---------------------------------------------------------------- main */

static void *load_module(void) {
  char path[PATH_MAX];
  const char *dir = getenv("HC_BUILD_DIR");
  if (dir) {
    snprintf(path, sizeof path, "%s/tests/roots_tls_module.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
  if (n <= 0) return NULL;
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, "roots_tls_module.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
  return h;
}

int main(void) {
  void *mod = load_module();
  if (!mod) {
    fprintf(stderr, "FAIL: cannot load roots_tls_module.so\n");
    return 1;
  }
  void **(*mod_tls_addr)(void) = (void **(*)(void))dlsym(mod, "roots_mod_tls_addr");
  void (*mod_set_tls)(void *) = (void (*)(void *))dlsym(mod, "roots_mod_set_tls");
  void **(*mod_global_addr)(void) = (void **(*)(void))dlsym(mod, "roots_mod_global_addr");
  void (*mod_set_global)(void *) = (void (*)(void *))dlsym(mod, "roots_mod_set_global");
  if (!mod_tls_addr || !mod_set_tls || !mod_global_addr || !mod_set_global) {
    fprintf(stderr, "FAIL: module symbols\n");
    return 1;
  }

  for (int c = 0; c < NC; c++) hidden[c] = (uintptr_t)malloc(48 + 16 * (size_t)c) ^ HIDE;

  hci_world_t w;
  if (hci_world_init(&w) != 0) return 1;
  hci_roots_exclude((uintptr_t)&excluded_state, (uintptr_t)(&excluded_state + 1));

  g_slot = reveal(C_GLOBAL);
  where[C_GLOBAL] = (uintptr_t)&g_slot;
  t_slot = reveal(C_TLS_MAIN);
  where[C_TLS_MAIN] = (uintptr_t)&t_slot;
  mod_set_global(reveal(C_MOD_GLOBAL));
  where[C_MOD_GLOBAL] = (uintptr_t)mod_global_addr();
  mod_set_tls(reveal(C_MOD_TLS));
  where[C_MOD_TLS] = (uintptr_t)mod_tls_addr();
  excluded_state.slot = reveal(C_EXCLUDED);
  where[C_EXCLUDED] = (uintptr_t)&excluded_state.slot;

  pthread_key_t first, keys[64];
  if (pthread_key_create(&first, NULL) != 0) return 1;
  CHECK(first < 32, "the first free key %u is not a first-level slot", (unsigned)first);
  pthread_setspecific(first, reveal(C_SPECIFIC));
  int nkeys = 0; /* create keys until one lands in a second-level block */
  while (nkeys < 64 && pthread_key_create(&keys[nkeys], NULL) == 0 && keys[nkeys++] < 32) {
  }
  CHECK(nkeys > 0 && keys[nkeys - 1] >= 32, "could not create a key >= 32");
  pthread_setspecific(keys[nkeys - 1], reveal(C_SPECIFIC2));

#if defined(__x86_64__)
  skipped[C_YMM] = !__builtin_cpu_supports("avx2");
  skipped[C_ZMM] = !__builtin_cpu_supports("avx512f");
#else
  skipped[C_YMM] = skipped[C_ZMM] = skipped[C_REGISTER] = true;
#endif
  pthread_t th[5];
  int nth = 0, want = 3;
  pthread_create(&th[nth++], NULL, tls_thread, NULL);
  pthread_create(&th[nth++], NULL, stack_thread, NULL);
  pthread_create(&th[nth++], NULL, reg_thread, NULL);
  if (!skipped[C_YMM]) pthread_create(&th[nth++], NULL, ymm_thread, NULL), want++;
  if (!skipped[C_ZMM]) pthread_create(&th[nth++], NULL, zmm_thread, NULL), want++;
  while (atomic_load(&ready) < want) sched_yield();

  ranges = mmap(NULL, MAX_RANGES * sizeof(range_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  objs = mmap(NULL, MAX_OBJS * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  objsz = mmap(NULL, MAX_OBJS * sizeof(size_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  seen_tab = mmap(NULL, SEEN_LEN * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ranges == MAP_FAILED || objs == MAP_FAILED || objsz == MAP_FAILED || seen_tab == MAP_FAILED) return 1;

  hci_with_loader_lock(check_cb, &w);

  const hci_tls_geometry_t *g = hci_tls_geometry();
  printf("tls geometry: [tp%+ld, tp%+ld), pthread %zu, static %zu (%s); %d ranges, %d heap objects reached\n",
         (long)g->lo_off, (long)g->hi_off, g->pthread_size, g->static_size, g->exact ? "exact" : "estimated",
         nranges, nobjs);
  for (int c = 0; c < NC; c++)
    printf("  %-14s %-7s %s\n", cname[c], skipped[c] ? "skipped" : found[c] ? "found" : "-",
           found[c] ? found_kind[c] : "");

  CHECK(nnot_stopped == 0, "%d threads did not stop", nnot_stopped);
  for (int c = 0; c < NC; c++) {
    if (c == C_EXCLUDED) CHECK(!found[c], "the excluded global was reported as a root");
    else if (skipped[c]) continue;
    else CHECK(found[c], "%s: pointer not found in the reported roots%s", cname[c],
               c == C_REGISTER && reg_found_on_stack ? " (it was spilled to the stack)" : "");
  }
  CHECK(tls_main_in_range, "static __thread of the main thread outside its computed TLS range");
  CHECK(tls_thread_in_range, "static __thread of another thread outside its computed TLS range");
  CHECK(!strcmp(found_kind[C_GLOBAL] ? found_kind[C_GLOBAL] : "", "global"), "global found as %s",
        found_kind[C_GLOBAL]);
  CHECK(!strcmp(found_kind[C_MOD_GLOBAL] ? found_kind[C_MOD_GLOBAL] : "", "global"), "module global found as %s",
        found_kind[C_MOD_GLOBAL]);
  CHECK(!strcmp(found_kind[C_STACK] ? found_kind[C_STACK] : "", "stack"), "stack local found as %s",
        found_kind[C_STACK]);

  /* The loader's text is known; ours and libc's are not the loader's. */
  void *ld_fn = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
  if (!ld_fn) ld_fn = dlsym(RTLD_DEFAULT, "_dl_find_object");
  CHECK(ld_fn && hci_pc_in_ldso((uintptr_t)ld_fn), "an ld.so function is not in the loader's text");
  CHECK(!hci_pc_in_ldso((uintptr_t)&main), "main is in the loader's text");
  CHECK(!hci_pc_in_ldso((uintptr_t)&printf), "printf is in the loader's text");

  /* An excluded range splits a root range: what is around it stays a root. */
  static uintptr_t around[3];
  around[0] = around[2] = 0x1234;
  hci_roots_exclude((uintptr_t)&around[1], (uintptr_t)&around[2]);
  struct {
    bool before, mid, after;
  } seen = {false, false, false};
  nranges = 0;
  hci_roots_globals(collect, NULL);
  for (int i = 0; i < nranges; i++) {
    if ((uintptr_t)&around[0] >= ranges[i].lo && (uintptr_t)&around[1] <= ranges[i].hi) seen.before = true;
    if ((uintptr_t)&around[1] >= ranges[i].lo && (uintptr_t)&around[2] <= ranges[i].hi) seen.mid = true;
    if ((uintptr_t)&around[2] >= ranges[i].lo && (uintptr_t)&around[3] <= ranges[i].hi) seen.after = true;
  }
  CHECK(seen.before && !seen.mid && seen.after, "exclusion split: before %d mid %d after %d", seen.before,
        seen.mid, seen.after);

  /* hci_copy_safe reads around a hole instead of faulting. */
  long pg = sysconf(_SC_PAGESIZE);
  unsigned char *three = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(three, 0xab, 3 * (size_t)pg);
  munmap(three + pg, (size_t)pg);
  unsigned char *copy = malloc(3 * (size_t)pg);
  memset(copy, 0x11, 3 * (size_t)pg);
  size_t got = hci_copy_safe(copy, (uintptr_t)three + 8, 3 * (size_t)pg - 16);
  bool copy_ok = got == 3 * (size_t)pg - 16;
  for (size_t i = 0; i < got; i++) {
    uintptr_t a = (uintptr_t)three + 8 + i;
    unsigned char want = a >= (uintptr_t)three + pg && a < (uintptr_t)three + 2 * pg ? 0 : 0xab;
    if (copy[i] != want) copy_ok = false;
  }
  CHECK(copy_ok, "hci_copy_safe across an unmapped page");
  free(copy);

  atomic_store(&quit, 1);
  for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
  hci_world_destroy(&w);
  if (failures) {
    fprintf(stderr, "FAIL: %d checks\n", failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
