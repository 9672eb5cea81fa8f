/* unwind_cfi.c - the DWARF unwinder's cold path (x86-64 Linux): the module
 * of a PC (hci_eh_find, unwind_obj.c) -> its .eh_frame_hdr -> binary search
 * for the FDE -> the CIE and FDE call-frame programs run up to the PC -> a
 * rule "CFA = rsp|rbp + off; RA at CFA+ra_off; rbp same/undefined/at
 * CFA+rbp_off" that unwind_dwarf.c caches per PC, or a K_EXPR rule from the
 * DWARF expressions compilers emit (eval_expr: CFA = *(rsp|rbp + off) + add,
 * registers saved at rsp|rbp + off).
 *
 * Invariants:
 *  - Every read of unwind data lies in a readable segment of the module
 *    (hci_eh_readable): the search table within its segment (a larger
 *    fde_count is clipped to what is there), each CIE/FDE within one
 *    segment as its length says, indirect pointers and the sigreturn code
 *    bytes likewise.  Malformed data ends the walk; it never faults.
 *  - Anything we do not understand (expressions beyond eval_expr's forms,
 *    register rules other than offsets and those, unknown opcodes) gives
 *    K_STOP instead of a guess.  Expressions are evaluated here, once per
 *    rule, into the rule's numbers: the evaluation reads only the
 *    expression's bytes (inside its CIE/FDE, as checked when the program
 *    ran), no register and no stack word (the walk reads those, bounded as
 *    for any rule).
 *  - Signal frames: the FDE of glibc's __restore_rt ('S' augmentation) is
 *    recognised together with its code bytes (K_SIGNAL).
 * Locks: none; no allocation.
 */
#include <string.h>

#include "hc_stacks.h"

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#endif

#if defined(__x86_64__) && defined(__linux__) && defined(DLFO_EH_SEGMENT_TYPE)
#include "unwind_cfi.h"

/* ---- DWARF constants (DWARF 5 section 6.4, LSB "Exception Frames") ---- */
#define DW_EH_PE_omit 0xff
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_table_ok 0x3b /* datarel | sdata4: the only table layout we search */

#define REG_RBX_DW 3
#define REG_RBP_DW 6
#define REG_RSP_DW 7
#define REG_R12_DW 12
#define REG_R15_DW 15
#define REG_RIP_DW 16
#define CFA_STACK_DEPTH 8     /* remember_state nesting we accept */

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

/* Rules of the program whose expression is evaluated at its end
 * (resolve_reg): the register is saved at the expression's value
 * (DW_CFA_expression), or is that value (DW_CFA_val_expression). */
enum { RS_EXPR = 16, RS_VAL_EXPR = 17 };

/* expr: the expression's bytes in the module's .eh_frame (mapped while the
 * module is loaded, as long as the rule is used), len of them. */
typedef struct reg_rule {
  int how;      /* R_SAME, R_UNDEF, R_OFFSET, R_UNSUP, RS_EXPR, RS_VAL_EXPR */
  uint32_t len; /* RS_*: the expression's length */
  union {
    int64_t off;         /* R_OFFSET */
    const uint8_t *expr; /* RS_* */
  };
} reg_rule_t;

typedef struct cfa_state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  const uint8_t *cfa_expr; /* DW_CFA_def_cfa_expression's bytes (else NULL: cfa_reg + cfa_off) */
  uint32_t cfa_len;
  reg_rule_t rbp, ra;
  reg_rule_t saved[HCI_CFI_NSAVED]; /* rbx, r12-r15 (hci_cfi_frame) */
} cfa_state_t;

/* The index in cfa_state_t.saved of a callee-saved register, or -1. */
static int saved_index(uint64_t reg) {
  if (reg == REG_RBX_DW) return 0;
  if (reg >= REG_R12_DW && reg <= REG_R15_DW) return (int)(reg - REG_R12_DW) + 1;
  return -1;
}

static reg_rule_t *tracked(cfa_state_t *st, const cie_t *c, uint64_t reg) {
  if (reg == REG_RBP_DW) return &st->rbp;
  if (reg == c->ra_reg) return &st->ra;
  int k = saved_index(reg);
  return k >= 0 ? &st->saved[k] : NULL;
}

static const reg_rule_t *tracked_init(const cfa_state_t *st, uint64_t reg) {
  if (reg == REG_RBP_DW) return &st->rbp;
  int k = saved_index(reg);
  return k >= 0 ? &st->saved[k] : &st->ra; /* only called for tracked registers */
}

static void set_rule(cfa_state_t *st, const cie_t *c, uint64_t reg, int how, int64_t off) {
  reg_rule_t *r = tracked(st, c, reg);
  if (r) {
    r->how = how;
    r->len = 0;
    r->off = off;
  }
}

/* An expression rule (RS_*): its bytes stay where they are. */
static void set_expr_rule(cfa_state_t *st, const cie_t *c, uint64_t reg, int how, const uint8_t *expr, uint32_t len) {
  reg_rule_t *r = tracked(st, c, reg);
  if (r) {
    r->how = how;
    r->len = len;
    r->expr = expr;
  }
}

static void restore_rule(cfa_state_t *st, const cfa_state_t *init, const cie_t *c, uint64_t reg) {
  reg_rule_t *r = tracked(st, c, reg);
  if (r) *r = *tracked_init(init, reg);
}

/* def_cfa_register or def_cfa_offset while the CFA is an expression: DWARF
 * allows them only after a register rule, so the CFA is unknown (an empty
 * expression has no value: resolve_cfa fails), not half the old expression
 * and half a register rule. */
static void cfa_half_set(cfa_state_t *st) {
  if (st->cfa_expr) st->cfa_len = 0;
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
      st->cfa_expr = NULL;
      break;
    case 0x0d: /* def_cfa_register */
      if (!rd_uleb(&p, end, &reg)) return false;
      st->cfa_reg = reg;
      cfa_half_set(st);
      break;
    case 0x0e: /* def_cfa_offset */
      if (!rd_uleb(&p, end, &u)) return false;
      st->cfa_off = (int64_t)u;
      cfa_half_set(st);
      break;
    case 0x0f: /* def_cfa_expression: evaluated once the row is known (resolve_cfa) */
      if (!rd_uleb(&p, end, &u) || u > (uint64_t)(end - p)) return false;
      if (u > UINT32_MAX) return false;
      st->cfa_expr = p;
      st->cfa_len = (uint32_t)u;
      p += u;
      break;
    case 0x10: /* expression */
    case 0x16: /* val_expression */
      if (!rd_uleb(&p, end, &reg) || !rd_uleb(&p, end, &u) || u > (uint64_t)(end - p) || u > UINT32_MAX)
        return false;
      set_expr_rule(st, c, reg, op == 0x10 ? RS_EXPR : RS_VAL_EXPR, p, (uint32_t)u);
      p += u;
      break;
    case 0x11: /* offset_extended_sf */
      if (!rd_uleb(&p, end, &reg) || !rd_sleb(&p, end, &s)) return false;
      set_rule(st, c, reg, R_OFFSET, scaled((uint64_t)s, c->data_align));
      break;
    case 0x12: /* def_cfa_sf */
      if (!rd_uleb(&p, end, &reg) || !rd_sleb(&p, end, &s)) return false;
      st->cfa_reg = reg;
      st->cfa_off = scaled((uint64_t)s, c->data_align);
      st->cfa_expr = NULL;
      break;
    case 0x13: /* def_cfa_offset_sf */
      if (!rd_sleb(&p, end, &s)) return false;
      st->cfa_off = scaled((uint64_t)s, c->data_align);
      cfa_half_set(st);
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

/* ---- DWARF expressions (DWARF 5 section 2.5) ----
 *
 * CFI expressions are evaluated here, once per rule, not by the walk: a
 * value on the stack is a constant, a register of the frame plus an offset
 * (rsp, rbp; the CFA, which a register rule's expression starts with), or
 * the word at such an address plus an addend.  That covers what compilers
 * and assemblers emit on x86-64:
 *   GCC's stack realignment through a DRAP register: CFA = *(rbp - N)
 *     (DW_OP_breg6 -N; DW_OP_deref), registers saved at rbp - M;
 *   OpenSSL's perlasm: CFA = *(rsp + N) + 8 (DW_OP_breg7 N; DW_OP_deref;
 *     DW_OP_plus_uconst 8);
 *   the PLT's CFA = rsp + 8 + ((rip & 15) >= 11) * 8: rip (DW_OP_breg16) is
 *     a constant here, since the rule is one pc's.
 * Anything else (another register: r10, r9; a second load; registers
 * combined other than by adding constants; branches) is unsupported and
 * the walk stops there, as before.  Each operation consumes at least one
 * byte and the stack is fixed: the evaluation ends and never overflows. */
#define EXPR_STACK 8
#define B_CONST (-1) /* a constant: off */

typedef struct aval {
  int base;      /* B_CONST, B_CFA, B_RSP or B_RBP */
  bool deref;    /* *(base + off) + add, else base + off */
  uint64_t off;  /* wrapping arithmetic, as DWARF's on 64-bit targets */
  uint64_t add;
} aval_t;

static inline aval_t av_const(uint64_t v) { return (aval_t){.base = B_CONST, .off = v}; }

static inline void av_add(aval_t *v, uint64_t k) {
  if (v->deref) v->add += k;
  else v->off += k;
}

/* DW_OP_breg<reg> off: the frame's rsp or rbp, or rip as a constant. */
static bool av_breg(uint64_t reg, int64_t off, uintptr_t rip, aval_t *out) {
  if (reg == REG_RIP_DW) *out = av_const(rip + (uint64_t)off);
  else if (reg == REG_RSP_DW || reg == REG_RBP_DW)
    *out = (aval_t){.base = reg == REG_RSP_DW ? B_RSP : B_RBP, .off = (uint64_t)off};
  else return false; /* a register the walk does not know */
  return true;
}

/* A binary operation of constants a (second from top) and b (top). */
static bool const_binop(uint8_t op, uint64_t a, uint64_t b, uint64_t *out) {
  int64_t sa = (int64_t)a, sb = (int64_t)b;
  switch (op) {
  case 0x1a: *out = a & b; break;
  case 0x1b: /* div, signed */
    if (sb == 0 || (sa == INT64_MIN && sb == -1)) return false;
    *out = (uint64_t)(sa / sb);
    break;
  case 0x1d: /* mod */
    if (b == 0) return false;
    *out = a % b;
    break;
  case 0x1e: *out = a * b; break;
  case 0x21: *out = a | b; break;
  case 0x24: *out = b < 64 ? a << b : 0; break;
  case 0x25: *out = b < 64 ? a >> b : 0; break;
  case 0x26: *out = (uint64_t)(sa >> (b < 64 ? b : 63)); break;
  case 0x27: *out = a ^ b; break;
  case 0x29: *out = sa == sb; break;
  case 0x2a: *out = sa >= sb; break;
  case 0x2b: *out = sa > sb; break;
  case 0x2c: *out = sa <= sb; break;
  case 0x2d: *out = sa < sb; break;
  case 0x2e: *out = sa != sb; break;
  default: return false;
  }
  return true;
}

/* a (second from top) op b (top) into *a, for plus, minus and the
 * operations of constants. */
static bool av_binop(uint8_t op, aval_t *a, const aval_t *b) {
  if (op == 0x22) { /* plus: a register value plus a constant */
    if (b->base == B_CONST) {
      av_add(a, b->off);
    } else if (a->base == B_CONST) {
      uint64_t k = a->off;
      *a = *b;
      av_add(a, k);
    } else {
      return false;
    }
    return true;
  }
  if (op == 0x1c) { /* minus */
    if (b->base == B_CONST) {
      av_add(a, -b->off);
    } else if (a->base == b->base && !a->deref && !b->deref) {
      *a = av_const(a->off - b->off); /* the register cancels */
    } else {
      return false;
    }
    return true;
  }
  if (a->base != B_CONST || b->base != B_CONST) return false;
  return const_binop(op, a->off, b->off, &a->off);
}

/* Evaluates the expression [p, p + len) of the frame at rip into *out.
 * push_cfa: a register rule's (its stack starts with the CFA). */
static bool eval_expr(const uint8_t *p, uint32_t len, bool push_cfa, uintptr_t rip, aval_t *out) {
  const uint8_t *end = p + len;
  aval_t st[EXPR_STACK];
  int n = 0;
  if (push_cfa) st[n++] = (aval_t){.base = B_CFA};
  while (p < end) {
    uint8_t op = *p++;
    uint64_t u = 0, reg;
    int64_t s;
    aval_t v;
    if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
      v = av_const(op - 0x30u);
    } else if ((op >= 0x70 && op <= 0x8f) || op == 0x92) { /* breg0..31, bregx */
      reg = op - 0x70u;
      if (op == 0x92 && !rd_uleb(&p, end, &reg)) return false;
      if (!rd_sleb(&p, end, &s) || !av_breg(reg, s, rip, &v)) return false;
    } else if (op >= 0x08 && op <= 0x0f) { /* const1u/1s .. const8u/8s: little-endian */
      size_t w = (size_t)1 << ((op - 0x08) / 2);
      uint8_t b[8];
      if (!rd_fixed(&p, end, b, w)) return false;
      for (size_t i = 0; i < w; i++) u |= (uint64_t)b[i] << (8 * i);
      if ((op & 1) && w < 8 && (b[w - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * w);
      v = av_const(u);
    } else {
      switch (op) {
      case 0x10: /* constu */
        if (!rd_uleb(&p, end, &u)) return false;
        v = av_const(u);
        break;
      case 0x11: /* consts */
        if (!rd_sleb(&p, end, &s)) return false;
        v = av_const((uint64_t)s);
        break;
      case 0x9c: /* call_frame_cfa: only in a register rule (the CFA's own is circular) */
        if (!push_cfa) return false;
        v = (aval_t){.base = B_CFA};
        break;
      case 0x12: /* dup */
      case 0x14: /* over */
        if (n < (op == 0x12 ? 1 : 2)) return false;
        v = st[n - (op == 0x12 ? 1 : 2)];
        break;
      case 0x15: /* pick */
        if (!rd_fixed(&p, end, &op, 1) || op >= n) return false;
        v = st[n - 1 - op];
        break;
      default:
        goto in_place; /* operations on the stack's top */
      }
    }
    if (n == EXPR_STACK) return false;
    st[n++] = v;
    continue;
  in_place:
    switch (op) {
    case 0x96: /* nop */
      break;
    case 0x13: /* drop */
      if (n < 1) return false;
      n--;
      break;
    case 0x16: /* swap */
      if (n < 2) return false;
      v = st[n - 1], st[n - 1] = st[n - 2], st[n - 2] = v;
      break;
    case 0x17: /* rot: the top goes below the next two */
      if (n < 3) return false;
      v = st[n - 1], st[n - 1] = st[n - 2], st[n - 2] = st[n - 3], st[n - 3] = v;
      break;
    case 0x06: /* deref: a word of the stack, loaded by the walk */
      if (n < 1 || st[n - 1].base == B_CONST || st[n - 1].deref) return false;
      st[n - 1].deref = true;
      st[n - 1].add = 0;
      break;
    case 0x23: /* plus_uconst */
      if (n < 1 || !rd_uleb(&p, end, &u)) return false;
      av_add(&st[n - 1], u);
      break;
    case 0x19: /* abs */
    case 0x1f: /* neg */
    case 0x20: /* not */
      if (n < 1 || st[n - 1].base != B_CONST) return false;
      s = (int64_t)st[n - 1].off;
      st[n - 1].off = op == 0x20 ? ~(uint64_t)s : op == 0x1f || s < 0 ? -(uint64_t)s : (uint64_t)s;
      break;
    default: /* binary operations; anything else is unsupported */
      if (n < 2 || !av_binop(op, &st[n - 2], &st[n - 1])) return false;
      n--;
      break;
    }
  }
  if (n < 1) return false;
  *out = st[n - 1];
  return true;
}

/* The CFA of the row into r (cfa_rbp, cfa_off, and for an expression that
 * loads it cfa_deref, cfa_add).  False: a CFA the walk cannot compute. */
static bool resolve_cfa(const cfa_state_t *st, uintptr_t rip, rule_t *r) {
  if (st->cfa_expr == NULL) {
    if (st->cfa_reg != REG_RSP_DW && st->cfa_reg != REG_RBP_DW) return false;
    r->cfa_rbp = st->cfa_reg == REG_RBP_DW;
    r->cfa_off = st->cfa_off;
    return true;
  }
  aval_t v;
  if (!eval_expr(st->cfa_expr, st->cfa_len, false, rip, &v) || (v.base != B_RSP && v.base != B_RBP)) return false;
  r->cfa_rbp = v.base == B_RBP;
  r->cfa_off = (int64_t)v.off;
  r->cfa_deref = v.deref;
  r->cfa_add = v.deref ? (int64_t)v.add : 0;
  return true;
}

/* A register's rule with its expression, if any, evaluated: *how (R_SAME,
 * R_UNDEF, R_OFFSET, R_AT, R_VAL or R_UNSUP), *base and *off. */
static void resolve_reg(const reg_rule_t *in, uintptr_t rip, int *how, int *base, int64_t *off) {
  *how = in->how;
  *base = B_CFA;
  *off = 0;
  if (in->how != RS_EXPR && in->how != RS_VAL_EXPR) {
    if (in->how == R_OFFSET) *off = in->off;
    return;
  }
  aval_t v;
  *how = R_UNSUP;
  if (!eval_expr(in->expr, in->len, true, rip, &v) || v.base == B_CONST) return;
  if (in->how == RS_VAL_EXPR && !v.deref) { /* the value itself: base + off */
    *how = R_VAL;
  } else {
    /* Saved at an address: the expression's value, or for a value the
     * word loaded (with nothing added to it). */
    if (in->how == RS_EXPR ? v.deref : v.add != 0) return;
    *how = v.base == B_CFA ? R_OFFSET : R_AT;
  }
  *base = v.base;
  *off = (int64_t)v.off;
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

/* Calls fn(ctx, pc_begin, fde) for each FDE of the .eh_frame [lo, hi) (one
 * of positive range) until fn returns false; every record is read inside a
 * readable segment of o (record_extent) and inside [lo, hi), and the CIE
 * shared by consecutive FDEs is parsed once. */
static void each_fde(const hci_eh_obj_t *o, uintptr_t lo, uintptr_t hi,
                     bool (*fn)(void *ctx, uintptr_t begin, uintptr_t range, const uint8_t *fde), void *ctx) {
  const uint8_t *p = (const uint8_t *)lo, *last_cie = NULL;
  cie_t c;
  bool have_cie = false;
  while ((uintptr_t)p < hi && hi - (uintptr_t)p >= 4) {
    const uint8_t *body, *end, *q;
    if (!record_extent(o, p, &body, &end) || (uintptr_t)end > hi) return; /* the terminator, or junk */
    uint32_t id;
    q = body;
    if (rd_fixed(&q, end, &id, 4) && id != 0 && id <= (uintptr_t)body) {
      if (body - id != last_cie) {
        last_cie = body - id;
        have_cie = parse_cie(o, last_cie, &c);
      }
      uintptr_t begin, range;
      if (have_cie && rd_enc(&q, end, c.fde_enc, 0, o, &begin) && rd_enc(&q, end, c.fde_enc & 0x0f, 0, NULL, &range) &&
          range > 0 && !fn(ctx, begin, range, p))
        return;
    }
    p = end;
  }
}

typedef struct {
  uintptr_t pc;
  const uint8_t *fde;
} pc_query_t;

static bool covers_pc(void *ctx, uintptr_t begin, uintptr_t range, const uint8_t *fde) {
  pc_query_t *q = ctx;
  if (q->pc < begin || q->pc - begin >= range) return true;
  q->fde = fde;
  return false;
}

/* The FDE covering pc found by reading the whole .eh_frame [lo, hi): what
 * a static executable linked without a search table offers (gcc passes
 * --eh-frame-hdr to the linker except with -static).  Cold: a few frames
 * once per process.  Returns 1 found, 0 not. */
static int find_fde_linear(const hci_eh_obj_t *o, uintptr_t lo, uintptr_t hi, uintptr_t pc,
                           const uint8_t **fde_out) {
  pc_query_t q = {pc, NULL};
  each_fde(o, lo, hi, covers_pc, &q);
  if (!q.fde) return 0;
  *fde_out = q.fde;
  return 1;
}

/* A static executable linked without .eh_frame_hdr (gcc -static's
 * default): its FDEs as pairs {pc_begin, fde}, sorted by pc_begin, built
 * once from the whole .eh_frame by hci_cfi_static_index, so that allocation
 * stacks are walked through code without frame pointers (libc.a's, -O2
 * programs') instead of ending at malloc's caller.  Published with a release
 * store; NULL until then (lookups then use the frame-pointer convention). */
static _Atomic(const uintptr_t *) static_tab;
static size_t static_n; /* written before static_tab */
HC_PRIVATE_STATE(static_tab);
HC_PRIVATE_STATE(static_n);

static int cmp_pair(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  uintptr_t *tab; /* NULL: count only */
  size_t n, max;
} fde_list_t;

static bool list_fde(void *ctx, uintptr_t begin, uintptr_t range, const uint8_t *fde) {
  (void)range;
  fde_list_t *l = ctx;
  if (l->tab) {
    if (l->n == l->max) return false;
    l->tab[2 * l->n] = begin;
    l->tab[2 * l->n + 1] = (uintptr_t)fde;
  }
  l->n++;
  return true;
}

bool hci_cfi_static_index(uintptr_t eh_lo, uintptr_t eh_hi) {
  if (atomic_load_explicit(&static_tab, memory_order_acquire)) return true;
  hci_eh_obj_t o;
  if (!hci_eh_static_exe() || eh_lo >= eh_hi || !hci_eh_find(eh_lo, &o) || o.hdr != 0 || o.nseg == 0 ||
      !hci_eh_readable(&o, eh_lo, eh_hi - eh_lo))
    return false;
  fde_list_t l = {NULL, 0, 0};
  each_fde(&o, eh_lo, eh_hi, list_fde, &l);
  if (l.n == 0) return false;
  uintptr_t *tab = hci_meta_alloc(l.n * 2 * sizeof *tab);
  if (!tab) return false;
  l = (fde_list_t){tab, 0, l.n};
  each_fde(&o, eh_lo, eh_hi, list_fde, &l);
  size_t n = l.n;
  hci_sort(tab, n, 2 * sizeof *tab, cmp_pair);
  static_n = n;
  atomic_store_explicit(&static_tab, tab, memory_order_release);
  return true;
}

/* The FDE whose start is the last at or below pc, from the static index:
 * 1 found (the caller checks pc against its range), 0 none. */
static int find_fde_static(uintptr_t pc, const uint8_t **fde_out) {
  const uintptr_t *t = atomic_load_explicit(&static_tab, memory_order_acquire);
  size_t n = static_n;
  if (!t || n == 0 || pc < t[0]) return 0;
  size_t lo = 0, hi = n; /* invariant: t[lo].begin <= pc, answer in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (t[2 * mid] <= pc) lo = mid;
    else hi = mid;
  }
  *fde_out = (const uint8_t *)t[2 * lo + 1];
  return 1;
}

/* Bytes of glibc's x86-64 __restore_rt: mov $15, %rax; syscall. */
static const uint8_t restore_rt_code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

static const rule_t rule_stop = {.kind = K_STOP};
/* Frame-pointer convention, for code that has no FDE (hand-written asm, JIT). */
static const rule_t rule_fp = {.kind = K_NORMAL, .cfa_rbp = 1, .rbp_how = R_OFFSET,
                               .cfa_off = 16, .ra_off = -8, .rbp_off = -16};

/* hci_cfi_rule, and with full (not NULL) hci_cfi_frame's extras; [eh_lo,
 * eh_hi): the .eh_frame to search when the module has no .eh_frame_hdr. */
static rule_t cfi_lookup(uintptr_t rip, bool exact, bool *cacheable, hci_cfi_frame_t *full, uintptr_t eh_lo,
                         uintptr_t eh_hi) {
  uintptr_t pc = exact ? rip : rip - 1;
  hci_eh_obj_t o;
  *cacheable = false;
  if (!hci_eh_find(pc, &o)) return rule_stop;
  *cacheable = true;
  if (o.nseg == 0) return rule_stop; /* headers unusable: nothing may be read */
  const uint8_t *fde;
  int found;
  if (o.hdr != 0) found = find_fde(&o, pc, &fde);
  else if (eh_lo < eh_hi && hci_eh_readable(&o, eh_lo, eh_hi - eh_lo)) found = find_fde_linear(&o, eh_lo, eh_hi, pc, &fde);
  else if (atomic_load_explicit(&static_tab, memory_order_acquire)) found = find_fde_static(pc, &fde);
  else return rule_fp;
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
  if (full) {
    full->fn_lo = pc_begin;
    full->fn_hi = pc_begin + pc_range;
  }
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

  /* The callee-saved registers keep their values unless a rule says where
   * they were saved (saved[]: R_SAME, zero-initialised). */
  cfa_state_t st = {.cfa_reg = REG_RSP_DW, .cfa_off = 0, .cfa_expr = NULL,
                    .rbp = {.how = R_SAME}, .ra = {.how = R_UNDEF}};
  cfa_state_t init;
  if (!run_cfa(c.insns, c.end, &c, &st, &st, 0, UINTPTR_MAX)) return rule_stop;
  init = st;
  if (!run_cfa(p, end, &c, &st, &init, pc_begin, pc)) return rule_stop;

  rule_t r = {.kind = K_NORMAL};
  if (!resolve_cfa(&st, rip, &r)) return rule_stop;
  int ra_how, ra_base;
  resolve_reg(&st.ra, rip, &ra_how, &ra_base, &r.ra_off);
  if (ra_how == R_UNDEF) {
    rule_t e = {.kind = K_END};
    return e;
  }
  resolve_reg(&st.rbp, rip, &r.rbp_how, &r.rbp_base, &r.rbp_off);
  if (ra_how != R_OFFSET || r.rbp_how == R_UNSUP) return rule_stop;
  /* Forms only an expression gives: the walk's slower step (unwind_dwarf.c). */
  if (r.cfa_deref || r.rbp_how == R_AT || r.rbp_how == R_VAL) r.kind = K_EXPR;
  if (full)
    for (int i = 0; i < HCI_CFI_NSAVED; i++)
      resolve_reg(&st.saved[i], rip, &full->saved_how[i], &full->saved_base[i], &full->saved_off[i]);
  return r;
}

/* See unwind_cfi.h. */
bool hci_cfi_is_sigreturn(uintptr_t pc) {
  hci_eh_obj_t o;
  if (pc < 4096 || !hci_eh_find(pc, &o)) return false;
  return hci_eh_readable(&o, pc, sizeof restore_rt_code) &&
         memcmp((const void *)pc, restore_rt_code, sizeof restore_rt_code) == 0;
}

rule_t hci_cfi_rule(uintptr_t rip, bool exact, bool *cacheable) {
  return cfi_lookup(rip, exact, cacheable, NULL, 0, 0);
}

rule_t hci_cfi_frame(uintptr_t rip, bool exact, uintptr_t eh_lo, uintptr_t eh_hi, hci_cfi_frame_t *f) {
  bool cacheable;
  memset(f, 0, sizeof *f); /* no FDE: fn_lo == fn_hi */
  for (int i = 0; i < HCI_CFI_NSAVED; i++) f->saved_how[i] = R_UNSUP;
  return cfi_lookup(rip, exact, &cacheable, f, eh_lo, eh_hi);
}

#endif
