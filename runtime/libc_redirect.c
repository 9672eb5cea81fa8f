/* libc_redirect.c - libc's own malloc family jumps to ours; or ours to the
 * next definitions, when the program brings its own allocator (the end of
 * this file).
 *
 * Why.  Interposition (LD_PRELOAD, or -lheapcheck ahead of libc) makes every
 * reference to malloc that the dynamic loader resolves in the global scope
 * ours.  Three kinds of reference are not resolved there and reach libc's
 * code instead:
 *   - a module loaded with dlopen(..., RTLD_DEEPBIND) looks its symbols up in
 *     its own dependencies first, libc among them: PHP loads every extension
 *     so, and its pdo.so frees at start-up a block our malloc gave
 *     ("free(): invalid pointer", abort; the same with jemalloc, tcmalloc,
 *     mimalloc and snmalloc preloaded: php-src issues 10670, 11133, 11564);
 *   - dlsym(dlopen("libc.so.6"), "free") and dlvsym;
 *   - another interposer's dlsym(RTLD_NEXT, "malloc") when it comes after us.
 * A block then has two owners, and the checker misses what libc allocated.
 * valgrind redirects every libc entry of the family to its own; so do we: at
 * start-up the first instruction of each libc function of the family becomes
 * a jump to our definition of it.  The jump keeps the caller's return address
 * on the stack (no frame of its own), so stacks and the caller's address seen
 * by malloc are those of a direct call.
 *
 * When.  Once, from the library's constructor, and only when all of these
 * hold (otherwise nothing is written and libc stays as it was):
 *   - HEAPCHECK_REDIRECT_LIBC is not 0;
 *   - libc.so.6 is a loaded shared object (a static link has no second malloc);
 *   - the process's malloc and free are ours (not another preloaded
 *     allocator's, not the program's own): each name is redirected only when
 *     its global definition lies in this library;
 *   - the process has one thread (__libc_single_threaded): no other thread can
 *     be executing the bytes being rewritten;
 *   - libc's function is at least as long as the jump (its symbol's size);
 *   - the page can be made writable and executable for the write (a W^X policy
 *     that refuses leaves the function alone; verbose level 1 says so), and its
 *     protection is put back to the PT_LOAD segment's own.
 *
 * The encoding of the jump is the architecture-specific part: x86-64 only
 * (a 5-byte jmp rel32 when ours is within 2 GiB, else jmp *0(%rip) and the
 * 8-byte address); other architectures redirect nothing. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>

#include "hc_base.h"
#include "hc_checker.h"
#include "hc_heap_view.h"
#include "hc_options.h"
#include "hc_runtime.h"

/* The program brings its own malloc family: ours jump to the next ones (the
 * end of this file), and libc's are left alone. */
static bool stepped_aside;

/* The names whose libc definitions take or give heap blocks, or report on
 * them.  __libc_malloc and the other __libc_ names are aliases in libc (the
 * same code), so their callers are covered by the same jump. */
static const char *const family[] = {
    "malloc",      "free",           "calloc",   "realloc",   "reallocarray", "posix_memalign",
    "aligned_alloc", "memalign",     "valloc",   "pvalloc",   "malloc_usable_size", "mallinfo",
    "mallinfo2",   "malloc_stats",   "malloc_trim", "mallopt", "malloc_info",
};

#if defined(__x86_64__)
enum { JUMP_MAX = 14 };
/* Writes the jump from `at` to `to` into buf; its length. */
static size_t encode_jump(uint8_t *buf, uintptr_t at, uintptr_t to) {
  intptr_t rel = (intptr_t)(to - (at + 5));
  if (rel == (int32_t)rel) {
    int32_t r = (int32_t)rel;
    buf[0] = 0xe9; /* jmp rel32 */
    memcpy(buf + 1, &r, 4);
    return 5;
  }
  static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
  memcpy(buf, jmp_rip, 6);
  memcpy(buf + 6, &to, 8);
  return 14;
}
#define HAVE_JUMP 1
#else
#define HAVE_JUMP 0
#endif

#if HAVE_JUMP
/* A loaded module as dl_iterate_phdr shows it: its load address and program
 * headers (in its own mapped image, valid while it stays loaded: libc and
 * this library never leave). */
typedef struct module {
  uintptr_t base;
  const ElfW(Phdr) *phdr;
  int phnum;
} module_t;

/* The PT_LOAD segment of m holding a, or NULL. */
static const ElfW(Phdr) *segment_of(const module_t *m, uintptr_t a) {
  for (int i = 0; i < m->phnum; i++) {
    const ElfW(Phdr) *ph = &m->phdr[i];
    uintptr_t lo = m->base + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= lo && a - lo < ph->p_memsz) return ph;
  }
  return NULL;
}

/* path names libc.so.6 (in any directory). */
static bool is_libc_path(const char *path) {
  const char *slash = strrchr(path, '/');
  return strcmp(slash ? slash + 1 : path, "libc.so.6") == 0;
}

/* A module's dynamic symbols, their names and its GNU hash table (or NULL). */
typedef struct tables {
  const ElfW(Sym) *symtab;
  const char *strtab;
  const uint32_t *gnu;
} tables_t;

/* This library (the module holding hci_redirect_libc) and libc.so.6, found in
 * one pass over the loaded modules. */
typedef struct modules {
  module_t self, libc;
  bool have_self, have_libc;
  tables_t libc_tab, self_tab; /* module_tables */
} modules_t;

static int find_modules(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  modules_t *q = arg;
  module_t m = {info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum};
  if (!q->have_libc && info->dlpi_name && is_libc_path(info->dlpi_name)) q->libc = m, q->have_libc = true;
  if (!q->have_self && segment_of(&m, (uintptr_t)hci_redirect_libc)) q->self = m, q->have_self = true;
  return q->have_self && q->have_libc;
}

/* Module m's dynamic symbol table, its strings and its GNU hash table, from
 * its dynamic section, once for the whole family.  The loader has usually
 * relocated the section's addresses in place; a value below the load
 * address is still the file's. */
static void module_tables(const module_t *m, tables_t *t) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < m->phnum; i++)
    if (m->phdr[i].p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(m->base + m->phdr[i].p_vaddr);
  for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
    uintptr_t v = dyn->d_un.d_ptr < m->base ? m->base + dyn->d_un.d_ptr : dyn->d_un.d_ptr;
    if (dyn->d_tag == DT_SYMTAB) t->symtab = (const ElfW(Sym) *)v;
    else if (dyn->d_tag == DT_STRTAB) t->strtab = (const char *)v;
    else if (dyn->d_tag == DT_GNU_HASH) t->gnu = (const uint32_t *)v;
  }
}

/* The size of module m's dynamic symbol `name` whose address is `at`, from
 * its GNU hash table; 0 when it is not found.  dladdr1 would answer the same,
 * but glibc's searches every symbol of the module on each call: 1.7 M
 * instructions for the family, 13 times a trivial program's whole run. */
static size_t dynsym_size(const module_t *m, const tables_t *t, const char *name, uintptr_t at) {
  const uint32_t *gnu = t->gnu;
  if (!t->symtab || !t->strtab || !gnu) return 0;
  /* The table: nbuckets, symoffset, bloom size, bloom shift, the bloom
   * words, the buckets, then one hash a symbol from symoffset on (its low
   * bit set on the last of a chain). */
  uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
  if (nbuckets == 0) return 0;
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t h = 5381;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return 0;
  for (;; i++) {
    uint32_t ch = chain[i - symoffset];
    const ElfW(Sym) *sym = &t->symtab[i];
    if ((ch | 1) == (h | 1) && m->base + sym->st_value == at && strcmp(t->strtab + sym->st_name, name) == 0)
      return sym->st_size;
    if (ch & 1) return 0;
  }
}

/* One planned rewrite: libc's function at `at` becomes `jump`. */
typedef struct plan {
  uintptr_t at;
  size_t len;
  int prot; /* the segment's own protection, put back after the write */
  uint8_t jump[JUMP_MAX];
  uint8_t orig[JUMP_MAX]; /* the bytes the jump replaces */
} plan_t;

/* Plans the rewrite of libc's `name`; false when a condition of the header
 * does not hold for it.  No allocation (the allocator's own tests count
 * every block): dlsym that finds its symbol allocates nothing.  libc's
 * definition is the next one after ours in the global scope, so RTLD_NEXT
 * from this module, checked to lie in libc.so.6. */
/* Plans the jump from module m's function `name` at `at` to `to`; false
 * when `at` is not in m's code or the function is shorter than the jump. */
static bool plan_jump(plan_t *p, const module_t *m, const tables_t *t, const char *name, uintptr_t at, uintptr_t to) {
  const ElfW(Phdr) *seg = segment_of(m, at);
  if (!seg || !(seg->p_flags & PF_X)) return false;
  p->at = at;
  p->len = encode_jump(p->jump, at, to);
  if (dynsym_size(m, t, name, at) < p->len) return false;
  p->prot = (seg->p_flags & PF_R ? PROT_READ : 0) | (seg->p_flags & PF_W ? PROT_WRITE : 0) | PROT_EXEC;
  memcpy(p->orig, (const void *)at, p->len);
  return true;
}

static bool plan_one(const char *name, const modules_t *mods, plan_t *p) {
  void *ours = dlsym(RTLD_DEFAULT, name);
  void *theirs = dlsym(RTLD_NEXT, name);
  if (!ours || !theirs || ours == theirs) return false;
  if (!segment_of(&mods->self, (uintptr_t)ours)) return false;
  return plan_jump(p, &mods->libc, &mods->libc_tab, name, (uintptr_t)theirs, (uintptr_t)ours);
}

/* Writes len bytes of code at p->at; false when the page cannot be made writable. */
static bool write_code(const plan_t *p, const uint8_t *bytes) {
  const uintptr_t page = 4096; /* mprotect's unit on every page size: a multiple of it */
  uintptr_t lo = p->at & ~(page - 1), hi = (p->at + p->len + page - 1) & ~(page - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  memcpy((void *)p->at, bytes, p->len);
  mprotect((void *)lo, hi - lo, p->prot);
  return true;
}
#endif

void hci_redirect_libc(void) {
#if HAVE_JUMP
  if (!hci_opt_bool(HCO_HEAPCHECK_REDIRECT_LIBC) || !__libc_single_threaded || stepped_aside) return;
  /* A static link has no libc.so.6 among its modules (and its malloc is ours
   * already). */
  modules_t mods = {0};
  dl_iterate_phdr(find_modules, &mods);
  if (!mods.have_self || !mods.have_libc) return;
  module_tables(&mods.libc, &mods.libc_tab);
  enum { N = sizeof family / sizeof family[0] };
  plan_t plans[N];
  bool planned[N];
  for (size_t i = 0; i < N; i++) planned[i] = plan_one(family[i], &mods, &plans[i]);
  /* Both of malloc and free, or nothing: a module whose malloc is ours and
   * whose free is libc's would be worse off than with neither. */
  if (!planned[0] || !planned[1]) return;
  int done = 0;
  for (size_t i = 0; i < N; i++) {
    if (!planned[i]) continue;
    if (!write_code(&plans[i], plans[i].jump)) {
      /* A W^X policy refuses the first write; should free's be refused after
       * malloc's was made, malloc's is undone (the two stay together). */
      hci_log(1, "libc's %s left alone: its code cannot be made writable", family[i]);
      if (i == 1) write_code(&plans[0], plans[0].orig);
      if (i <= 1) return;
      continue;
    }
    done++;
  }
  hci_log(1, "libc's malloc family redirected to heapcheck's: %d functions", done);
#endif
}

/* ---- the program's own allocator ----
 *
 * Preloaded, our definitions come after the executable's in the global
 * scope: a program that defines its own malloc family (Firefox's
 * mozjemalloc in the executable, any program linking an allocator in)
 * keeps its malloc and free, but every name of the family it does not
 * define was ours: reallocarray, malloc_usable_size, and the sized and
 * aligned operator delete (C++14, 17) that compilers call.  Blocks of the
 * program's allocator came to our free ("free(): invalid pointer ... not
 * allocated by heapcheck", abort: Firefox's child processes at every
 * start), and a program's own unsized operator delete was not called where
 * libstdc++'s sized one calls it (real29).  So, at start-up, each of our
 * definitions that the global scope resolves to becomes a jump to the next
 * definition of its name (libc's, libstdc++'s), which calls the program's
 * functions as it would without us:
 *   - the C family and the C++ operators, when the global malloc or free is
 *     not ours and a block of it is not ours either (a wrapper that counts
 *     and calls ours through RTLD_NEXT, or __libc_malloc which libc's
 *     redirection makes ours, keeps us);
 *   - the C++ operators only, when the global unsized operator new or
 *     delete is not ours (the program's, calling malloc: ours or its own).
 * In the first case nothing of the program's memory is ours to check: a
 * checker says so and stands down, and libc's family is not redirected.
 * The conditions of the rewrite are libc's above (one thread, x86-64, a
 * writable code page, a long enough function). */
static const char *const family_more[] = {
    "cfree", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc", "__libc_memalign",
    "__libc_valloc", "__libc_pvalloc", "__posix_memalign", "__libc_mallinfo", "__libc_mallopt",
};
static const char *const cxx_operators[] = {
    "_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
    "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

#if HAVE_JUMP
/* Whether the global definition of name is this library's. */
static bool global_is_ours(const modules_t *mods, const char *name) {
  void *d = dlsym(RTLD_DEFAULT, name);
  return d && segment_of(&mods->self, (uintptr_t)d);
}

/* Plans the rewrite of our `name` into a jump to the next definition of
 * it; false when the global one is not ours or there is no next one. */
static bool plan_aside(const char *name, const modules_t *mods, plan_t *p) {
  void *ours = dlsym(RTLD_DEFAULT, name);
  void *next = dlsym(RTLD_NEXT, name);
  if (!ours || !next || ours == next) return false;
  return plan_jump(p, &mods->self, &mods->self_tab, name, (uintptr_t)ours, (uintptr_t)next);
}

/* Our definitions of names[0..n) that the global scope resolves to become
 * jumps to the next ones; how many did. */
static int aside(const modules_t *mods, const char *const *names, size_t n) {
  int done = 0;
  for (size_t i = 0; i < n; i++) {
    plan_t p;
    if (!plan_aside(names[i], mods, &p)) continue;
    if (write_code(&p, p.jump)) done++;
    else hci_log(1, "heapcheck's %s left alone: its code cannot be made writable", names[i]);
  }
  return done;
}

/* Whether the global malloc may be ours underneath (a wrapper of ours):
 * a block of it is ours, or lies in a loaded module (a wrapper that finds
 * ours with dlsym in its own constructor, which runs after ours, serves the
 * calls before it from a static buffer: that block said "not ours", and
 * such a process lost its checker and ran on libc's malloc; val29). */
static bool global_malloc_is_ours(void) {
  void *(*gm)(size_t);
  void (*gf)(void *);
  *(void **)&gm = dlsym(RTLD_DEFAULT, "malloc");
  *(void **)&gf = dlsym(RTLD_DEFAULT, "free");
  if (!gm || !gf) return true;
  void *p = gm(24);
  Dl_info info;
  bool ours = !p || hci_heap_owns((uintptr_t)p) || dladdr(p, &info) != 0;
  if (p) gf(p);
  return ours;
}
#endif

void hci_step_aside(void) {
#if HAVE_JUMP
  if (!__libc_single_threaded) return;
  modules_t mods = {0};
  dl_iterate_phdr(find_modules, &mods);
  if (!mods.have_self || !mods.have_libc) return; /* a static link: one definition of each */
  /* libheapcheck.a in a dynamic executable: our definitions are the
   * program's own, whatever dlsym finds of the names it does not export. */
  if (mods.self.phdr == (const ElfW(Phdr) *)getauxval(AT_PHDR)) return;
  bool c = !(global_is_ours(&mods, "malloc") && global_is_ours(&mods, "free"));
  bool cxx = !(global_is_ours(&mods, "_Znwm") && global_is_ours(&mods, "_ZdlPv"));
  if (c && global_malloc_is_ours()) c = false;
  if (!c && !cxx) return;
  module_tables(&mods.self, &mods.self_tab);
  int done = aside(&mods, cxx_operators, sizeof cxx_operators / sizeof cxx_operators[0]);
  if (c) {
    done += aside(&mods, family, sizeof family / sizeof family[0]);
    done += aside(&mods, family_more, sizeof family_more / sizeof family_more[0]);
    stepped_aside = true;
    hci_checker_stand_down("the program has a malloc of its own: heapcheck is not its allocator");
  }
  hci_log(1, "heapcheck steps aside for the program's own %s: %d functions jump to the next definitions",
          c ? "malloc family" : "operator new and delete", done);
#endif
}
