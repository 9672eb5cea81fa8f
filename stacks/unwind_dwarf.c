/* unwind_dwarf.c - a DWARF (.eh_frame) unwinder for code built without frame
 * pointers (x86-64 Linux, glibc >= 2.35), with a lock-free per-PC rule cache.
 *
 * For each PC: the module (hci_eh_find, unwind_obj.c: _dl_find_object, or
 * the executable's own headers when statically linked) -> its .eh_frame_hdr
 * -> binary search for the FDE -> run
 * the CIE and FDE call-frame programs up to the PC -> a rule "CFA = rsp|rbp +
 * off; RA at CFA+ra_off; rbp same/undefined/at CFA+rbp_off".  The rule is
 * cached, so a warm walk costs a hash probe and two loads per frame.
 *
 * Invariants:
 *  - Every stack read lies in [sp0, hi): the walker's own stack pointer up to
 *    hci_unwind_stack_hi(sp0).  The CFA strictly increases, so walks end.
 *  - A cache entry is two words written without a lock; the key word is
 *    pc ^ mix(rule), so a reader that sees a torn pair (one word from a
 *    racing writer) rejects it.  A lost update only costs a recomputation.
 *  - Anything we do not understand (expressions, register rules other than
 *    offsets, unknown opcodes) ends the walk cleanly instead of guessing.
 *  - Every read of unwind data lies in a readable segment of the module
 *    (hci_eh_readable): the search table within its segment (a larger
 *    fde_count is clipped to what is there), each CIE/FDE within one
 *    segment as its length says, indirect pointers and the sigreturn code
 *    bytes likewise.  Malformed data ends the walk; it never faults.
 *  - Signal frames: the FDE of glibc's __restore_rt ('S' augmentation) is
 *    recognised together with its code bytes; the walk continues from the
 *    interrupted registers saved in the ucontext.  When those are on another
 *    stack (sigaltstack), the bounds switch to that stack's region, found
 *    the same way (a readable mapping), or the walk ends.
 * Limitation: rules are not invalidated on dlclose; a module loaded later at
 * the same address may hit stale rules (reads stay bounds-checked).  Call
 * hci_unwind_dwarf_cache_clear() after unloading code.
 * Locks: none (hci_meta_alloc once, for the cache).
 */
#include <string.h>

#include "hc_stacks.h"

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#include <stddef.h>
#include <sys/ucontext.h>
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(DLFO_EH_SEGMENT_TYPE)
#define HC_DWARF_X86_64 1
#endif

#ifdef HC_DWARF_X86_64

/* ---- DWARF constants (DWARF 5 section 6.4, LSB "Exception Frames") ---- */
#define DW_EH_PE_omit 0xff
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_table_ok 0x3b /* datarel | sdata4: the only table layout we search */

#define REG_RBP_DW 6
#define REG_RSP_DW 7
#define CFA_STACK_DEPTH 8     /* remember_state nesting we accept */
#define MAX_STEPS 256         /* frames walked at most, skip included */

enum { K_NORMAL = 0, K_END = 1, K_STOP = 2, K_SIGNAL = 3 };
enum { R_SAME = 0, R_UNDEF = 1, R_OFFSET = 2, R_UNSUP = 3 };

typedef struct rule {
  int kind;          /* K_* */
  int cfa_rbp;       /* CFA based on rbp (else rsp) */
  int rbp_how;       /* R_SAME, R_UNDEF or R_OFFSET */
  int64_t cfa_off;
  int64_t ra_off;    /* RA saved at CFA + ra_off */
  int64_t rbp_off;   /* rbp saved at CFA + rbp_off (R_OFFSET) */
} rule_t;

/* ---- byte readers (all bounded by the CIE/FDE extent) ---- */

static bool rd_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  uint64_t r = 0;
  unsigned shift = 0;
  const uint8_t *p = *pp;
  for (;;) {
    if (p >= end) return false;
    uint8_t b = *p++;
    if (shift < 64) r |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  *pp = p;
  *out = r;
  return true;
}

static bool rd_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out) {
  uint64_t r = 0;
  unsigned shift = 0;
  uint8_t b;
  const uint8_t *p = *pp;
  do {
    if (p >= end) return false;
    b = *p++;
    if (shift < 64) r |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) r |= ~(uint64_t)0 << shift;
  *pp = p;
  *out = (int64_t)r;
  return true;
}

static bool rd_fixed(const uint8_t **pp, const uint8_t *end, void *out, size_t n) {
  if ((size_t)(end - *pp) < n) return false;
  memcpy(out, *pp, n);
  *pp += n;
  return true;
}

/* A pointer in encoding enc.  datarel: base for DW_EH_PE_datarel (0 = not
 * allowed).  Indirect pointers are dereferenced when o says the word they
 * point to is readable (o NULL: not allowed). */
static bool rd_enc(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel, const hci_eh_obj_t *o,
                   uintptr_t *out) {
  const uint8_t *p = *pp;
  uintptr_t field = (uintptr_t)p;
  uint64_t v;
  switch (enc & 0x0f) {
  case 0x00: case 0x04: case 0x0c: { /* absptr, udata8, sdata8 */
    uint64_t x;
    if (!rd_fixed(&p, end, &x, 8)) return false;
    v = x;
    break;
  }
  case 0x01: if (!rd_uleb(&p, end, &v)) return false; break;
  case 0x09: { int64_t s; if (!rd_sleb(&p, end, &s)) return false; v = (uint64_t)s; break; }
  case 0x02: { uint16_t x; if (!rd_fixed(&p, end, &x, 2)) return false; v = x; break; }
  case 0x03: { uint32_t x; if (!rd_fixed(&p, end, &x, 4)) return false; v = x; break; }
  case 0x0a: { int16_t x; if (!rd_fixed(&p, end, &x, 2)) return false; v = (uint64_t)(int64_t)x; break; }
  case 0x0b: { int32_t x; if (!rd_fixed(&p, end, &x, 4)) return false; v = (uint64_t)(int64_t)x; break; }
  default: return false;
  }
  if (v != 0) {
    switch (enc & 0x70) {
    case 0x00: break;
    case DW_EH_PE_pcrel: v += field; break;
    case DW_EH_PE_datarel:
      if (datarel == 0) return false;
      v += datarel;
      break;
    default: return false; /* textrel, funcrel, aligned: not used on x86-64 */
    }
    if (enc & DW_EH_PE_indirect) {
      if (o == NULL || !hci_eh_readable(o, (uintptr_t)v, sizeof(uintptr_t))) return false;
      uintptr_t x;
      memcpy(&x, (const void *)(uintptr_t)v, sizeof x);
      v = x;
    }
  }
  *pp = p;
  *out = (uintptr_t)v;
  return true;
}

/* ---- CIE / FDE ---- */

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool has_z;
  bool signal;
  const uint8_t *insns, *end;
  const hci_eh_obj_t *obj; /* the module: for indirect pointers */
} cie_t;

/* Length-prefixed record at p, which must lie whole in a readable segment
 * of o: sets *body (after the length) and *end. */
static bool record_extent(const hci_eh_obj_t *o, const uint8_t *p, const uint8_t **body, const uint8_t **end) {
  uint32_t len32;
  if (!hci_eh_readable(o, (uintptr_t)p, 4)) return false;
  memcpy(&len32, p, 4);
  if (len32 == 0) return false; /* terminator */
  size_t head = 4;
  uint64_t len = len32;
  if (len32 == 0xffffffffu) {
    if (!hci_eh_readable(o, (uintptr_t)p, 12)) return false;
    memcpy(&len, p + 4, 8);
    head = 12;
  }
  if (len > ((uint64_t)1 << 32) || !hci_eh_readable(o, (uintptr_t)p, head + (size_t)len)) return false;
  *body = p + head;
  *end = p + head + len;
  return true;
}

static bool parse_cie(const hci_eh_obj_t *o, const uint8_t *rec, cie_t *c) {
  const uint8_t *p, *end;
  if (!record_extent(o, rec, &p, &end)) return false;
  uint32_t id;
  if (!rd_fixed(&p, end, &id, 4) || id != 0) return false;
  uint8_t version;
  if (!rd_fixed(&p, end, &version, 1) || (version != 1 && version != 3 && version != 4)) return false;
  const char *aug = (const char *)p;
  while (p < end && *p) p++;
  if (p >= end) return false;
  p++;
  if (aug[0] == 'e' && aug[1] == 'h') p += sizeof(uintptr_t); /* ancient GCC "eh" pointer */
  if (version == 4) p += 2;                                      /* address_size, segment_size */
  if (p >= end) return false;
  memset(c, 0, sizeof *c);
  c->fde_enc = 0; /* absptr unless 'R' says otherwise */
  if (!rd_uleb(&p, end, &c->code_align) || !rd_sleb(&p, end, &c->data_align)) return false;
  if (version == 1) {
    uint8_t r;
    if (!rd_fixed(&p, end, &r, 1)) return false;
    c->ra_reg = r;
  } else if (!rd_uleb(&p, end, &c->ra_reg)) {
    return false;
  }
  const char *a = aug;
  if (a[0] == 'e' && a[1] == 'h') a += 2;
  if (*a == 'z') {
    c->has_z = true;
    uint64_t alen;
    if (!rd_uleb(&p, end, &alen) || alen > (uint64_t)(end - p)) return false;
    const uint8_t *adata = p, *aend = p + alen;
    bool known = true;
    for (a++; *a && known; a++) {
      switch (*a) {
      case 'L': /* LSDA encoding: FDEs carry the pointer; we skip it there */
        if (p >= aend) return false;
        p++;
        break;
      case 'P': {
        uint8_t penc;
        uintptr_t ignored;
        if (!rd_fixed(&p, aend, &penc, 1)) return false;
        if (!rd_enc(&p, aend, penc & 0x0f, 0, NULL, &ignored)) return false; /* only its size matters */
        break;
      }
      case 'R':
        if (!rd_fixed(&p, aend, &c->fde_enc, 1)) return false;
        break;
      case 'S': c->signal = true; break;
      default: known = false; break; /* unknown letter: the rest is skipped through alen */
      }
      if (p > aend) return false;
    }
    p = adata + alen;
  } else if (*a != '\0') {
    return false;
  }
  c->insns = p;
  c->end = end;
  c->obj = o;
  return true;
}

/* ---- call-frame program ---- */

typedef struct reg_rule {
  int how;
  int64_t off;
} reg_rule_t;

typedef struct cfa_state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  bool cfa_expr;
  reg_rule_t rbp, ra;
} cfa_state_t;

static reg_rule_t *tracked(cfa_state_t *st, const cie_t *c, uint64_t reg) {
  if (reg == REG_RBP_DW) return &st->rbp;
  if (reg == c->ra_reg) return &st->ra;
  return NULL;
}

static const reg_rule_t *tracked_init(const cfa_state_t *st, uint64_t reg) {
  if (reg == REG_RBP_DW) return &st->rbp;
  return &st->ra; /* only called for tracked registers */
}

static void set_rule(cfa_state_t *st, const cie_t *c, uint64_t reg, int how, int64_t off) {
  reg_rule_t *r = tracked(st, c, reg);
  if (r) {
    r->how = how;
    r->off = off;
  }
}

static void restore_rule(cfa_state_t *st, const cfa_state_t *init, const cie_t *c, uint64_t reg) {
  reg_rule_t *r = tracked(st, c, reg);
  if (r) *r = *tracked_init(init, reg);
}

/* u * align, wrapping (malformed data may overflow; the rule is then junk
 * that the walk's bounds reject, never undefined behaviour). */
static inline int64_t scaled(uint64_t u, int64_t align) { return (int64_t)(u * (uint64_t)align); }

/* Runs instructions [p, end) from location loc until the row that covers
 * target.  Returns false on anything malformed or unsupported in a way
 * that makes the rest of the program unreadable. */
static bool run_cfa(const uint8_t *p, const uint8_t *end, const cie_t *c, cfa_state_t *st,
                    const cfa_state_t *init, uintptr_t loc, uintptr_t target) {
  cfa_state_t saved[CFA_STACK_DEPTH];
  int depth = 0;
  uint64_t reg, u;
  int64_t s;
  while (p < end) {
    uint8_t op = *p++;
    switch (op >> 6) {
    case 1:
      loc += (op & 0x3f) * c->code_align;
      if (target < loc) return true;
      continue;
    case 2:
      if (!rd_uleb(&p, end, &u)) return false;
      set_rule(st, c, op & 0x3f, R_OFFSET, scaled(u, c->data_align));
      continue;
    case 3:
      restore_rule(st, init, c, op & 0x3f);
      continue;
    default:
      break;
    }
    switch (op) {
    case 0x00: /* nop */
      break;
    case 0x01: { /* set_loc */
      uintptr_t a;
      if (!rd_enc(&p, end, c->fde_enc, 0, c->obj, &a)) return false;
      loc = a;
      if (target < loc) return true;
      break;
    }
    case 0x02: case 0x03: case 0x04: { /* advance_loc1/2/4 */
      uint32_t d = 0;
      size_t n = op == 0x02 ? 1 : op == 0x03 ? 2 : 4;
      uint8_t b[4];
      if (!rd_fixed(&p, end, b, n)) return false;
      for (size_t i = 0; i < n; i++) d |= (uint32_t)b[i] << (8 * i);
      loc += d * c->code_align;
      if (target < loc) return true;
      break;
    }
    case 0x05: /* offset_extended */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u)) return false;
      set_rule(st, c, reg, R_OFFSET, scaled(u, c->data_align));
      break;
    case 0x06: /* restore_extended */
      if (!rd_uleb(&p, end, &reg)) return false;
      restore_rule(st, init, c, reg);
      break;
    case 0x07: /* undefined */
      if (!rd_uleb(&p, end, &reg)) return false;
      set_rule(st, c, reg, R_UNDEF, 0);
      break;
    case 0x08: /* same_value */
      if (!rd_uleb(&p, end, &reg)) return false;
      set_rule(st, c, reg, R_SAME, 0);
      break;
    case 0x09: /* register */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u)) return false;
      set_rule(st, c, reg, reg == u ? R_SAME : R_UNSUP, 0);
      break;
    case 0x0a: /* remember_state: the whole row, CFA included (as GCC expects) */
      if (depth == CFA_STACK_DEPTH) return false;
      saved[depth++] = *st;
      break;
    case 0x0b: /* restore_state */
      if (depth == 0) return false;
      *st = saved[--depth];
      break;
    case 0x0c: /* def_cfa */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u)) return false;
      st->cfa_reg = reg;
      st->cfa_off = (int64_t)u;
      st->cfa_expr = false;
      break;
    case 0x0d: /* def_cfa_register */
      if (!rd_uleb(&p, end, &reg)) return false;
      st->cfa_reg = reg;
      break;
    case 0x0e: /* def_cfa_offset */
      if (!rd_uleb(&p, end, &u)) return false;
      st->cfa_off = (int64_t)u;
      break;
    case 0x0f: /* def_cfa_expression: not evaluated */
      if (!rd_uleb(&p, end, &u) || u > (uint64_t)(end - p)) return false;
      p += u;
      st->cfa_expr = true;
      break;
    case 0x10: /* expression */
    case 0x16: /* val_expression */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u) || u > (uint64_t)(end - p)) return false;
      p += u;
      set_rule(st, c, reg, R_UNSUP, 0);
      break;
    case 0x11: /* offset_extended_sf */
      if (!rd_uleb(&p, end, &reg) || !rd_sleb(&p, end, &s)) return false;
      set_rule(st, c, reg, R_OFFSET, scaled((uint64_t)s, c->data_align));
      break;
    case 0x12: /* def_cfa_sf */
      if (!rd_uleb(&p, end, &reg) || !rd_sleb(&p, end, &s)) return false;
      st->cfa_reg = reg;
      st->cfa_off = scaled((uint64_t)s, c->data_align);
      st->cfa_expr = false;
      break;
    case 0x13: /* def_cfa_offset_sf */
      if (!rd_sleb(&p, end, &s)) return false;
      st->cfa_off = scaled((uint64_t)s, c->data_align);
      break;
    case 0x14: /* val_offset */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u)) return false;
      set_rule(st, c, reg, R_UNSUP, 0);
      break;
    case 0x15: /* val_offset_sf */
      if (!rd_uleb(&p, end, &reg) || !rd_sleb(&p, end, &s)) return false;
      set_rule(st, c, reg, R_UNSUP, 0);
      break;
    case 0x2e: /* GNU_args_size */
      if (!rd_uleb(&p, end, &u)) return false;
      break;
    case 0x2f: /* GNU_negative_offset_extended */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u)) return false;
      set_rule(st, c, reg, R_OFFSET, scaled(-u, c->data_align));
      break;
    default:
      return false;
    }
  }
  return true;
}

/* ---- FDE lookup ---- */

static inline int32_t tab_get(const uint8_t *tab, size_t i) {
  int32_t v;
  memcpy(&v, tab + 4 * i, sizeof v);
  return v;
}

/* The FDE covering pc through the module's .eh_frame_hdr search table,
 * whose entries are read only inside [hdr, hdr_hi): a table that claims more
 * entries than its segment holds is searched over the entries there.
 * Returns 1 found, 0 no FDE covers pc, -1 unusable table. */
static int find_fde(const hci_eh_obj_t *o, uintptr_t pc, const uint8_t **fde_out) {
  const uint8_t *hdr = (const uint8_t *)o->hdr;
  const uint8_t *hend = (const uint8_t *)o->hdr_hi;
  if (hend - hdr < 4 || hdr[0] != 1) return -1;
  uint8_t ptr_enc = hdr[1], cnt_enc = hdr[2], tab_enc = hdr[3];
  const uint8_t *p = hdr + 4;
  const uint8_t *lim = hend - hdr < 4 + 16 ? hend : hdr + 4 + 16; /* two encoded values, 8 bytes each at most */
  uintptr_t eh_frame, count;
  if (!rd_enc(&p, lim, ptr_enc, (uintptr_t)hdr, o, &eh_frame)) return -1;
  if (cnt_enc == DW_EH_PE_omit || tab_enc != DW_EH_PE_table_ok) return -1;
  if (!rd_enc(&p, lim, cnt_enc, (uintptr_t)hdr, o, &count)) return -1;
  size_t room = (size_t)(hend - p) / 8; /* pairs {initial_loc, fde}, sorted, hdr-relative */
  if (count > room) count = room;
  if (count == 0) return 0;
  uintptr_t base = (uintptr_t)hdr;
  if (pc < base + (intptr_t)tab_get(p, 0)) return 0;
  size_t lo = 0, hi = count; /* invariant: tab[lo].loc <= pc, answer in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (base + (intptr_t)tab_get(p, 2 * mid) <= pc) lo = mid;
    else hi = mid;
  }
  *fde_out = (const uint8_t *)(base + (intptr_t)tab_get(p, 2 * lo + 1));
  return 1;
}

/* Bytes of glibc's x86-64 __restore_rt: mov $15, %rax; syscall. */
static const uint8_t restore_rt_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

static const rule_t rule_stop = {.kind = K_STOP};
/* Frame-pointer convention, for code that has no FDE (hand-written asm, JIT). */
static const rule_t rule_fp = {.kind = K_NORMAL, .cfa_rbp = 1, .rbp_how = R_OFFSET,
                               .cfa_off = 16, .ra_off = -8, .rbp_off = -16};

/* Computes the rule for a frame executing at rip.  exact: rip is the PC of the
 * frame (first frame, interrupted frame); otherwise a return address, looked
 * up at rip - 1 so a call at the end of a function stays in it.  *cacheable
 * is false for results that may change (address not in any module yet). */
static rule_t compute_rule(uintptr_t rip, bool exact, bool *cacheable) {
  uintptr_t pc = exact ? rip : rip - 1;
  hci_eh_obj_t o;
  *cacheable = false;
  if (!hci_eh_find(pc, &o)) return rule_stop;
  *cacheable = true;
  if (o.nseg == 0) return rule_stop; /* headers unusable: nothing may be read */
  if (o.hdr == 0) return rule_fp;
  const uint8_t *fde;
  int found = find_fde(&o, pc, &fde);
  if (found < 0) return rule_stop;
  if (found == 0) return rule_fp;

  const uint8_t *p, *end;
  if (!record_extent(&o, fde, &p, &end)) return rule_fp;
  uint32_t cie_off;
  const uint8_t *cie_field = p;
  if (!rd_fixed(&p, end, &cie_off, 4) || cie_off == 0 || cie_off > (uintptr_t)cie_field) return rule_stop;
  cie_t c;
  if (!parse_cie(&o, cie_field - cie_off, &c)) return rule_stop;
  uintptr_t pc_begin, pc_range;
  if (!rd_enc(&p, end, c.fde_enc, 0, &o, &pc_begin) || !rd_enc(&p, end, c.fde_enc & 0x0f, 0, NULL, &pc_range))
    return rule_stop;
  if (pc < pc_begin || pc - pc_begin >= pc_range) return rule_fp; /* a gap between FDEs */
  if (c.has_z) {
    uint64_t alen;
    if (!rd_uleb(&p, end, &alen) || alen > (uint64_t)(end - p)) return rule_stop;
    p += alen;
  }
  if (c.signal) {
    /* Only glibc's sigreturn trampoline is understood. */
    uintptr_t code_end = rip + sizeof restore_rt_code;
    if (code_end > pc_begin + pc_range || !hci_eh_readable(&o, rip, sizeof restore_rt_code) ||
        memcmp((const void *)rip, restore_rt_code, sizeof restore_rt_code) != 0)
      return rule_stop;
    rule_t r = {.kind = K_SIGNAL};
    return r;
  }

  cfa_state_t st = {.cfa_reg = REG_RSP_DW, .cfa_off = 0, .cfa_expr = false,
                    .rbp = {R_SAME, 0}, .ra = {R_UNDEF, 0}};
  cfa_state_t init;
  if (!run_cfa(c.insns, c.end, &c, &st, &st, 0, UINTPTR_MAX)) return rule_stop;
  init = st;
  if (!run_cfa(p, end, &c, &st, &init, pc_begin, pc)) return rule_stop;

  if (st.cfa_expr || (st.cfa_reg != REG_RSP_DW && st.cfa_reg != REG_RBP_DW)) return rule_stop;
  if (st.ra.how == R_UNDEF) {
    rule_t r = {.kind = K_END};
    return r;
  }
  if (st.ra.how != R_OFFSET || st.rbp.how == R_UNSUP) return rule_stop;
  rule_t r = {.kind = K_NORMAL, .cfa_rbp = st.cfa_reg == REG_RBP_DW, .rbp_how = st.rbp.how,
              .cfa_off = st.cfa_off, .ra_off = st.ra.off, .rbp_off = st.rbp.off};
  return r;
}

/* ---- the per-PC cache ---- */

#define CACHE_BITS 13
#define CACHE_LEN ((size_t)1 << CACHE_BITS) /* 8192 entries, 128 KiB */
#define EXACT_BIT ((uint64_t)1 << 63)        /* key flag: rip is an exact PC (user addresses < 2^47) */

typedef struct cache_ent {
  _Atomic uint64_t key;  /* query ^ mix(rule) */
  _Atomic uint64_t rule; /* packed rule_t, bit 0 set when valid */
} cache_ent_t;

static _Atomic(cache_ent_t *) rule_cache;
/* Bumped when the cache is cleared (dlclose): walks memoised before are
 * stale (hc_unwind_memo_t.gen).  Never 0, which marks an empty memo. */
static _Atomic uint32_t rule_gen = 1;

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* Layout: 0 valid | 1-2 kind | 3 cfa_rbp | 4-5 rbp_how | 6-18 ra_off/8 |
 * 19-31 rbp_off/8 (13-bit signed) | 32-63 cfa_off (int32). */
static bool pack_rule(const rule_t *r, uint64_t *out) {
  int64_t ra8 = r->ra_off / 8, bp8 = r->rbp_off / 8;
  if (r->ra_off % 8 || r->rbp_off % 8) return false;
  if (ra8 < -4096 || ra8 > 4095 || bp8 < -4096 || bp8 > 4095) return false;
  if (r->cfa_off < INT32_MIN || r->cfa_off > INT32_MAX) return false;
  *out = 1 | (uint64_t)r->kind << 1 | (uint64_t)(r->cfa_rbp != 0) << 3 | (uint64_t)r->rbp_how << 4 |
         ((uint64_t)ra8 & 0x1fff) << 6 | ((uint64_t)bp8 & 0x1fff) << 19 |
         (uint64_t)(uint32_t)(int32_t)r->cfa_off << 32;
  return true;
}

static inline int64_t sext13(uint64_t v) { return (int64_t)(v << 51) >> 51; }

static inline void unpack_rule(uint64_t w, rule_t *r) {
  r->kind = (int)(w >> 1 & 3);
  r->cfa_rbp = (int)(w >> 3 & 1);
  r->rbp_how = (int)(w >> 4 & 3);
  r->ra_off = sext13(w >> 6 & 0x1fff) * 8;
  r->rbp_off = sext13(w >> 19 & 0x1fff) * 8;
  r->cfa_off = (int32_t)(uint32_t)(w >> 32);
}

static inline size_t cache_slot(uint64_t q) { return (size_t)((q * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)) & ~(size_t)1; }

static cache_ent_t *cache_get(void) {
  cache_ent_t *c = atomic_load_explicit(&rule_cache, memory_order_acquire);
  if (hc_likely(c != NULL)) return c;
  cache_ent_t *mine = hci_meta_alloc(CACHE_LEN * sizeof(cache_ent_t));
  if (mine == NULL) return NULL;
  if (!atomic_compare_exchange_strong_explicit(&rule_cache, &c, mine, memory_order_acq_rel,
                                               memory_order_acquire)) {
    hci_meta_free(mine, CACHE_LEN * sizeof(cache_ent_t));
    return c;
  }
  return mine;
}

static inline bool cache_lookup(cache_ent_t *cache, uint64_t q, rule_t *r) {
  size_t i = cache_slot(q);
  for (int way = 0; way < 2; way++) {
    uint64_t w = atomic_load_explicit(&cache[i + way].rule, memory_order_relaxed);
    uint64_t k = atomic_load_explicit(&cache[i + way].key, memory_order_relaxed);
    if ((w & 1) && k == (q ^ mix64(w))) {
      unpack_rule(w, r);
      return true;
    }
  }
  return false;
}

static void cache_insert(cache_ent_t *cache, uint64_t q, uint64_t w) {
  size_t i = cache_slot(q);
  /* Prefer an empty way; otherwise evict the way chosen by another hash bit. */
  size_t way = (atomic_load_explicit(&cache[i].rule, memory_order_relaxed) & 1) == 0 ? 0
               : (atomic_load_explicit(&cache[i + 1].rule, memory_order_relaxed) & 1) == 0 ? 1
               : (size_t)(mix64(q) & 1);
  atomic_store_explicit(&cache[i + way].rule, w, memory_order_relaxed);
  atomic_store_explicit(&cache[i + way].key, q ^ mix64(w), memory_order_relaxed);
}

void hci_unwind_dwarf_cache_clear(void) {
  hci_eh_cache_clear();
  if (atomic_fetch_add_explicit(&rule_gen, 1, memory_order_relaxed) + 1 == 0)
    atomic_store_explicit(&rule_gen, 1, memory_order_relaxed);
  cache_ent_t *c = atomic_load_explicit(&rule_cache, memory_order_acquire);
  if (c == NULL) return;
  for (size_t i = 0; i < CACHE_LEN; i++) {
    atomic_store_explicit(&c[i].rule, 0, memory_order_relaxed);
    atomic_store_explicit(&c[i].key, 0, memory_order_relaxed);
  }
}

bool hci_unwind_dwarf_available(void) { return hci_eh_available(); }

/* ---- the walk ---- */

typedef struct regs {
  uintptr_t rip, rsp, rbp;
  bool exact;        /* rip is a PC, not a return address */
} regs_t;

/* The stack words a walk read, for the memo (NULL when not kept). */
typedef struct walk_log {
  hc_unwind_memo_t *m;
  bool spoiled; /* too many words, or a signal frame (its stack may move) */
} walk_log_t;

/* [lo, hi): the readable stack; a read of 8 bytes at a must fit. */
static inline bool load_word(uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (a < lo || a > hi - sizeof(uintptr_t)) return false;
  memcpy(out, (const void *)a, sizeof *out);
  return true;
}

static inline bool load_logged(walk_log_t *log, uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (!load_word(lo, hi, a, out)) return false;
  if (log) {
    if (log->m->nloads < HC_UNWIND_MEMO_LOADS) {
      log->m->addr[log->m->nloads] = a;
      log->m->val[log->m->nloads++] = *out;
    } else {
      log->spoiled = true;
    }
  }
  return true;
}

/* One step: the caller's registers from r.  False ends the walk.  [*lo, *hi)
 * is the stack being walked; a signal frame may move it to the interrupted
 * stack (sigaltstack handlers). */
static rule_t rule_for(cache_ent_t *cache, uintptr_t rip, bool exact) {
  rule_t rule;
  uint64_t q = rip | (exact ? EXACT_BIT : 0);
  if (cache == NULL || !cache_lookup(cache, q, &rule)) {
    bool cacheable;
    uint64_t w;
    rule = compute_rule(rip, exact, &cacheable);
    if (cache && cacheable && pack_rule(&rule, &w)) cache_insert(cache, q, w);
  }
  return rule;
}

bool hci_unwind_keeps_fp(uintptr_t ra) {
  if (!hci_eh_available()) return true;
  rule_t rule = rule_for(cache_get(), ra, false);
  return rule.kind == K_NORMAL && rule.cfa_rbp;
}

static bool step(cache_ent_t *cache, regs_t *r, uintptr_t *lo_p, uintptr_t *hi_p, walk_log_t *log) {
  uintptr_t lo = *lo_p, hi = *hi_p;
  rule_t rule = rule_for(cache, r->rip, r->exact);
  /* A walk that ends at an address no module covers (yet) is not kept: a
   * module loaded there later would let it go on. */
  if (log && rule.kind == K_STOP) log->spoiled = true;
  if (rule.kind == K_SIGNAL) {
    if (log) log->spoiled = true;
    /* The handler returned to __restore_rt with rsp at the ucontext. */
    uintptr_t uc = r->rsp, rip, rsp, rbp;
    if (!load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), &rip) ||
        !load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), &rsp) ||
        !load_word(lo, hi, uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), &rbp))
      return false;
    if (rsp <= r->rsp || rsp >= hi) {
      /* The handler ran on another stack: continue on the interrupted one
       * only if it is a readable stack region of its own. */
      uintptr_t nhi = hci_unwind_stack_hi(rsp);
      if (nhi == 0 || (rsp < hi && rsp >= lo)) return false;
      *lo_p = rsp;
      *hi_p = nhi;
    }
    r->rip = rip;
    r->rsp = rsp;
    r->rbp = rbp;
    r->exact = true;
    return true;
  }
  if (rule.kind != K_NORMAL) return false;
  uintptr_t cfa = (rule.cfa_rbp ? r->rbp : r->rsp) + (uintptr_t)rule.cfa_off;
  if (cfa <= r->rsp || cfa > hi) return false;
  uintptr_t ra, rbp = r->rbp;
  if (!load_logged(log, lo, hi, cfa + (uintptr_t)rule.ra_off, &ra)) return false;
  if (rule.rbp_how == R_OFFSET && !load_logged(log, lo, hi, cfa + (uintptr_t)rule.rbp_off, &rbp)) return false;
  if (rule.rbp_how == R_UNDEF) rbp = 0;
  r->rip = ra;
  r->rsp = cfa;
  r->rbp = rbp;
  r->exact = false;
  return true;
}

static int dwarf_walk(uintptr_t *pcs, int max, int skip, regs_t r, walk_log_t *log) {
  uintptr_t lo = r.rsp;
  uintptr_t hi = hci_unwind_stack_hi(lo);
  if (hi < lo + sizeof(uintptr_t)) return 0;
  cache_ent_t *cache = cache_get();
  int n = 0;
  for (int steps = 0; n < max && steps < MAX_STEPS; steps++) {
    if (!step(cache, &r, &lo, &hi, log)) break;
    if (r.rip < 4096) break; /* outermost frame */
    if (skip > 0) skip--;
    else pcs[n++] = r.rip;
  }
  return n;
}

hc_noinline int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  if (skip < 0) skip = 0;
  if (!hci_eh_available()) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int n = hci_unwind_fp_skip(pcs, max, skip + 1, fp, fp);
    __asm__ volatile("" ::: "memory");
    return n;
  }
  /* Our own registers at one instruction: its PC, with rsp/rbp as they are
   * there, is a frame the CFI describes exactly. */
  regs_t r;
  __asm__ volatile("leaq 0(%%rip), %0\n\t"
                   "movq %%rsp, %1\n\t"
                   "movq %%rbp, %2"
                   : "=&r"(r.rip), "=&r"(r.rsp), "=&r"(r.rbp));
  r.exact = true;
  /* The first step yields the return address into our caller: drop it too. */
  int n = dwarf_walk(pcs, max, skip + 1, r, NULL);
  __asm__ volatile("" ::: "memory");
  return n;
}

/* The allocator is built with frame pointers up to the function that malloc
 * tail-calls, so the frame record holding ra is a few cheap steps away; the
 * caller's registers there are exactly what a DWARF step would compute, and
 * the 4-5 CFI lookups for allocator frames are saved. */
#define ALLOCATOR_FRAMES 8

/* Whether memo holds the walk from r over the words as they are now. */
static bool memo_holds(const hc_unwind_memo_t *m, const regs_t *r, int max) {
  if (m->gen != atomic_load_explicit(&rule_gen, memory_order_relaxed) || m->ra != r->rip || m->rsp != r->rsp ||
      m->rbp != r->rbp || m->n > max)
    return false;
  /* The words lie in this thread's stack above rsp, which is readable:
   * they were read from it, and the stack above rsp has not moved. */
  uintptr_t hi = hci_unwind_stack_hi(r->rsp);
  for (int i = 0; i < m->nloads; i++) {
    uintptr_t a = m->addr[i], v;
    if (a < r->rsp || a > hi - sizeof(uintptr_t)) return false;
    memcpy(&v, (const void *)a, sizeof v);
    if (v != m->val[i]) return false;
  }
  return true;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  if (max > HC_MAX_STACK_DEPTH) max = HC_MAX_STACK_DEPTH;
  if (max <= 0) return 0;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t rec = hci_eh_available() ? hci_unwind_fp_find(ra, ALLOCATOR_FRAMES, fp, fp) : 0;
  int n;
  if (rec == 0) {
    n = hci_unwind_dwarf(pcs, max, 0);
  } else {
    regs_t r = {.rip = ra, .rsp = rec + 2 * sizeof(uintptr_t), .rbp = ((const uintptr_t *)rec)[0], .exact = false};
    if (memo && memo_holds(memo, &r, max)) {
      memcpy(pcs, memo->pcs, (size_t)memo->n * sizeof *pcs);
      n = memo->n;
    } else {
      walk_log_t log = {.m = memo, .spoiled = false};
      if (memo) {
        memo->gen = 0; /* empty while it is rewritten */
        memo->nloads = 0;
      }
      pcs[0] = ra;
      n = 1 + dwarf_walk(pcs + 1, max - 1, 0, r, memo ? &log : NULL);
      if (memo && !log.spoiled) {
        memo->ra = r.rip;
        memo->rsp = r.rsp;
        memo->rbp = r.rbp;
        memo->n = n;
        memcpy(memo->pcs, pcs, (size_t)n * sizeof *pcs);
        memo->gen = atomic_load_explicit(&rule_gen, memory_order_relaxed);
      }
    }
  }
  __asm__ volatile("" ::: "memory");
  return n;
}

#else /* !HC_DWARF_X86_64: the frame-pointer walk stands in */

bool hci_unwind_dwarf_available(void) { return false; }

void hci_unwind_dwarf_cache_clear(void) {}

hc_noinline int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip) {
  if (skip < 0) skip = 0;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  int n = hci_unwind_fp_skip(pcs, max, skip + 1, fp, fp);
  __asm__ volatile("" ::: "memory");
  return n;
}

bool hci_unwind_keeps_fp(uintptr_t ra) {
  (void)ra;
  return true;
}

hc_noinline int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo) {
  (void)ra;
  (void)memo;
  int n = hci_unwind_dwarf(pcs, max, 0);
  __asm__ volatile("" ::: "memory");
  return n;
}

#endif
