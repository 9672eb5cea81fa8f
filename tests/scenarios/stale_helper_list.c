// EXPECT: bytes=128 objects=4
// COMPARE-RECORDS
/* stale_helper_list.c - a helper called from main builds a 4-node list
 * (32-byte nodes) and drops it; main then returns without scrubbing the
 * stack.  The helper's dead frame below main still holds node pointers,
 * and so does main's own frame once it returned: the final check scans the
 * stack only from the frame main returned to, so all 4 nodes leak (1 direct,
 * 3 indirect), as valgrind says. */
#include "scenario.h"

int main(void) {
  sc_build_and_drop();
  return 0;
}
