/* test_cxx_new.cc - every operator new/delete goes through heapcheck.
 *
 * Linked with the static library: the executable defines the mangled
 * operators, so they win over libstdc++'s.  Proof that each variant is
 * ours: hc_get_stats().in_use grows by at least the size on new and drops
 * back on delete (single-threaded, nothing else allocates in between).
 * Also: alignment of aligned new (alignas(64) and alignas(8192) types,
 * arrays of them, explicit std::align_val_t), std::bad_alloc on huge
 * sizes, nullptr from nothrow new, the new_handler protocol of the throwing
 * forms (a handler that frees a reserve is called and the allocation then
 * succeeds; a handler is called again and again until it uninstalls itself,
 * then std::bad_alloc; a handler's own exception propagates), and the
 * nothrow forms ([new.delete.single], as libstdc++): the same handler loop,
 * with nullptr where the throwing forms throw (a handler that throws
 * bad_alloc or anything else, a handler that uninstalls itself) and the
 * allocation when the handler made room. */
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "heapcheck.h"

static int failures;
#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      failures++;                                                         \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fputc('\n', stderr);                                           \
    }                                                                     \
  } while (0)

/* Keeps the compiler from eliding new/delete pairs or folding alignment checks. */
template <class T> static T *escape(T *p) {
  __asm__ volatile("" : "+r"(p)::"memory");
  return p;
}
static uintptr_t addr(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  __asm__ volatile("" : "+r"(v));
  return v;
}
static size_t opaque(size_t v) {
  __asm__ volatile("" : "+r"(v));
  return v;
}

static size_t in_use() {
  hc_stats_t s;
  hc_get_stats(&s);
  return s.in_use;
}

struct alignas(64) A64 {
  char c[100];
};
struct alignas(8192) A8K {
  char c[10];
  A8K() { std::memset(c, 7, sizeof c); }
};
struct Obj {
  int v[5];
  Obj() : v{1, 2, 3, 4, 5} {}
};

/* Checks that p (size bytes) raised in_use from before, is usable, aligned. */
static void check_new(const char *what, const void *p, size_t before, size_t size, size_t align) {
  CHECK(p != nullptr, "%s returned nullptr", what);
  if (!p) return;
  size_t now = in_use();
  CHECK(now >= before + size, "%s: in_use %zu -> %zu, want +%zu (not served by heapcheck?)", what, before, now, size);
  CHECK(addr(p) % align == 0, "%s: %p not %zu-aligned", what, p, align);
  CHECK(malloc_usable_size(const_cast<void *>(p)) >= size, "%s: usable size %zu < %zu", what,
        malloc_usable_size(const_cast<void *>(p)), size);
  std::memset(const_cast<void *>(p), 0x5a, size);
}
static void check_deleted(const char *what, size_t before) {
  size_t now = in_use();
  CHECK(now == before, "%s: in_use %zu after delete, %zu before new (delete not served by heapcheck?)", what, now,
        before);
}

static void test_variants() {
  const size_t sizes[] = {1, 24, 100, 5000, 300000};
  for (size_t n : sizes) {
    size_t b = in_use();
    void *p = escape(::operator new(n));
    check_new("operator new(n)", p, b, n, 16);
    ::operator delete(p);
    check_deleted("operator delete(p)", b);

    p = escape(::operator new[](n));
    check_new("operator new[](n)", p, b, n, 16);
    ::operator delete[](p);
    check_deleted("operator delete[](p)", b);

    p = escape(::operator new(n));
    check_new("operator new(n)", p, b, n, 16);
    ::operator delete(p, n);
    check_deleted("operator delete(p, n)", b);

    p = escape(::operator new[](n));
    check_new("operator new[](n)", p, b, n, 16);
    ::operator delete[](p, n);
    check_deleted("operator delete[](p, n)", b);

    p = escape(::operator new(n, std::nothrow));
    check_new("operator new(n, nothrow)", p, b, n, 16);
    ::operator delete(p, std::nothrow);
    check_deleted("operator delete(p, nothrow)", b);

    p = escape(::operator new[](n, std::nothrow));
    check_new("operator new[](n, nothrow)", p, b, n, 16);
    ::operator delete[](p, std::nothrow);
    check_deleted("operator delete[](p, nothrow)", b);

    for (size_t a = 32; a <= (size_t)4 << 20; a <<= 3) {
      std::align_val_t al{a};
      p = escape(::operator new(n, al));
      check_new("operator new(n, align)", p, b, n, a);
      ::operator delete(p, al);
      check_deleted("operator delete(p, align)", b);

      p = escape(::operator new[](n, al));
      check_new("operator new[](n, align)", p, b, n, a);
      ::operator delete[](p, al);
      check_deleted("operator delete[](p, align)", b);

      p = escape(::operator new(n, al));
      check_new("operator new(n, align)", p, b, n, a);
      ::operator delete(p, n, al);
      check_deleted("operator delete(p, n, align)", b);

      p = escape(::operator new[](n, al));
      check_new("operator new[](n, align)", p, b, n, a);
      ::operator delete[](p, n, al);
      check_deleted("operator delete[](p, n, align)", b);

      p = escape(::operator new(n, al, std::nothrow));
      check_new("operator new(n, align, nothrow)", p, b, n, a);
      ::operator delete(p, al, std::nothrow);
      check_deleted("operator delete(p, align, nothrow)", b);

      p = escape(::operator new[](n, al, std::nothrow));
      check_new("operator new[](n, align, nothrow)", p, b, n, a);
      ::operator delete[](p, al, std::nothrow);
      check_deleted("operator delete[](p, align, nothrow)", b);
    }
  }
}

static void test_expressions() {
  size_t b = in_use();
  Obj *o = escape(new Obj);
  check_new("new Obj", o, b, sizeof(Obj), 16);
  delete o;
  check_deleted("delete Obj", b);

  Obj *oa = escape(new Obj[33]);
  check_new("new Obj[33]", oa, b, 33 * sizeof(Obj), 16);
  delete[] oa;
  check_deleted("delete[] Obj", b);

  A64 *a = escape(new A64);
  check_new("new A64", a, b, sizeof(A64), 64);
  delete a;
  check_deleted("delete A64", b);

  A64 *aa = escape(new A64[10]);
  check_new("new A64[10]", aa, b, 10 * sizeof(A64), 64);
  delete[] aa;
  check_deleted("delete[] A64", b);

  A8K *k = escape(new A8K);
  check_new("new A8K", k, b, sizeof(A8K), 8192);
  delete k;
  check_deleted("delete A8K", b);

  A8K *ka = escape(new A8K[3]);
  /* new[] of a type with a trivial destructor has no cookie: p is the block */
  check_new("new A8K[3]", ka, b, 3 * sizeof(A8K), 8192);
  delete[] ka;
  check_deleted("delete[] A8K", b);

  A64 *an = escape(new (std::nothrow) A64);
  check_new("new (nothrow) A64", an, b, sizeof(A64), 64);
  delete an;
  check_deleted("delete nothrow A64", b);

  A8K *kn = escape(new (std::nothrow) A8K[2]);
  check_new("new (nothrow) A8K[2]", kn, b, 2 * sizeof(A8K), 8192);
  delete[] kn;
  check_deleted("delete[] nothrow A8K", b);
}

static void test_huge() {
  const size_t huge[] = {SIZE_MAX, SIZE_MAX / 2, (size_t)1 << 47, (size_t)1 << 62};
  for (size_t n : huge) {
    bool thrown = false;
    try {
      void *p = escape(::operator new(opaque(n)));
      ::operator delete(p);
    } catch (const std::bad_alloc &) {
      thrown = true;
    }
    CHECK(thrown, "operator new(%#zx) did not throw std::bad_alloc", n);
    thrown = false;
    try {
      char *p = escape(new char[opaque(n)]);
      delete[] p;
    } catch (const std::bad_alloc &) { /* bad_array_new_length is a bad_alloc too */
      thrown = true;
    }
    CHECK(thrown, "new char[%#zx] did not throw", n);
    thrown = false;
    try {
      void *p = escape(::operator new[](opaque(n), std::align_val_t{4096}));
      ::operator delete[](p, std::align_val_t{4096});
    } catch (const std::bad_alloc &) {
      thrown = true;
    }
    CHECK(thrown, "operator new[](%#zx, align 4096) did not throw", n);
    CHECK(::operator new(opaque(n), std::nothrow) == nullptr, "nothrow new(%#zx) did not return nullptr", n);
    CHECK(::operator new[](opaque(n), std::nothrow) == nullptr, "nothrow new[](%#zx) did not return nullptr", n);
    CHECK(::operator new(opaque(n), std::align_val_t{64}, std::nothrow) == nullptr,
          "nothrow aligned new(%#zx) did not return nullptr", n);
  }
}

// ---- new_handler ----

static void *reserve;
static int handler_calls;
static void free_reserve_handler() {
  handler_calls++;
  std::free(reserve);
  reserve = nullptr;
  std::set_new_handler(nullptr); /* nothing more to give: a second failure throws */
}

struct my_error {
  int code;
};
static void throwing_handler() {
  handler_calls++;
  throw my_error{42};
}
static void bad_alloc_handler() {
  handler_calls++;
  throw std::bad_alloc();
}
/* Gives nothing back: the throwing forms must call it again after each
 * failed attempt; on the third call it uninstalls itself, so the next
 * failure throws std::bad_alloc. */
static void counting_handler() {
  if (++handler_calls == 3) std::set_new_handler(nullptr);
}

static size_t vm_size() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0;
  if (!f || std::fscanf(f, "%lu", &size) != 1) size = 0;
  if (f) std::fclose(f);
  return size * 4096;
}

static void test_new_handler() {
  /* A handler that frees a reserve: with the address space capped, a new
   * of R bytes (more than all the free memory the page heap has) fails
   * until the reserve (R + 8 MB) is freed; the page heap then reuses the
   * reserve's pages and the retried new succeeds. */
  struct rlimit old;
  getrlimit(RLIMIT_AS, &old);
  const size_t MB = 1 << 20;
  malloc_trim(0);
  hc_stats_t hs;
  hc_get_stats(&hs);
  const size_t R = hs.page_heap_free + hs.heap_released + 64 * MB;
  reserve = escape(std::malloc(R + 8 * MB));
  CHECK(reserve != nullptr, "reserve");
  std::memset(reserve, 1, 4096);
  struct rlimit lim = old;
  lim.rlim_cur = vm_size() + 32 * MB; /* room for metadata, not for R more */
  if (setrlimit(RLIMIT_AS, &lim) != 0) {
    std::perror("setrlimit");
    failures++;
    return;
  }
  void *probe = escape(std::malloc(R)); /* the cap works: plain malloc fails */
  CHECK(probe == nullptr, "malloc(%zu MB) succeeded under the address-space cap", R / MB);
  std::free(probe);
  handler_calls = 0;
  std::set_new_handler(free_reserve_handler);
  void *p = nullptr;
  try {
    p = escape(::operator new(R));
  } catch (const std::bad_alloc &) {
    CHECK(false, "operator new threw bad_alloc although the handler freed the reserve");
  }
  CHECK(handler_calls == 1, "new_handler called %d times, want 1", handler_calls);
  CHECK(p != nullptr && reserve == nullptr, "allocation after the handler: %p", p);
  if (p) std::memset(p, 2, R);
  ::operator delete(p);
  setrlimit(RLIMIT_AS, &old);
  std::set_new_handler(nullptr);

  /* A handler's own exception propagates out of operator new. */
  handler_calls = 0;
  std::set_new_handler(throwing_handler);
  int code = 0;
  try {
    void *q = escape(::operator new(opaque(SIZE_MAX / 4)));
    ::operator delete(q);
  } catch (const my_error &e) {
    code = e.code;
  } catch (...) {
    code = -1;
  }
  CHECK(code == 42, "the handler's exception did not propagate (got %d)", code);
  CHECK(handler_calls == 1, "throwing handler called %d times", handler_calls);
  code = 0;
  try {
    void *q = escape(::operator new[](opaque(SIZE_MAX / 4), std::align_val_t{256}));
    ::operator delete[](q, std::align_val_t{256});
  } catch (const my_error &e) {
    code = e.code;
  } catch (...) {
    code = -1;
  }
  CHECK(code == 42, "aligned new[]: the handler's exception did not propagate (got %d)", code);

  /* The throwing forms loop on the handler until it is gone, then throw
   * std::bad_alloc: exactly 3 calls of counting_handler for each form. */
  for (int form = 0; form < 4; form++) {
    static const char *const names[4] = {"new(n)", "new[](n)", "new(n, align 64)", "new[](n, align 4096)"};
    handler_calls = 0;
    std::set_new_handler(counting_handler);
    bool thrown = false;
    try {
      size_t n = opaque(SIZE_MAX / 4);
      void *q = form == 0   ? ::operator new(n)
                : form == 1 ? ::operator new[](n)
                : form == 2 ? ::operator new(n, std::align_val_t{64})
                            : ::operator new[](n, std::align_val_t{4096});
      escape(q);
    } catch (const std::bad_alloc &) {
      thrown = true;
    }
    CHECK(thrown, "operator %s: no std::bad_alloc after the handler uninstalled itself", names[form]);
    CHECK(handler_calls == 3, "operator %s: new_handler called %d times, want 3 (loop until it is gone)",
          names[form], handler_calls);
    CHECK(std::get_new_handler() == nullptr, "operator %s: handler still installed", names[form]);
  }
  std::set_new_handler(nullptr);

  /* nothrow forms: the handler is called as by the throwing forms, and
   * nullptr comes back where those throw: once for a handler that throws
   * (bad_alloc or anything else: caught, never std::terminate), three times
   * for counting_handler (until it uninstalls itself).  Each in a child
   * process, so an escaping exception is a signal, not the end of the test. */
  typedef void *(*nothrow_form)(size_t);
  static const nothrow_form forms[4] = {
      [](size_t n) { return ::operator new(n, std::nothrow); },
      [](size_t n) { return ::operator new[](n, std::nothrow); },
      [](size_t n) { return ::operator new(n, std::align_val_t{64}, std::nothrow); },
      [](size_t n) { return ::operator new[](n, std::align_val_t{4096}, std::nothrow); },
  };
  static const char *const fnames[4] = {"new(n, nothrow)", "new[](n, nothrow)", "new(n, align 64, nothrow)",
                                        "new[](n, align 4096, nothrow)"};
  static void (*const handlers[3])() = {bad_alloc_handler, counting_handler, throwing_handler};
  static const int want_calls[3] = {1, 3, 1};
  for (int form = 0; form < 4; form++)
    for (int h = 0; h < 3; h++) {
      std::fflush(nullptr);
      pid_t pid = fork();
      if (pid == 0) {
        handler_calls = 0;
        std::set_new_handler(handlers[h]);
        void *r = forms[form](opaque(SIZE_MAX / 4));
        _exit(r != nullptr ? 3 : handler_calls != want_calls[h] ? 4 : 0);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "operator %s with a %s handler installed: %s", fnames[form],
            h == 0 ? "bad_alloc-throwing" : h == 1 ? "counting" : "my_error-throwing",
            WIFSIGNALED(st)              ? "the handler was called and its exception escaped (std::terminate)"
            : WEXITSTATUS(st) == 3       ? "returned non-null"
            : WEXITSTATUS(st) == 4       ? "did not call the new_handler as often as the throwing form"
                                         : "child failed");
    }

  /* A nothrow form gets the memory the handler makes room for: with the
   * address space capped as above, new(R, nothrow) calls the handler,
   * which frees the reserve, and returns the block. */
  for (int form = 0; form < 2; form++) {
    malloc_trim(0);
    hc_get_stats(&hs);
    const size_t R2 = hs.page_heap_free + hs.heap_released + 64 * MB;
    reserve = escape(std::malloc(R2 + 8 * MB));
    CHECK(reserve != nullptr, "reserve");
    std::memset(reserve, 1, 4096);
    lim = old;
    lim.rlim_cur = vm_size() + 32 * MB;
    if (setrlimit(RLIMIT_AS, &lim) != 0) {
      std::perror("setrlimit");
      failures++;
      return;
    }
    handler_calls = 0;
    std::set_new_handler(free_reserve_handler); /* makes room and uninstalls itself */
    void *n = escape(form == 0 ? ::operator new(R2, std::nothrow) : ::operator new[](R2, std::align_val_t{64}, std::nothrow));
    CHECK(n != nullptr && handler_calls == 1 && reserve == nullptr,
          "%s(%zu MB, nothrow) under the cap: %p, handler called %d times", form == 0 ? "new" : "aligned new[]",
          R2 / MB, n, handler_calls);
    if (form == 0) ::operator delete(n);
    else ::operator delete[](n, std::align_val_t{64});
    std::free(reserve);
    reserve = nullptr;
    setrlimit(RLIMIT_AS, &old);
  }
  setrlimit(RLIMIT_AS, &old);
  std::set_new_handler(nullptr);
}

// ---- one warning per failed request (run as `test_cxx_new limit`) ----

/* Under HEAPCHECK=normal and LSAN_OPTIONS=max_allocation_size_mb=1:
 * allocator_may_return_null=1, a request of 2 MB by each form fails, then
 * bad_alloc or nullptr; each prints "limit: <form>" first, and the test
 * (tests/meson.build, test_cxx_new_limit) counts the checker's warnings
 * after each: one per failure, as LSan's.  operator new's slow path tried
 * again before the handler loop from session 19 on: two warnings for new
 * and new[] (and the aligned forms once they tail-called theirs). */
static void test_limit() {
  static const char *const names[8] = {"new", "new[]", "new nothrow", "new[] nothrow", "new align 64",
                                        "new[] align 64", "new align 64 nothrow", "new[] align 64 nothrow"};
  const size_t n = 2u << 20;
  for (int form = 0; form < 8; form++) {
    std::printf("limit: %s\n", names[form]);
    void *p = reinterpret_cast<void *>(1);
    bool thrown = false;
    try {
      switch (form) {
      case 0: p = ::operator new(opaque(n)); break;
      case 1: p = ::operator new[](opaque(n)); break;
      case 2: p = ::operator new(opaque(n), std::nothrow); break;
      case 3: p = ::operator new[](opaque(n), std::nothrow); break;
      case 4: p = ::operator new(opaque(n), std::align_val_t{64}); break;
      case 5: p = ::operator new[](opaque(n), std::align_val_t{64}); break;
      case 6: p = ::operator new(opaque(n), std::align_val_t{64}, std::nothrow); break;
      default: p = ::operator new[](opaque(n), std::align_val_t{64}, std::nothrow); break;
      }
    } catch (const std::bad_alloc &) {
      thrown = true;
    }
    if (form % 4 < 2) CHECK(thrown, "%s(2 MB) above the limit did not throw", names[form]);
    else CHECK(!thrown && p == nullptr, "%s(2 MB) above the limit: %p, thrown %d", names[form], p, thrown);
  }
  std::printf("limit: end\n");
}

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::setvbuf(stderr, nullptr, _IONBF, 0);
  if (argc > 1 && !std::strcmp(argv[1], "limit")) {
    test_limit();
    std::printf(failures ? "%d failures\n" : "one warning per failed request: OK\n", failures);
    return failures != 0;
  }
  /* the sampler moves some objects to page-granular spans: in_use still
   * grows by at least the size, which is all check_new asks */
  free(malloc(1));
  test_variants();
  test_expressions();
  test_huge();
  test_new_handler();
  if (failures) {
    std::fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  std::printf("C++ operators OK\n");
  return 0;
}
