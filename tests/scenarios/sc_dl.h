/* sc_dl.h - dlopen helpers for the leak scenarios: modules are found next
 * to the executable (meson and compare_refs.sh build them there). */
#ifndef SC_DL_H
#define SC_DL_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scenario.h"

/* dlopen()s <dir of /proc/self/exe>/<name>; exits with status 2 on error. */
static SC_UNUSED void *sc_dlopen(const char *name) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) exit(2);
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash + 1 - path) + strlen(name) + 1 > sizeof path) exit(2);
  strcpy(slash + 1, name);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "scenario: dlopen %s: %s\n", path, dlerror());
    exit(2);
  }
  return h;
}

static SC_UNUSED void *sc_dlsym(void *h, const char *sym) {
  void *p = dlsym(h, sym);
  if (!p) {
    fprintf(stderr, "scenario: dlsym %s: %s\n", sym, dlerror());
    exit(2);
  }
  return p;
}

#endif
