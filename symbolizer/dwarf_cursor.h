/* dwarf_cursor.h - bounded reads of untrusted DWARF sections, shared by
 * dwarf_line.c (line tables, compilation directories) and dwarf_inline.c
 * (inlined-call chains from .debug_info).
 *
 * Every read goes through a cursor that stops at its end (a unit's end,
 * never just the section's); an overrun sets `bad` and parks the cursor at
 * the end, so loops always terminate.  Strings are checked to be
 * NUL-terminated inside their section.  No allocation, no locks.
 */
#ifndef HC_DWARF_CURSOR_H
#define HC_DWARF_CURSOR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hc_symbolize.h"

/* Attribute forms (DWARF 5 section 7.5.6, and GNU extensions). */
enum {
  FORM_block2 = 0x03, FORM_block4 = 0x04, FORM_data2 = 0x05, FORM_data4 = 0x06, FORM_data8 = 0x07,
  FORM_string = 0x08, FORM_block = 0x09, FORM_block1 = 0x0a, FORM_data1 = 0x0b, FORM_sdata = 0x0d,
  FORM_strp = 0x0e, FORM_udata = 0x0f, FORM_strx = 0x1a, FORM_strp_sup = 0x1d, FORM_data16 = 0x1e,
  FORM_line_strp = 0x1f, FORM_strx1 = 0x25, FORM_strx2 = 0x26, FORM_strx3 = 0x27, FORM_strx4 = 0x28,
  FORM_GNU_strp_alt = 0x1f21,
};

/* ---- bounded cursor ---- */
typedef struct cur {
  const uint8_t *base;
  size_t pos, end;   /* reads stop at end; any overrun sets bad */
  bool bad;
} cur_t;

static inline bool need(cur_t *c, size_t n) {
  if (c->bad || c->end - c->pos < n) {
    c->bad = true;
    c->pos = c->end;
    return false;
  }
  return true;
}

static inline uint64_t rd(cur_t *c, size_t n) { /* little-endian, n <= 8 */
  if (!need(c, n)) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)c->base[c->pos + i] << (8 * i);
  c->pos += n;
  return v;
}

static inline void skip(cur_t *c, uint64_t n) {
  if (n > c->end - c->pos) {
    c->bad = true;
    c->pos = c->end;
  } else {
    c->pos += (size_t)n;
  }
}

static inline uint64_t uleb(cur_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (;;) {
    if (!need(c, 1)) return 0;
    uint8_t b = c->base[c->pos++];
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) return v;
  }
}

static inline int64_t sleb(cur_t *c) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    if (!need(c, 1)) return 0;
    b = c->base[c->pos++];
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

/* An inline NUL-terminated string; NULL (and bad) when unterminated. */
static inline const char *cstr(cur_t *c) {
  if (c->bad) return NULL;
  const uint8_t *s = c->base + c->pos;
  const uint8_t *nul = memchr(s, 0, c->end - c->pos);
  if (nul == NULL) {
    c->bad = true;
    c->pos = c->end;
    return NULL;
  }
  c->pos += (size_t)(nul - s) + 1;
  return (const char *)s;
}

/* A string at off inside a string section, or NULL. */
static inline const char *sect_str(const uint8_t *sec, size_t size, uint64_t off) {
  if (sec == NULL || off >= size) return NULL;
  if (memchr(sec + off, 0, size - (size_t)off) == NULL) return NULL;
  return (const char *)sec + off;
}

/* ---- debug_info entries ---- */

enum {
  FORM_addr = 0x01, FORM_flag = 0x0c, FORM_ref_addr = 0x10, FORM_ref1 = 0x11, FORM_ref2 = 0x12,
  FORM_ref4 = 0x13, FORM_ref8 = 0x14, FORM_ref_udata = 0x15, FORM_indirect = 0x16, FORM_sec_offset = 0x17,
  FORM_exprloc = 0x18, FORM_flag_present = 0x19, FORM_addrx = 0x1b, FORM_ref_sup4 = 0x1c,
  FORM_ref_sig8 = 0x20, FORM_implicit_const = 0x21, FORM_loclistx = 0x22, FORM_rnglistx = 0x23,
  FORM_ref_sup8 = 0x24, FORM_addrx1 = 0x29, FORM_addrx2 = 0x2a, FORM_addrx3 = 0x2b, FORM_addrx4 = 0x2c,
  FORM_GNU_addr_index = 0x1f01, FORM_GNU_str_index = 0x1f02, FORM_GNU_ref_alt = 0x1f20,
};
#define NO_INDEX UINT64_MAX

typedef struct die_ctx {
  int version;
  unsigned offset_size, addr_size;
} die_ctx_t;

/* Reads (or skips) one attribute value: a number, a string, or an index
 * into .debug_str_offsets.  False for unknown forms (the DIE cannot be
 * walked further). */
static inline bool die_value(cur_t *c, uint64_t form, const die_ctx_t *d, const hci_dwarf_sects_t *s, uint64_t *num,
                      const char **str, uint64_t *strx, bool indirect_ok) {
  *num = 0;
  *str = NULL;
  *strx = NO_INDEX;
  switch (form) {
    case FORM_string: *str = cstr(c); break;
    case FORM_strp: *str = sect_str(s->str, s->str_size, rd(c, d->offset_size)); break;
    case FORM_line_strp: *str = sect_str(s->line_str, s->line_str_size, rd(c, d->offset_size)); break;
    case FORM_strx:
    case FORM_GNU_str_index: *strx = uleb(c); break;
    case FORM_strx1: *strx = rd(c, 1); break;
    case FORM_strx2: *strx = rd(c, 2); break;
    case FORM_strx3: *strx = rd(c, 3); break;
    case FORM_strx4: *strx = rd(c, 4); break;
    case FORM_addr:
      if (d->addr_size == 0 || d->addr_size > 8) return false;
      *num = rd(c, d->addr_size);
      break;
    case FORM_ref_addr: *num = rd(c, d->version == 2 ? d->addr_size : d->offset_size); break;
    case FORM_strp_sup:
    case FORM_GNU_strp_alt:
    case FORM_GNU_ref_alt:
    case FORM_sec_offset: *num = rd(c, d->offset_size); break;
    case FORM_data1: case FORM_ref1: case FORM_flag: case FORM_addrx1: *num = rd(c, 1); break;
    case FORM_data2: case FORM_ref2: case FORM_addrx2: *num = rd(c, 2); break;
    case FORM_addrx3: *num = rd(c, 3); break;
    case FORM_data4: case FORM_ref4: case FORM_ref_sup4: case FORM_addrx4: *num = rd(c, 4); break;
    case FORM_data8: case FORM_ref8: case FORM_ref_sig8: case FORM_ref_sup8: *num = rd(c, 8); break;
    case FORM_data16: skip(c, 16); break;
    case FORM_udata: case FORM_ref_udata: case FORM_addrx: case FORM_loclistx: case FORM_rnglistx:
    case FORM_GNU_addr_index: *num = uleb(c); break;
    case FORM_sdata: *num = (uint64_t)sleb(c); break;
    case FORM_block: case FORM_exprloc: skip(c, uleb(c)); break;
    case FORM_block1: skip(c, rd(c, 1)); break;
    case FORM_block2: skip(c, rd(c, 2)); break;
    case FORM_block4: skip(c, rd(c, 4)); break;
    case FORM_flag_present:
    case FORM_implicit_const: break; /* no bytes in the DIE */
    case FORM_indirect:
      if (!indirect_ok) return false; /* an indirect form naming indirect: refuse to loop */
      return die_value(c, uleb(c), d, s, num, str, strx, false);
    default: return false;
  }
  return !c->bad;
}

/* Positions a on the attribute specs of abbreviation `code`. */
static inline bool find_abbrev(cur_t *a, uint64_t code) {
  while (!a->bad) {
    uint64_t ac = uleb(a);
    if (a->bad || ac == 0) return false;
    uleb(a);  /* tag */
    rd(a, 1); /* has children */
    if (ac == code) return !a->bad;
    for (;;) { /* skip this entry's attribute specs */
      uint64_t at = uleb(a), form = uleb(a);
      if (form == FORM_implicit_const) sleb(a);
      if (a->bad || (at == 0 && form == 0)) break;
    }
  }
  return false;
}

#endif
