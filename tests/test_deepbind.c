/* test_deepbind.c - blocks cross between the program and a module loaded
 * with RTLD_DEEPBIND, whose malloc family binds to libc's own functions
 * (runtime/libc_redirect.c makes those jump to heapcheck's).
 *
 * Usage: test_deepbind MODULE MODE
 *   both: every crossing (module frees the program's blocks and the other way
 *         round, realloc, calloc, posix_memalign, malloc_usable_size, and
 *         libc's free and malloc taken with dlsym on libc's handle); each
 *         block the module allocates must be one of heapcheck's
 *   leak: as both, then the module leaks 4242 bytes (the driver runs this
 *         with HEAPCHECK=normal and wants the leak reported)
 *   off:  HEAPCHECK_REDIRECT_LIBC=0 is set: the module's malloc is libc's
 *         (not heapcheck's), and only its own blocks go to its own free
 * Exit 0 when every check holds; 2 and a message otherwise. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, what)                                          \
  do {                                                          \
    if (!(c)) {                                                 \
      fprintf(stderr, "test_deepbind: FAIL: %s\n", what);       \
      exit(2);                                                  \
    }                                                           \
  } while (0)

typedef int (*owner_fn)(const volatile void *);

static void *sym(void *h, const char *name) {
  void *f = dlsym(h, name);
  if (!f) {
    fprintf(stderr, "test_deepbind: FAIL: no %s: %s\n", name, dlerror());
    exit(2);
  }
  return f;
}

int main(int argc, char **argv) {
  CHECK(argc == 3, "usage: test_deepbind MODULE both|leak|off");
  const char *mode = argv[2];
  owner_fn owned = (owner_fn)(uintptr_t)sym(RTLD_DEFAULT, "__sanitizer_get_ownership");
  void *m = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
  CHECK(m, dlerror());
  void *(*mod_malloc)(size_t) = (void *(*)(size_t))(uintptr_t)sym(m, "mod_malloc");
  void (*mod_free)(void *) = (void (*)(void *))(uintptr_t)sym(m, "mod_free");

  if (strcmp(mode, "off") == 0) {
    void *q = mod_malloc(200);
    CHECK(q && !owned(q), "with HEAPCHECK_REDIRECT_LIBC=0 the module's malloc is still heapcheck's");
    mod_free(q);
    puts("off: the module's malloc is libc's");
    return 0;
  }
  void *(*mod_realloc)(void *, size_t) = (void *(*)(void *, size_t))(uintptr_t)sym(m, "mod_realloc");
  void *(*mod_calloc)(size_t, size_t) = (void *(*)(size_t, size_t))(uintptr_t)sym(m, "mod_calloc");
  size_t (*mod_usable)(void *) = (size_t(*)(void *))(uintptr_t)sym(m, "mod_usable");
  int (*mod_memalign)(void **, size_t, size_t) = (int (*)(void **, size_t, size_t))(uintptr_t)sym(m, "mod_memalign");

  for (int i = 0; i < 1000; i++) { /* the program's blocks freed by the module, both sizes of block */
    void *p = malloc(i % 2 ? 100 : 300000);
    CHECK(p, "malloc");
    mod_free(p);
  }
  void *q = mod_malloc(200);
  CHECK(q && owned(q), "the module's malloc is not heapcheck's");
  memset(q, 1, 200);
  free(q);
  void *r = mod_realloc(malloc(50), 5000);
  CHECK(r && owned(r), "the module's realloc of the program's block");
  memset(r, 2, 5000);
  free(r);
  char *c = mod_calloc(10, 100);
  CHECK(c && owned(c), "the module's calloc");
  for (int i = 0; i < 1000; i++) CHECK(c[i] == 0, "the module's calloc did not clear");
  free(c);
  void *a = NULL;
  CHECK(mod_memalign(&a, 256, 1000) == 0 && a && ((uintptr_t)a & 255) == 0 && owned(a),
        "the module's posix_memalign");
  mod_free(a);
  void *u = malloc(100);
  CHECK(mod_usable(u) >= 100, "the module's malloc_usable_size of the program's block");
  mod_free(u);

  void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
  CHECK(libc, "libc.so.6 is not loaded");
  void *(*libc_malloc)(size_t) = (void *(*)(size_t))(uintptr_t)sym(libc, "malloc");
  void (*libc_free)(void *) = (void (*)(void *))(uintptr_t)sym(libc, "free");
  void *l = libc_malloc(64);
  CHECK(l && owned(l), "libc's own malloc (dlsym on its handle) is not heapcheck's");
  libc_free(l);
  libc_free(malloc(64));
  dlclose(libc);

  if (strcmp(mode, "leak") == 0) {
    void (*mod_leak)(size_t) = (void (*)(size_t))(uintptr_t)sym(m, "mod_leak");
    mod_leak(4242);
  }
  puts("every block crossed");
  return 0;
}
