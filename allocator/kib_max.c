/* kib_max.c - the class with the most KiB of capacity (thread_cache.c's
 * capacity steals), with vector registers.
 *
 * The one allocator module besides malloc_ext.c built without
 * -mgeneral-regs-only (meson.build, gpr_only_args: an address left in a
 * vector register keeps its block alive in a check's eyes): it holds KiB
 * counts and class numbers there, never an address, and in general
 * registers it took four times the instructions (random_live: 10.7 M
 * against 2.7 M of 37 M, docs/performance.md "Session 28 (lead)"). */
#include "hc_internal.h"

/* Four classes at a time: a vector of the largest value seen per lane and
 * one of the class it was seen at (generic vectors: SSE2 on x86-64, plain
 * code elsewhere). */
typedef int32_t v4i32 __attribute__((vector_size(16))); /* signed: SSE2 compares signed lanes */

unsigned hci_kib_max_class(const uint32_t *kib) {
  enum { N = HC_KIB_SLOTS / 4 };
  const v4i32 *v = (const v4i32 *)kib; /* KiB counts are far below 2^31 */
  v4i32 m = v[0], at = {0, 1, 2, 3}, idx = at;
  const v4i32 four = {4, 4, 4, 4};
  for (unsigned i = 1; i < N; i++) {
    idx += four;
    v4i32 gt = v[i] > m; /* all-ones lanes where v[i] is larger */
    m = (v[i] & gt) | (m & ~gt);
    at = (idx & gt) | (at & ~gt);
  }
  unsigned best = 0;
  int32_t best_kib = 0;
  for (int l = 0; l < 4; l++)
    if (m[l] > best_kib || (m[l] == best_kib && m[l] && (unsigned)at[l] < best)) best_kib = m[l], best = (unsigned)at[l];
  return best_kib ? best : 0;
}
