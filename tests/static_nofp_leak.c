/* static_nofp_leak.c - leaks made through code built without frame pointers
 * (unwind_nofp.c: nofp_a -> nofp_b -> nofp_c -> cb), linked -static for
 * test_static.sh.  gcc gives a static executable no .eh_frame_hdr; the
 * allocation stacks must still reach main (they ended at nofp_c, the first
 * frame without a frame pointer, before the checker indexed .eh_frame). */
#include <stdint.h>
#include <stdlib.h>

typedef void (*nofp_cb)(void *arg);
void nofp_a(nofp_cb cb, void *arg, uintptr_t *ras);

static void *volatile sink;

__attribute__((noinline)) static void leak(void *arg) {
  (void)arg;
  sink = malloc(48);
  sink = NULL;
}

int main(void) {
  uintptr_t ras[4];
  for (int i = 0; i < 8; i++) nofp_a(leak, NULL, ras);
  return 0;
}
