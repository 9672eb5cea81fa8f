/* test_symbolize.c - the in-process symbolizer on real code.
 *
 * Symbolizes return addresses taken in this file's static and global
 * functions (name, file, line), a libc function (qsort in libc.so.6),
 * functions of dlopen'ed modules built with DWARF 2, 4 and 5 line tables
 * (HC_SYM_MODULES, colon-separated), a C++ function (HC_SYM_CXX_MODULE,
 * demangled), the vdso, an address in no module, hci_format_frame, reset,
 * several threads at once, and hci_elf_probe_buffer on this executable.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hc_internal.h"
#include "hc_symbolize.h"

#include "hc_check.h"

#if defined(__clang__)
#define NOCLONE __attribute__((noinline, used))
#else
#define NOCLONE __attribute__((noinline, noclone, used))
#endif

static uintptr_t captured;

NOCLONE static void capture(void) {
  captured = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

NOCLONE static int static_target(void) {
  int line = __LINE__; capture(); /* keep the call on this line */
  __asm__ volatile("" ::: "memory");
  return line;
}

NOCLONE int symtest_global_target(void) {
  int line = __LINE__; capture(); /* keep the call on this line */
  __asm__ volatile("" ::: "memory");
  return line;
}

static bool ends_with(const char *s, const char *suffix) {
  if (s == NULL) return false;
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *base_name(const char *s) {
  const char *p = strrchr(s, '/');
  return p ? p + 1 : s;
}

static void show(const char *what, const hci_frame_t *f) {
  char buf[1024];
  hci_format_frame(buf, sizeof buf, f);
  printf("%-22s %s\n", what, buf);
}

static void check_own_function(const char *name, int (*fn)(void)) {
  int line = fn();
  hci_frame_t f;
  bool ok = hci_symbolize(captured, &f);
  show(name, &f);
  CHECK(ok, "%s: no function", name);
  CHECK(f.function && strcmp(f.function, name) == 0, "function %s, expected %s", f.function, name);
  CHECK(ends_with(f.file, "test_symbolize.c"), "file %s", f.file ? f.file : "(null)");
  CHECK(f.line >= line && f.line <= line + 1, "line %d, the call is on line %d", f.line, line);
  CHECK(f.pc == captured, "pc");
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  CHECK(strcmp(f.module, exe) == 0, "module %s, expected %s", f.module, exe);
  Dl_info di;
  CHECK(dladdr((void *)(uintptr_t)fn, &di) != 0, "dladdr");
  /* The executable is PIE on Debian: its ELF header is at the load base. */
  Elf64_Ehdr *eh = di.dli_fbase;
  uintptr_t base = eh->e_type == ET_DYN ? (uintptr_t)di.dli_fbase : 0;
  CHECK(f.module_offset == captured - base, "module_offset %lx, expected %lx", (unsigned long)f.module_offset,
        (unsigned long)(captured - base));
  CHECK(f.function_offset == captured - (uintptr_t)fn, "function_offset %lx, expected %lx",
        (unsigned long)f.function_offset, (unsigned long)(captured - (uintptr_t)fn));
  /* The entry address + 1 names the function, at offset 1. */
  ok = hci_symbolize((uintptr_t)fn + 1, &f);
  CHECK(ok && f.function && strcmp(f.function, name) == 0 && f.function_offset == 1, "entry+1: %s +%lu",
        f.function, (unsigned long)f.function_offset);
}

static void test_libc(void) {
  /* libc's own qsort, even where a sanitizer interposes one. */
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void *q = libc ? dlsym(libc, "qsort") : NULL;
  CHECK(q != NULL, "dlsym qsort");
  if (!q) return;
  hci_frame_t f;
  bool ok = hci_symbolize((uintptr_t)q + 1, &f);
  show("qsort", &f);
  CHECK(ok && f.function && strcmp(f.function, "qsort") == 0, "function %s", f.function);
  CHECK(strncmp(base_name(f.module), "libc.so", 7) == 0, "module %s", f.module);
  Dl_info di;
  CHECK(dladdr(q, &di) && f.module_offset == (uintptr_t)q + 1 - (uintptr_t)di.dli_fbase, "module_offset");
  /* A versioned .symtab name (libc's debug file: __libc_start_main@@GLIBC_2.34)
   * prints without its version. */
  void *start = dlsym(libc, "__libc_start_main");
  ok = start && hci_symbolize((uintptr_t)start + 1, &f);
  show("__libc_start_main", &f);
  CHECK(ok && strcmp(f.function, "__libc_start_main") == 0, "function %s", f.function);
  dlclose(libc);
}

static void module_cb(void) {
  captured = (uintptr_t)__builtin_return_address(0);
  __asm__ volatile("" ::: "memory");
}

static void test_module(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
  if (!h) return;
  int (*fn)(void (*)(void)) = (int (*)(void (*)(void)))(uintptr_t)dlsym(h, "symtest_module_function");
  CHECK(fn != NULL, "dlsym");
  if (!fn) return;
  int line = fn(module_cb);
  hci_frame_t f;
  bool ok = hci_symbolize(captured, &f);
  show(base_name(path), &f);
  CHECK(ok && f.function && strcmp(f.function, "symtest_module_function") == 0, "function %s", f.function);
  CHECK(strcmp(f.module, path) == 0, "module %s", f.module);
  CHECK(ends_with(f.file, "dl_module.c"), "file %s", f.file ? f.file : "(null)");
  CHECK(f.file && f.file[0] == '/', "file %s is not joined with its directory", f.file ? f.file : "(null)");
  CHECK(f.file && !strstr(f.file, "/../") && !strstr(f.file, "/./"), "file %s is not normalized", f.file);
  CHECK(f.line == line, "line %d, expected %d", f.line, line);
  Dl_info di;
  CHECK(dladdr((void *)(uintptr_t)fn, &di) && f.module_offset == captured - (uintptr_t)di.dli_fbase,
        "module_offset");
  uintptr_t pc = captured;
  dlclose(h);
  /* After dlclose the module list follows the loader's counters, and the
   * unloaded module is still known: frames recorded while it was loaded
   * keep its name, marked unloaded. */
  ok = hci_symbolize(pc, &f);
  show("after dlclose", &f);
  CHECK(ok && strcmp(f.function, "symtest_module_function") == 0 && strcmp(f.module, path) == 0 && f.unloaded,
        "unloaded module after dlclose: %s in %s", f.function, f.module);
}

static void test_cxx(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
  if (!h) return;
  void *(*addr)(void) = (void *(*)(void))(uintptr_t)dlsym(h, "hctest_cxx_probe_address");
  void *mangled = dlsym(h, "_ZN6hctest9cxx_probeEi");
  CHECK(addr && mangled && addr() == mangled, "dlsym");
  if (!mangled) return;
  hci_frame_t f;
  bool ok = hci_symbolize((uintptr_t)mangled + 1, &f);
  show("c++", &f);
  CHECK(ok && f.function && strcmp(f.function, "hctest::cxx_probe(int)") == 0, "function %s", f.function);
  CHECK(ends_with(f.file, "cxx_module.cpp"), "file %s", f.file ? f.file : "(null)");
  dlclose(h);
}

static void test_vdso(void) {
  const void *img = (const void *)getauxval(AT_SYSINFO_EHDR);
  if (img == NULL) {
    printf("no vdso: skipped\n");
    return;
  }
  /* Find a function in the vdso's own symbol table with our reader, then
   * ask the symbolizer about its address. */
  /* The image ends with the page holding the end of its PT_LOAD segment
   * (the section headers follow the segment on x86-64). */
  const Elf64_Ehdr *eh = img;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)img + eh->e_phoff);
  size_t end = 0, page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t bias = (uintptr_t)img;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD) {
      if (ph[i].p_offset + ph[i].p_filesz > end) end = ph[i].p_offset + ph[i].p_filesz;
      bias = (uintptr_t)img - ph[i].p_vaddr + ph[i].p_offset;
    }
  end = (end + page - 1) / page * page;
  hci_elf_t e;
  CHECK(hci_elf_open_buffer(&e, img, end), "vdso image");
  hci_symtab_t t;
  if (!hci_symtab_build(&t, &e, true)) {
    printf("vdso without usable .dynsym: module check only\n");
    hci_frame_t f;
    hci_symbolize((uintptr_t)img + 0x10, &f);
    CHECK(strcmp(f.module, "[vdso]") == 0, "module %s", f.module);
    return;
  }
  const hci_sym_t *s = &t.syms[t.n - 1];
  hci_frame_t f;
  bool ok = hci_symbolize(bias + s->addr + 1, &f);
  show("vdso", &f);
  CHECK(strcmp(f.module, "[vdso]") == 0, "module %s", f.module);
  CHECK(ok && strcmp(f.function, s->name) == 0, "function %s, expected %s", f.function, s->name);
  hci_symtab_free(&t);
}

static void expect_format(const hci_frame_t *f, const char *want) {
  char buf[256];
  hci_format_frame(buf, sizeof buf, f);
  CHECK(strcmp(buf, want) == 0, "format %s, expected %s", buf, want);
}

static void test_unknown_and_format(void) {
  int local = 0;
  hci_frame_t f;
  bool ok = hci_symbolize((uintptr_t)&local, &f);
  CHECK(!ok && strcmp(f.module, "?") == 0 && f.function == NULL && f.file == NULL && f.line == 0, "stack address");
  char buf[256];
  int n = hci_format_frame(buf, sizeof buf, &f);
  char want[64];
  snprintf(want, sizeof want, "(?+0x%lx)", (unsigned long)(uintptr_t)&local);
  CHECK(strcmp(buf, want) == 0 && n == (int)strlen(want), "format %s", buf);
  CHECK(!hci_symbolize(0, &f) && strcmp(f.module, "?") == 0, "pc 0");

  hci_frame_t g = {.pc = 0x1234, .module = "/lib/libx.so", .module_offset = 0x234, .function = "fn",
                   .function_offset = 4, .file = "/src/a.c", .line = 17};
  n = hci_format_frame(buf, sizeof buf, &g);
  CHECK(strcmp(buf, "fn /src/a.c:17 (/lib/libx.so+0x234)") == 0, "format %s", buf);
  char small[8];
  int m = hci_format_frame(small, sizeof small, &g);
  CHECK(m == n && strlen(small) == sizeof small - 1 && strncmp(small, buf, 7) == 0, "truncation %d %s", m, small);
  g.line = 0;
  expect_format(&g, "fn /src/a.c (/lib/libx.so+0x234)");
  g.file = NULL;
  expect_format(&g, "fn (/lib/libx.so+0x234)");
  g.function = NULL;
  g.file = "a.c";
  g.line = 3;
  expect_format(&g, "a.c:3 (/lib/libx.so+0x234)");
  g.unloaded = true;
  g.build_id = "ab12";
  expect_format(&g, "a.c:3 (/lib/libx.so+0x234, unloaded, build-id ab12)");
  g.build_id = NULL;
  expect_format(&g, "a.c:3 (/lib/libx.so+0x234, unloaded)");
}

static void *thread_main(void *arg) {
  uintptr_t pc = (uintptr_t)arg;
  for (int i = 0; i < 2000; i++) {
    hci_frame_t f;
    if (!hci_symbolize(pc + (uintptr_t)(i % 8), &f) || strcmp(f.function, "symtest_global_target") != 0)
      return (void *)1;
  }
  return NULL;
}

static void test_threads(void) {
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, thread_main, (void *)((uintptr_t)symtest_global_target + 1));
  int bad = 0;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    bad += r != NULL;
  }
  CHECK(bad == 0, "%d threads saw wrong results", bad);
}

/* The child of a fork symbolizes with the parent's caches. */
static void test_fork(void) {
  pid_t pid = fork();
  if (pid == 0) {
    hci_frame_t f;
    bool ok = hci_symbolize((uintptr_t)symtest_global_target + 1, &f);
    _exit(ok && strcmp(f.function, "symtest_global_target") == 0 ? 0 : 1);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  CHECK(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

static void test_probe_self(void) {
  int fd = open("/proc/self/exe", O_RDONLY);
  struct stat st;
  CHECK(fd >= 0 && fstat(fd, &st) == 0, "open self");
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  CHECK(p != MAP_FAILED, "mmap");
  if (p == MAP_FAILED) return;
  int n = hci_elf_probe_buffer(p, (size_t)st.st_size);
  CHECK(n > 10, "probe found %d things", n);
  CHECK(hci_elf_probe_buffer(p, 10) == -1, "truncated header accepted");
  munmap(p, (size_t)st.st_size);
  CHECK(hci_elf_probe_buffer("not an elf file at all, definitely not", 40) == -1, "garbage accepted");
}

int main(void) {
  check_own_function("static_target", static_target);
  check_own_function("symtest_global_target", symtest_global_target);
  test_libc();
  const char *mods = getenv("HC_SYM_MODULES");
  if (mods && mods[0]) {
    char *copy = strdup(mods), *save = NULL;
    for (char *m = strtok_r(copy, ":", &save); m; m = strtok_r(NULL, ":", &save)) test_module(m);
    free(copy);
  } else {
    printf("HC_SYM_MODULES not set: dlopen tests skipped\n");
  }
  const char *cxx = getenv("HC_SYM_CXX_MODULE");
  if (cxx && cxx[0]) test_cxx(cxx);
  else printf("HC_SYM_CXX_MODULE not set: C++ test skipped\n");
  test_vdso();
  test_unknown_and_format();
  /* After a reset everything is found again. */
  hci_symbolizer_reset();
  check_own_function("static_target", static_target);
  test_libc();
  test_threads();
  test_fork();
  test_probe_self();
  hci_symbolizer_reset();
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
