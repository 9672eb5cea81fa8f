/* unwind_fp_module.c - a shared library with frame pointers whose function
 * calls malloc, for test_unwind: called back from code without them that
 * holds a number in rbp (nofp_rbp, in the test's own module), its
 * frame-pointer walk ends after two frames in two modules, the shape of a
 * complete walk (main, then libc's start), which the capture kept (iconv's
 * stacks from glibc's __gconv_open: docs/validation.md, session 23). */
#include <stdint.h>
#include <stdlib.h>

typedef struct fp_module_arg {
  void *p;
  uintptr_t ra; /* fp_module_alloc_cb -> its caller */
} fp_module_arg_t;

__attribute__((noinline)) void fp_module_alloc_cb(void *arg) {
  fp_module_arg_t *a = arg;
  a->ra = (uintptr_t)__builtin_return_address(0);
  a->p = malloc(3000);
  __asm__ volatile("" : : "r"(a->p) : "memory"); /* not a tail call */
}
