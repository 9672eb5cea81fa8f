/* dlclose_hook.c - dlclose is interposed so the symbolizer learns of the
 * modules before they go: frames of a module unloaded before the report
 * keep its name and build-id (design choice: a snapshot of the module list
 * at each dlclose, the cheapest point that sees every unload the program
 * asks for; la_objclose would need LD_AUDIT, a list per allocation would
 * cost every malloc).  Modules unloaded by the loader itself without a
 * dlclose call (none in practice) are not covered.
 *
 * Weak, as the __libc_start_main interposer: a static link keeps libc's.
 * Only while the checker is on; dlclose is never called with the world
 * stopped or inside malloc, so the symbolizer may take its locks here.
 *
 * After an unload, always (the profiler's stacks too): the unwinder's
 * per-pc rules, module lookups and memoised walks are forgotten
 * (hci_unwind_dwarf_cache_clear).  A module loaded later at the same
 * address has other code and CFI at those pcs; a stale rule read a word of
 * the new frame as its return address and ended the stack there
 * (tests/test_report_quality.sh, modules loaded at the same address).
 * One clear per dlclose: 128 KiB of cache entries stored, small beside
 * the unmapping itself.
 */
#include <dlfcn.h>

#include "hc_checker.h"
#include "hc_stacks.h"
#include "hc_symbolize.h"

typedef int (*dlclose_fn)(void *);

hc_public __attribute__((weak)) int dlclose(void *handle) {
  static dlclose_fn real;
  if (real == NULL) real = (dlclose_fn)(uintptr_t)dlsym(RTLD_NEXT, "dlclose");
  if (real == NULL) return -1;
  if (hci_chk.active) hci_symbolizer_before_dlclose();
  int rc = real(handle);
  if (rc == 0) hci_unwind_dwarf_cache_clear();
  return rc;
}
