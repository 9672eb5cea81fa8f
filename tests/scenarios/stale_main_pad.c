// EXPECT: bytes=100 objects=1
/* stale_main_pad.c - main keeps the only pointer to a 100-byte block in a
 * local array and returns: its frame is dead by the time the final check
 * runs (from exit, called by libc after main returned), so the block
 * leaks, as valgrind says.  The check scans the stack only from the frame
 * main returned to. */
#include "scenario.h"

int main(void) {
  void *volatile pad[64];
  for (int i = 0; i < 64; i++) pad[i] = NULL;
  pad[56] = malloc(100);
  sc_sink = pad[0];
  sc_sink = NULL;
  return 0;
}
