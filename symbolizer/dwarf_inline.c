/* dwarf_inline.c - the chain of inlined calls at an address, from
 * .debug_info (DW_TAG_inlined_subroutine with DW_AT_call_file/call_line).
 *
 * Purpose: a return address inside code the compiler inlined belongs to
 * the inlined function (innermost), called from its caller at
 * DW_AT_call_file:DW_AT_call_line, possibly itself inlined, up to the real
 * function the symbol table names.  hci_dwarf_inlined walks the one
 * compilation unit that holds the address (found by the caller through the
 * line table's unit) and returns the inlined_subroutine entries whose
 * address ranges contain it, outermost first, each with its function name
 * (DW_AT_linkage_name or DW_AT_name, through DW_AT_abstract_origin and
 * DW_AT_specification) and call site.
 *
 * Ranges: DW_AT_low_pc + DW_AT_high_pc (address or length), DW_AT_ranges
 * into .debug_ranges (DWARF 2-4) or .debug_rnglists (DWARF 5, offset or
 * DW_FORM_rnglistx), addresses by index through .debug_addr.
 *
 * Invariants: the sections are untrusted: every read is a bounded cursor
 * (dwarf_cursor.h), nesting depth, range-list lengths, reference chains
 * and abbreviation codes are bounded, and a malformed unit just yields no
 * inlined frames.  No recursion.
 * Locks: none; callers serialise.  Allocation: hci_meta_alloc only (the
 * abbreviation table of the unit, freed before returning).
 */
#include "dwarf_cursor.h"
#include "hc_internal.h"
#include "hc_symbolize.h"

enum {
  TAG_subprogram = 0x2e, TAG_inlined_subroutine = 0x1d,
  AT_name = 0x03, AT_low_pc = 0x11, AT_high_pc = 0x12, AT_abstract_origin = 0x31, AT_specification = 0x47,
  AT_ranges = 0x55, AT_call_file = 0x58, AT_call_line = 0x59, AT_linkage_name = 0x6e, AT_str_offsets = 0x72,
  AT_addr_base = 0x73, AT_rnglists_base = 0x74, AT_MIPS_linkage_name = 0x2007,
};
#define MAX_DEPTH 128
#define MAX_CODES 8192
#define MAX_RANGES 4096

typedef struct abbrev {
  size_t specs;      /* offset of the attribute specs in .debug_abbrev; 0 = unknown code */
  uint32_t tag;
  bool children;
} abbrev_t;

typedef struct unit {
  const hci_dwarf_sects_t *s;
  die_ctx_t d;
  size_t start, end;           /* the unit in .debug_info */
  size_t dies;                 /* first DIE */
  uint64_t base;               /* DW_AT_low_pc of the unit DIE */
  uint64_t addr_base, rnglists_base, str_base;
  abbrev_t *ab;
  size_t ab_bytes;
  size_t abbrev_off;
} unit_t;

/* Attribute values of one DIE that matter here. */
typedef struct die {
  uint32_t tag;
  bool children;
  uint64_t low, high;
  bool has_low, has_high, high_is_len, low_is_index;
  uint64_t ranges;
  int ranges_form;             /* 0 none, 1 offset, 2 rnglistx */
  uint64_t origin;             /* section offset of abstract_origin/specification, or NO_INDEX */
  const char *name, *linkage;
  uint64_t name_strx, linkage_strx;
  uint64_t call_file, call_line;
} die_t;

static bool read_abbrevs(unit_t *u) {
  u->ab_bytes = MAX_CODES * sizeof(abbrev_t);
  u->ab = hci_meta_alloc(u->ab_bytes);
  if (u->ab == NULL) return false;
  memset(u->ab, 0, u->ab_bytes);
  const hci_dwarf_sects_t *s = u->s;
  cur_t a = {s->abbrev, u->abbrev_off, s->abbrev_size, false};
  for (unsigned n = 0; n < 1000000 && !a.bad; n++) {
    uint64_t code = uleb(&a);
    if (a.bad || code == 0) break;
    uint32_t tag = (uint32_t)uleb(&a);
    bool children = rd(&a, 1) != 0;
    size_t specs = a.pos;
    for (;;) {
      uint64_t at = uleb(&a), form = uleb(&a);
      if (form == FORM_implicit_const) sleb(&a);
      if (a.bad || (at == 0 && form == 0)) break;
    }
    if (code < MAX_CODES && specs != 0) u->ab[code] = (abbrev_t){specs, tag, children};
  }
  return true;
}

/* A string by DW_FORM_strx index. */
static const char *strx_str(const unit_t *u, uint64_t strx) {
  const hci_dwarf_sects_t *s = u->s;
  if (strx == NO_INDEX || s->str_offsets == NULL) return NULL;
  uint64_t at = u->str_base + strx * u->d.offset_size;
  if (u->str_base > s->str_offsets_size || at < u->str_base || at > s->str_offsets_size) return NULL;
  cur_t so = {s->str_offsets, (size_t)at, s->str_offsets_size, false};
  uint64_t off = rd(&so, u->d.offset_size);
  return so.bad ? NULL : sect_str(s->str, s->str_size, off);
}

/* An address by DW_FORM_addrx index. */
static bool addrx(const unit_t *u, uint64_t index, uint64_t *out) {
  const hci_dwarf_sects_t *s = u->s;
  unsigned as = u->d.addr_size;
  if (s->addr == NULL || as == 0 || as > 8 || index > s->addr_size / as) return false;
  uint64_t at = u->addr_base + index * as;
  if (u->addr_base > s->addr_size || at < u->addr_base) return false;
  cur_t c = {s->addr, (size_t)(at <= s->addr_size ? at : s->addr_size), s->addr_size, false};
  *out = rd(&c, as);
  return !c.bad;
}

static bool is_addrx_form(uint64_t form) {
  return form == FORM_addrx || form == FORM_GNU_addr_index || (form >= FORM_addrx1 && form <= FORM_addrx4);
}

static bool is_ref_form(uint64_t form) {
  return form == FORM_ref1 || form == FORM_ref2 || form == FORM_ref4 || form == FORM_ref8 || form == FORM_ref_udata ||
         form == FORM_ref_addr;
}

/* Reads the DIE at c (its code already read: ab); false when it cannot be
 * walked (the rest of the unit is then skipped). */
static bool read_die(const unit_t *u, cur_t *c, const abbrev_t *ab, die_t *e) {
  memset(e, 0, sizeof *e);
  e->tag = ab->tag;
  e->children = ab->children;
  e->origin = e->name_strx = e->linkage_strx = NO_INDEX;
  cur_t a = {u->s->abbrev, ab->specs, u->s->abbrev_size, false};
  for (unsigned k = 0; k < 512; k++) {
    uint64_t at = uleb(&a), form = uleb(&a);
    int64_t implicit = form == FORM_implicit_const ? sleb(&a) : 0;
    if (a.bad) return false;
    if (at == 0 && form == 0) return true;
    uint64_t num, strx;
    const char *str;
    if (!die_value(c, form, &u->d, u->s, &num, &str, &strx, true)) return false;
    if (form == FORM_implicit_const) num = (uint64_t)implicit;
    switch (at) {
      case AT_low_pc: e->low = num, e->has_low = true, e->low_is_index = is_addrx_form(form); break;
      case AT_high_pc:
        e->high = num, e->has_high = true;
        e->high_is_len = form != FORM_addr && !is_addrx_form(form);
        if (is_addrx_form(form) && !addrx(u, num, &e->high)) e->has_high = false;
        break;
      case AT_ranges: e->ranges = num, e->ranges_form = form == FORM_rnglistx ? 2 : 1; break;
      case AT_abstract_origin:
      case AT_specification:
        if (is_ref_form(form)) e->origin = form == FORM_ref_addr ? num : u->start + num;
        break;
      case AT_name: e->name = str, e->name_strx = strx; break;
      case AT_linkage_name:
      case AT_MIPS_linkage_name: e->linkage = str, e->linkage_strx = strx; break;
      case AT_call_file: e->call_file = num; break;
      case AT_call_line: e->call_line = num; break;
      default: break;
    }
  }
  return false;
}

/* ---- ranges ---- */

static bool in_rnglist(const unit_t *u, const die_t *e, uint64_t addr) {
  const hci_dwarf_sects_t *s = u->s;
  uint64_t off = e->ranges;
  if (e->ranges_form == 2) { /* rnglistx: through the offsets table at rnglists_base */
    uint64_t at = u->rnglists_base + off * u->d.offset_size;
    if (s->rnglists == NULL || u->rnglists_base > s->rnglists_size || at < u->rnglists_base) return false;
    cur_t t = {s->rnglists, (size_t)(at <= s->rnglists_size ? at : s->rnglists_size), s->rnglists_size, false};
    off = u->rnglists_base + rd(&t, u->d.offset_size);
    if (t.bad) return false;
  }
  if (s->rnglists == NULL || off >= s->rnglists_size) return false;
  cur_t c = {s->rnglists, (size_t)off, s->rnglists_size, false};
  unsigned as = u->d.addr_size;
  uint64_t base = u->base;
  for (unsigned n = 0; n < MAX_RANGES && !c.bad; n++) {
    uint8_t kind = (uint8_t)rd(&c, 1);
    uint64_t lo = 0, hi = 0, x, y;
    switch (kind) {
      case 0: return false; /* end_of_list */
      case 1: if (!addrx(u, uleb(&c), &base)) return false; continue;        /* base_addressx */
      case 2: x = uleb(&c), y = uleb(&c); if (!addrx(u, x, &lo) || !addrx(u, y, &hi)) return false; break;
      case 3: x = uleb(&c), y = uleb(&c); if (!addrx(u, x, &lo)) return false; hi = lo + y; break;
      case 4: x = uleb(&c), y = uleb(&c); lo = base + x, hi = base + y; break; /* offset_pair */
      case 5: base = rd(&c, as); continue;                                     /* base_address */
      case 6: lo = rd(&c, as), hi = rd(&c, as); break;                         /* start_end */
      case 7: lo = rd(&c, as), hi = lo + uleb(&c); break;                      /* start_length */
      default: return false;
    }
    if (!c.bad && addr >= lo && addr < hi) return true;
  }
  return false;
}

static bool in_ranges(const unit_t *u, const die_t *e, uint64_t addr) {
  if (u->d.version >= 5) return in_rnglist(u, e, addr);
  const hci_dwarf_sects_t *s = u->s;
  if (s->ranges == NULL || e->ranges >= s->ranges_size) return false;
  cur_t c = {s->ranges, (size_t)e->ranges, s->ranges_size, false};
  unsigned as = u->d.addr_size;
  uint64_t all = as == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * as)) - 1;
  uint64_t base = u->base;
  for (unsigned n = 0; n < MAX_RANGES && !c.bad; n++) {
    uint64_t lo = rd(&c, as), hi = rd(&c, as);
    if (c.bad || (lo == 0 && hi == 0)) return false;
    if (lo == all) {
      base = hi;
      continue;
    }
    if (addr >= base + lo && addr < base + hi) return true;
  }
  return false;
}

static bool contains(const unit_t *u, const die_t *e, uint64_t addr) {
  if (e->ranges_form) return in_ranges(u, e, addr);
  if (!e->has_low || !e->has_high) return false;
  uint64_t lo = e->low;
  if (e->low_is_index && !addrx(u, e->low, &lo)) return false;
  uint64_t hi = e->high_is_len ? lo + e->high : e->high;
  return addr >= lo && addr < hi;
}

/* ---- names ---- */

static const char *die_name(const unit_t *u, const die_t *e) {
  const char *l = e->linkage ? e->linkage : strx_str(u, e->linkage_strx);
  if (l && l[0]) return l;
  const char *n = e->name ? e->name : strx_str(u, e->name_strx);
  return n && n[0] ? n : NULL;
}

/* The name of an inlined call's function: its own, else along
 * abstract_origin / specification (a bounded chain, within the unit). */
static const char *origin_name(const unit_t *u, const die_t *e) {
  const char *n = die_name(u, e);
  uint64_t next = e->origin;
  for (int hop = 0; hop < 4 && n == NULL && next != NO_INDEX; hop++) {
    if (next < u->dies || next >= u->end) return NULL;
    cur_t c = {u->s->info, (size_t)next, u->end, false};
    uint64_t code = uleb(&c);
    if (c.bad || code == 0 || code >= MAX_CODES || u->ab[code].specs == 0) return NULL;
    die_t o;
    if (!read_die(u, &c, &u->ab[code], &o)) return NULL;
    n = die_name(u, &o);
    next = o.origin;
  }
  return n;
}

/* ---- the unit ---- */

static bool open_unit(unit_t *u, const hci_dwarf_sects_t *s, uint64_t info_off) {
  memset(u, 0, sizeof *u);
  u->s = s;
  if (s->info == NULL || s->abbrev == NULL || info_off >= s->info_size) return false;
  cur_t c = {s->info, (size_t)info_off, s->info_size, false};
  u->d.offset_size = 4;
  uint64_t len = rd(&c, 4);
  if (len == 0xffffffffu) {
    len = rd(&c, 8);
    u->d.offset_size = 8;
  } else if (len >= 0xfffffff0u) {
    return false;
  }
  if (c.bad || len > c.end - c.pos) return false;
  u->start = (size_t)info_off;
  u->end = c.end = c.pos + (size_t)len;
  u->d.version = (int)rd(&c, 2);
  if (u->d.version >= 2 && u->d.version <= 4) {
    u->abbrev_off = (size_t)rd(&c, u->d.offset_size);
    u->d.addr_size = (unsigned)rd(&c, 1);
  } else if (u->d.version == 5) {
    unsigned type = (unsigned)rd(&c, 1);
    u->d.addr_size = (unsigned)rd(&c, 1);
    u->abbrev_off = (size_t)rd(&c, u->d.offset_size);
    if (type != 1) return false; /* only full compile units hold code here */
  } else {
    return false;
  }
  if (c.bad || u->abbrev_off >= s->abbrev_size || u->d.addr_size == 0 || u->d.addr_size > 8) return false;
  u->dies = c.pos;
  u->str_base = u->d.offset_size == 8 ? 16 : 8;
  u->addr_base = 8;
  u->rnglists_base = u->d.offset_size == 8 ? 20 : 12;
  return read_abbrevs(u);
}

static void close_unit(unit_t *u) {
  if (u->ab) hci_meta_free(u->ab, u->ab_bytes);
  u->ab = NULL;
}

/* The unit DIE's bases (needed before any range or index is read). */
static void read_bases(unit_t *u, cur_t *c, const abbrev_t *ab) {
  cur_t a = {u->s->abbrev, ab->specs, u->s->abbrev_size, false};
  cur_t v = *c;
  uint64_t low = 0;
  bool low_index = false;
  for (unsigned k = 0; k < 512; k++) {
    uint64_t at = uleb(&a), form = uleb(&a);
    if (form == FORM_implicit_const) sleb(&a);
    if (a.bad || (at == 0 && form == 0)) break;
    uint64_t num, strx;
    const char *str;
    if (!die_value(&v, form, &u->d, u->s, &num, &str, &strx, true)) break;
    if (at == AT_low_pc) low = num, low_index = is_addrx_form(form);
    else if (at == AT_addr_base) u->addr_base = num;
    else if (at == AT_rnglists_base) u->rnglists_base = num;
    else if (at == AT_str_offsets) u->str_base = num;
  }
  if (low_index && !addrx(u, low, &low)) low = 0;
  u->base = low;
}

int hci_dwarf_inlined(const hci_dwarf_sects_t *s, uint64_t info_off, uint64_t addr, hci_inline_t *out, int max) {
  unit_t u = {0};
  if (max <= 0 || !open_unit(&u, s, info_off)) {
    close_unit(&u);
    return 0;
  }
  hci_inline_t chain[MAX_DEPTH];
  int chain_depth[MAX_DEPTH];
  int n = 0, depth = 0;
  bool first = true;
  cur_t c = {s->info, u.dies, u.end, false};
  while (c.pos < c.end && !c.bad) {
    uint64_t code = uleb(&c);
    if (c.bad) break;
    if (code == 0) {
      if (--depth < 0) break; /* the unit DIE's children ended */
      continue;
    }
    if (code >= MAX_CODES || u.ab[code].specs == 0) break; /* cannot walk on */
    const abbrev_t *ab = &u.ab[code];
    if (first) read_bases(&u, &c, ab);
    first = false;
    die_t e;
    if (!read_die(&u, &c, ab, &e)) break;
    if (e.tag == TAG_inlined_subroutine && contains(&u, &e, addr)) {
      while (n > 0 && chain_depth[n - 1] >= depth) n--;
      if (n < MAX_DEPTH) {
        chain[n] = (hci_inline_t){origin_name(&u, &e), e.call_file, e.call_line};
        chain_depth[n++] = depth;
      }
    }
    if (e.children && ++depth >= MAX_DEPTH) break;
  }
  close_unit(&u);
  int k = n < max ? n : max;
  for (int i = 0; i < k; i++) out[i] = chain[i];
  return k;
}
