/* hc_demangle.h - the symbolizer's own Itanium C++ ABI demangler.
 *
 * Written from the ABI's mangling grammar
 * (https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling); its output
 * text follows binutils' c++filt (GNU style: "char const*", "> >",
 * " [clone .cold]") so reports read like the usual tools.
 *
 * Rules:
 *  - no malloc, no stdio, no locks, no global state: the caller gives the
 *    output buffer and the work area (one work area per concurrent caller);
 *  - bounded: input length, nodes, substitutions, recursion depth and
 *    printing steps are capped; anything over a cap, malformed, truncated
 *    or not supported makes hci_demangle() return false (never a crash, a
 *    hang or a write past `cap`);
 *  - it refuses rather than guess: a name it accepts prints exactly what
 *    c++filt prints (tests/test_demangle.c checks a table of real names).
 */
#ifndef HC_DEMANGLE_H
#define HC_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HC_DM_MAX_INPUT 8192   /* longer names are refused */
#define HC_DM_MAX_NODES 6144
#define HC_DM_MAX_SUBS 1024

/* Internal to demangle.c; in the header only so callers can size the area. */
typedef struct hci_dm_node {
  uint8_t k;        /* kind */
  uint8_t f;        /* small flag / operator index */
  uint16_t len;     /* length of s */
  int32_t a, b;     /* children (-1: none) */
  const char *s;    /* text: a slice of the input or a static string */
} hci_dm_node_t;

typedef struct hci_demangle_work {
  hci_dm_node_t nodes[HC_DM_MAX_NODES];
  int32_t subs[HC_DM_MAX_SUBS];
} hci_demangle_work_t;

/* Demangles `mangled` (a "_Z..." symbol, no "@version") into out[0..cap),
 * NUL-terminated.  Returns false (out[0] = 0 when cap > 0) if the name is
 * not a mangled C++ name, is malformed, uses a construct this demangler
 * does not support, or does not fit in cap bytes. */
bool hci_demangle(const char *mangled, char *out, size_t cap, hci_demangle_work_t *work);

#endif
