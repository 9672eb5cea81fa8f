/* unwind_nofp.c - call chain built with -fomit-frame-pointer (see
 * tests/meson.build), for test_unwind.c.
 *
 * nofp_a -> nofp_b -> nofp_c -> cb(arg).  Each records the return address it
 * will return to, so the test can compare the unwinder's frames exactly:
 *   ras[1]: nofp_c -> nofp_b,  ras[2]: nofp_b -> nofp_a,  ras[3]: nofp_a -> caller
 * (ras[0] is left to cb: its return address into nofp_c).
 * nofp_b keeps seven values loaded from volatile memory live across its call,
 * more than the other callee-saved registers can hold, so the compiler must
 * use rbp as a general register: a frame-pointer walk sees stack addresses
 * that are not frames (junk[] below) and must not crash on them.
 * nofp_noreturn -> nofp_tail -> nofp_die -> cb records the same way; there
 * nofp_tail's call is its last instruction (nofp_die does not return). */
#include <stdint.h>

typedef void (*nofp_cb)(void *arg);

void nofp_a(nofp_cb cb, void *arg, uintptr_t *ras);

__attribute__((noinline)) static void nofp_c(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[1] = (uintptr_t)__builtin_return_address(0);
  cb(arg);
  __asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static uintptr_t nofp_b(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[2] = (uintptr_t)__builtin_return_address(0);
  /* A fake frame chain inside this frame: increasing, aligned, in-stack
   * "frame pointers" with small fake return addresses. */
  uintptr_t junk[16];
  for (int i = 0; i < 16; i += 2) {
    junk[i] = (uintptr_t)&junk[i + 2 < 16 ? i + 2 : 0];
    junk[i + 1] = 0x1000 + (uintptr_t)i;
  }
  volatile uintptr_t vals[7];
  for (int i = 0; i < 7; i++) vals[i] = (uintptr_t)&junk[2 * (i % 7)];
  uintptr_t a = vals[0], b = vals[1], c = vals[2], d = vals[3], e = vals[4], f = vals[5], g = vals[6];
  nofp_c(cb, arg, ras);
  __asm__ volatile("" : : "r"(junk) : "memory");
  return a ^ (b + c) ^ (d * 3) ^ (e + f) ^ g;
}

/* A call that is the last instruction of its function: its return address
 * is the first byte after nofp_tail, so an unwinder must look up ra - 1.
 * cb must not return (it longjmps). */
void nofp_noreturn(nofp_cb cb, void *arg, uintptr_t *ras);

__attribute__((noinline, noreturn)) static void nofp_die(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[1] = (uintptr_t)__builtin_return_address(0);
  cb(arg);
  __builtin_trap();
}

__attribute__((noinline)) static void nofp_tail(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[2] = (uintptr_t)__builtin_return_address(0);
  nofp_die(cb, arg, ras);
}

__attribute__((noinline)) void nofp_noreturn(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[3] = (uintptr_t)__builtin_return_address(0);
  nofp_tail(cb, arg, ras);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void nofp_a(nofp_cb cb, void *arg, uintptr_t *ras) {
  ras[3] = (uintptr_t)__builtin_return_address(0);
  uintptr_t v = nofp_b(cb, arg, ras);
  __asm__ volatile("" : : "r"(v) : "memory");
}

/* nofp_rbp -> cb(arg) with a value derived from v in rbp: seven values
 * live across the call (as in nofp_b), so rbp holds one.  Called again
 * from the same place with another v, the walk through here meets other
 * rbp values (in the register at this frame and in the word cb's frame
 * saves it to) that no step uses: this frame's CFA is rsp-based and its
 * caller's rbp is reloaded from where this one saved it. */
__attribute__((noinline)) void nofp_rbp(nofp_cb cb, void *arg, uintptr_t v) {
  volatile uintptr_t vals[7];
  for (int i = 0; i < 7; i++) vals[i] = v * (uintptr_t)(i + 3);
  uintptr_t a = vals[0], b = vals[1], c = vals[2], d = vals[3], e = vals[4], f = vals[5], g = vals[6];
  cb(arg);
  __asm__ volatile("" : : "r"(a), "r"(b), "r"(c), "r"(d), "r"(e), "r"(f), "r"(g) : "memory");
}

/* nofp_alloc -> nofp_alloc2 -> malloc(size): malloc called straight from
 * code without frame pointers, as from Debian's libc (strdup) or
 * libstdc++.  ras[1]: nofp_alloc2 -> nofp_alloc, ras[2]: nofp_alloc -> caller. */
extern void *malloc(__SIZE_TYPE__ size);

__attribute__((noinline)) static void *nofp_alloc2(__SIZE_TYPE__ size, uintptr_t *ras) {
  ras[1] = (uintptr_t)__builtin_return_address(0);
  void *p = malloc(size);
  __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
  return p;
}

__attribute__((noinline)) void *nofp_alloc(__SIZE_TYPE__ size, uintptr_t *ras) {
  ras[2] = (uintptr_t)__builtin_return_address(0);
  void *p = nofp_alloc2(size, ras);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

/* nofp_via1 / nofp_via2 -> nofp_leaf -> malloc: one allocation site (the
 * same return address in nofp_leaf) reached from two callers whose frames
 * have the same size, so the walks start from identical registers and
 * differ only in the words above: the unwinder's memo of its last walk must
 * notice.  ras[0]: nofp_leaf -> its caller. */
__attribute__((noinline)) static void *nofp_leaf(__SIZE_TYPE__ size, uintptr_t *ras) {
  ras[0] = (uintptr_t)__builtin_return_address(0);
  void *p = malloc(size);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

__attribute__((noinline)) void *nofp_via1(__SIZE_TYPE__ size, uintptr_t *ras) {
  void *p = nofp_leaf(size, ras);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

__attribute__((noinline)) void *nofp_via2(__SIZE_TYPE__ size, uintptr_t *ras) {
  void *p = nofp_leaf(size, ras);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

/* nofp_new -> nofp_new2 -> f(size) or fa(size, 64): an operator new
 * (test_unwind.c passes the library's, by their mangled names) called from
 * code without frame pointers, as from any of Debian's C++ programs; given
 * as pointers, so that the other tests linking this file do not pull in
 * the C++ operators.  ras[1]: nofp_new2 -> nofp_new, ras[2]: nofp_new ->
 * caller. */
typedef void *(*nofp_new_fn)(__SIZE_TYPE__ size);
typedef void *(*nofp_new_al_fn)(__SIZE_TYPE__ size, __SIZE_TYPE__ align);

__attribute__((noinline)) static void *nofp_new2(nofp_new_fn f, nofp_new_al_fn fa, __SIZE_TYPE__ size, uintptr_t *ras) {
  ras[1] = (uintptr_t)__builtin_return_address(0);
  void *p = f ? f(size) : fa(size, 64);
  __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
  return p;
}

__attribute__((noinline)) void *nofp_new(nofp_new_fn f, nofp_new_al_fn fa, __SIZE_TYPE__ size, uintptr_t *ras) {
  ras[2] = (uintptr_t)__builtin_return_address(0);
  void *p = nofp_new2(f, fa, size, ras);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

/* nofp_press(d, path, cb, arg): d levels of one recursive function, then
 * cb(arg).  The level with d calls the next through one of two call sites
 * (bit d - 1 of path), with seven values live across the call (as
 * nofp_b), so rbp is saved and holds data: a step out of each frame reads
 * two words, the return address and rbp's, and only the first matters.
 * Paths that differ in bit k part k + 3 frames above cb's call of its
 * callee. */
__attribute__((noinline)) void nofp_press(int d, unsigned path, nofp_cb cb, void *arg) {
  volatile uintptr_t vals[7];
  for (int i = 0; i < 7; i++) vals[i] = (uintptr_t)d * (uintptr_t)(i + 3) + path;
  uintptr_t a = vals[0], b = vals[1], c = vals[2], e = vals[3], f = vals[4], g = vals[5], h = vals[6];
  if (d == 0) {
    cb(arg);
  } else if ((path >> (d - 1)) & 1) {
    /* Bit 31 is never read (d <= 31): another argument, so that clang
     * does not hoist the two calls into one before the branch. */
    nofp_press(d - 1, path ^ 1u << 31, cb, arg);
    __asm__ volatile("nop" ::: "memory");
  } else {
    nofp_press(d - 1, path, cb, arg);
    __asm__ volatile("nop; nop" ::: "memory");
  }
  __asm__ volatile("" : : "r"(a), "r"(b), "r"(c), "r"(e), "r"(f), "r"(g), "r"(h) : "memory");
}
