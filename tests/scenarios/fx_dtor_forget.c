/* fx_dtor_forget.c - memory lost in global destructors: "normal" checks before
 * them (no leak), "strict" after them (999 bytes in 2 objects).
 * forget_cxx_style is registered with atexit from a constructor, which is
 * how a C++ global's destructor is registered (__cxa_atexit); forget_dtor is
 * a C destructor function. */
#include <stdio.h>
#include <stdlib.h>

#include "scenario.h"

void *volatile g_one, *volatile g_two;

static void forget_cxx_style(void) { g_one = NULL; }
__attribute__((destructor)) static void forget_dtor(void) { g_two = NULL; }

__attribute__((constructor)) static void setup(void) {
  g_one = malloc(555);
  g_two = malloc(444);
  atexit(forget_cxx_style);
}

int main(void) {
  printf("dtor_forget: done\n");
  return 0;
}
