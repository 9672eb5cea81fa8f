/* chroot_watch.c - a program that chroots (a daemon's privilege separation).
 *
 * After chroot into an empty directory the module files are out of view:
 * reports named modules and offsets only (the symbolizer opens each file
 * by path when a report first needs it).  chroot(2) through libc is
 * interposed: while the checker is on, every module's file is mapped first
 * (hci_symbolizer_premap; parsed later, when a report needs it), then
 * the same system call glibc's would make.  A mapping keeps no descriptor
 * (nothing in /proc/self/fd, no directory through which the new root could
 * be left).  A chroot made with an inline system call is not seen; in a
 * static link libc.a's chroot wins when it is linked in for another reason
 * (weak, as seccomp_watch.c's).  Separate debug files (/usr/lib/debug) are
 * mapped too, for the modules that lack a symbol table or line table.
 *
 * Locks: the symbolizer's, inside hci_symbolizer_premap.
 */
#include <sys/syscall.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

hc_public __attribute__((weak)) int chroot(const char *path) {
  if (hci_chk.active) {
    hci_symbolizer_premap();
    hci_tree_pending();
  }
  return (int)hci_raw_libc_result(hci_raw6(SYS_chroot, (long)path, 0, 0, 0, 0, 0));
}
