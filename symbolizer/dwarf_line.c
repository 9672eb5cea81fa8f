/* dwarf_line.c - address -> file:line from .debug_line (DWARF 2, 3, 4, 5).
 *
 * Purpose: the line half of the symbolizer.  Building the index runs every
 * line-number program once and records each sequence (a run of rows ending
 * in DW_LNE_end_sequence) with its address range and where it starts; a
 * lookup binary-searches the sequences and re-runs just one of them, then
 * resolves the row's file index through the unit's directory/file tables.
 * Relative names are completed with the unit's compilation directory
 * (DW_AT_comp_dir of the first DIE of each .debug_info unit, matched through
 * DW_AT_stmt_list), which DWARF 2-4 line tables leave implicit.
 * Memory: one array of sequences and one of compilation directories per
 * module, no copy of the rows.
 *
 * Invariants:
 *  - the sections are untrusted: every read goes through a cursor that
 *    stops at the unit's end (never the section's), every string is checked
 *    to be NUL-terminated inside its section, counts are checked against the
 *    bytes left, and line_range 0 (a division by zero) rejects the unit;
 *  - a row covers [its address, the next row's address); since the caller
 *    passes a return address minus one, the row found is the call's;
 *  - VLIW op_index (maximum_operations_per_instruction > 1) is ignored:
 *    x86-64 and aarch64 always use 1;
 *  - DW_LNE_define_file (deprecated in DWARF 5) is ignored: rows using such
 *    files get no file name, just their line;
 *  - compressed sections never reach this file (elf_reader.c skips them).
 *
 * Locks: none; callers serialise.  Allocation: hci_meta_alloc only.
 */
#include <string.h>

#include "dwarf_cursor.h"
#include "hc_internal.h"
#include "hc_symbolize.h"

/* DWARF constants (from the DWARF 5 standard, section 7.22 and 7.7). */
enum {
  LNS_copy = 1, LNS_advance_pc, LNS_advance_line, LNS_set_file, LNS_set_column, LNS_negate_stmt,
  LNS_set_basic_block, LNS_const_add_pc, LNS_fixed_advance_pc, LNS_set_prologue_end,
  LNS_set_epilogue_begin, LNS_set_isa,
};
enum { LNE_end_sequence = 1, LNE_set_address = 2 };
enum { LNCT_path = 1, LNCT_directory_index = 2 };

/* ---- unit header ---- */
typedef struct unit {
  size_t off, end;          /* header offset; end of the unit (exclusive) */
  int version;
  unsigned offset_size;     /* 4 (32-bit DWARF) or 8 (64-bit DWARF) */
  size_t tables;            /* first byte of the directory/file tables */
  size_t program;           /* first opcode */
  uint8_t min_inst;
  int8_t line_base;
  uint8_t line_range;
  uint8_t opcode_base;
  const uint8_t *std_len;   /* opcode_base - 1 argument counts */
} unit_t;

enum { UNIT_STOP, UNIT_OK, UNIT_SKIP };

/* Parses the header at off.  UNIT_SKIP: unusable but u->end is valid;
 * UNIT_STOP: the section cannot be walked further. */
static int parse_unit(const hci_dwarf_sects_t *s, size_t off, unit_t *u) {
  memset(u, 0, sizeof *u);
  cur_t c = {s->line, off, s->line_size, false};
  uint64_t len = rd(&c, 4);
  u->offset_size = 4;
  if (len == 0xffffffffu) {
    len = rd(&c, 8);
    u->offset_size = 8;
  } else if (len >= 0xfffffff0u) {
    return UNIT_STOP; /* reserved values */
  }
  if (c.bad || len > c.end - c.pos) return UNIT_STOP;
  u->off = off;
  u->end = c.pos + (size_t)len;
  c.end = u->end;
  u->version = (int)rd(&c, 2);
  if (u->version < 2 || u->version > 5) return UNIT_SKIP;
  if (u->version >= 5) {
    rd(&c, 1); /* address_size: DW_LNE_set_address carries its own length */
    if (rd(&c, 1) != 0) return UNIT_SKIP; /* segment selectors: not on Linux */
  }
  uint64_t hlen = rd(&c, u->offset_size);
  if (c.bad || hlen > c.end - c.pos) return UNIT_SKIP;
  u->program = c.pos + (size_t)hlen;
  u->min_inst = (uint8_t)rd(&c, 1);
  if (u->version >= 4) rd(&c, 1); /* maximum_operations_per_instruction: see the top comment */
  rd(&c, 1);                       /* default_is_stmt: rows are used whatever their is_stmt */
  u->line_base = (int8_t)rd(&c, 1);
  u->line_range = (uint8_t)rd(&c, 1);
  u->opcode_base = (uint8_t)rd(&c, 1);
  if (c.bad || u->line_range == 0 || u->opcode_base == 0) return UNIT_SKIP;
  u->std_len = s->line + c.pos;
  skip(&c, u->opcode_base - 1u);
  if (c.bad || c.pos > u->program) return UNIT_SKIP;
  u->tables = c.pos;
  return UNIT_OK;
}

/* ---- the line-number state machine ---- */
typedef struct lstate {
  uint64_t addr;
  uint64_t file;
  uint64_t line;            /* unsigned: malformed advances wrap instead of overflowing */
  bool end_seq;             /* the row just emitted ends its sequence */
} lstate_t;

static void lstate_reset(lstate_t *st) {
  st->addr = 0;
  st->file = 1;
  st->line = 1;
  st->end_seq = false;
}

/* Executes one opcode.  Returns true when it emitted a row (in *st). */
static bool step(cur_t *c, const unit_t *u, lstate_t *st) {
  uint8_t op = (uint8_t)rd(c, 1);
  if (c->bad) return false;
  if (op >= u->opcode_base) {
    unsigned adj = op - u->opcode_base;
    st->addr += (uint64_t)u->min_inst * (adj / u->line_range);
    st->line += (uint64_t)(int64_t)(u->line_base + (int)(adj % u->line_range));
    return true;
  }
  if (op == 0) {
    uint64_t len = uleb(c);
    if (c->bad || len == 0 || len > c->end - c->pos) {
      c->bad = true;
      return false;
    }
    size_t next = c->pos + (size_t)len;
    uint8_t sub = (uint8_t)rd(c, 1);
    bool row = false;
    if (sub == LNE_end_sequence) {
      st->end_seq = true;
      row = true;
    } else if (sub == LNE_set_address && (len - 1 == 8 || len - 1 == 4)) {
      st->addr = rd(c, (size_t)len - 1);
    }
    c->pos = next; /* define_file, set_discriminator and unknown ones are skipped */
    return row;
  }
  switch (op) {
    case LNS_copy: return true;
    case LNS_advance_pc: st->addr += (uint64_t)u->min_inst * uleb(c); return false;
    case LNS_advance_line: st->line += (uint64_t)sleb(c); return false;
    case LNS_set_file: st->file = uleb(c); return false;
    case LNS_const_add_pc:
      st->addr += (uint64_t)u->min_inst * ((255u - u->opcode_base) / u->line_range);
      return false;
    case LNS_fixed_advance_pc: st->addr += rd(c, 2); return false;
    case LNS_negate_stmt:
    case LNS_set_basic_block:
    case LNS_set_prologue_end:
    case LNS_set_epilogue_begin:
      if (u->std_len[op - 1] == 0) return false;
      break; /* a producer gave them arguments: skip those like an unknown opcode */
    default: break; /* set_column, set_isa and unknown opcodes: skip their ULEB arguments */
  }
  for (unsigned i = 0; i < u->std_len[op - 1] && !c->bad; i++) uleb(c);
  return false;
}

/* ---- index ---- */

/* Records whose first field is their uint64_t key, by key (hci_sort). */
static int cmp_key(const void *a, const void *b) {
  uint64_t x, y;
  memcpy(&x, a, sizeof x);
  memcpy(&y, b, sizeof y);
  return x < y ? -1 : x > y;
}
static void sort_by_key(void *base, size_t n, size_t size) { hci_sort(base, n, size, cmp_key); }

static bool push_seq(hci_line_index_t *idx, const hci_line_seq_t *q) {
  if (idx->n == idx->alloc_bytes / sizeof *q) {
    hci_line_seq_t *v = hci_meta_grow(idx->seqs, &idx->alloc_bytes, idx->n * sizeof *q, 64 * sizeof *q);
    if (v == NULL) return false;
    idx->seqs = v;
  }
  idx->seqs[idx->n++] = *q;
  return true;
}

/* ---- compilation directories (.debug_info) ---- */

/* DWARF 2-4 line tables name the compilation directory only implicitly
 * (directory 0), and compilers write paths relative to it (meson builds
 * say ../src/x.c).  It is DW_AT_comp_dir of the unit's first DIE, which
 * also names its line table (DW_AT_stmt_list).  Only that DIE is read. */
enum { AT_stmt_list = 0x10, AT_comp_dir = 0x1b, AT_str_offsets_base = 0x72 };

static bool push_cu(hci_line_index_t *idx, uint64_t line_off, const char *dir, uint64_t info_off) {
  if (idx->ncus == idx->cus_bytes / sizeof(hci_line_cu_t)) {
    hci_line_cu_t *v = hci_meta_grow(idx->cus, &idx->cus_bytes, idx->ncus * sizeof *v, 32 * sizeof *v);
    if (v == NULL) return false;
    idx->cus = v;
  }
  idx->cus[idx->ncus].line_off = line_off;
  idx->cus[idx->ncus].comp_dir = dir;
  idx->cus[idx->ncus].info_off = info_off;
  idx->ncus++;
  return true;
}

static void scan_comp_dirs(hci_line_index_t *idx, const hci_dwarf_sects_t *s) {
  if (s->info == NULL || s->abbrev == NULL) return;
  size_t off = 0;
  while (off < s->info_size) {
    size_t unit_off = off;
    cur_t c = {s->info, off, s->info_size, false};
    die_ctx_t d = {0, 4, 0};
    uint64_t len = rd(&c, 4);
    if (len == 0xffffffffu) {
      len = rd(&c, 8);
      d.offset_size = 8;
    } else if (len >= 0xfffffff0u) {
      break;
    }
    if (c.bad || len > c.end - c.pos) break;
    c.end = c.pos + (size_t)len;
    off = c.end;
    d.version = (int)rd(&c, 2);
    uint64_t abbrev_off;
    if (d.version >= 2 && d.version <= 4) {
      abbrev_off = rd(&c, d.offset_size);
      d.addr_size = (unsigned)rd(&c, 1);
    } else if (d.version == 5) {
      unsigned type = (unsigned)rd(&c, 1);
      d.addr_size = (unsigned)rd(&c, 1);
      abbrev_off = rd(&c, d.offset_size);
      if (type == 4 || type == 5) skip(&c, 8); /* skeleton / split compile: dwo id */
      else if (type != 1 && type != 3) continue; /* type units have no line table of their own */
    } else {
      continue;
    }
    uint64_t code = uleb(&c);
    if (c.bad || code == 0 || abbrev_off >= s->abbrev_size) continue;
    cur_t a = {s->abbrev, (size_t)abbrev_off, s->abbrev_size, false};
    if (!find_abbrev(&a, code)) continue;
    uint64_t stmt = NO_INDEX, dir_strx = NO_INDEX;
    uint64_t str_base = d.offset_size == 8 ? 16 : 8; /* past the first contribution's header */
    const char *dir = NULL;
    for (;;) {
      uint64_t at = uleb(&a), form = uleb(&a);
      if (form == FORM_implicit_const) sleb(&a);
      if (a.bad || (at == 0 && form == 0)) break;
      uint64_t num, strx;
      const char *str;
      if (!die_value(&c, form, &d, s, &num, &str, &strx, true)) break;
      if (at == AT_stmt_list) stmt = num;
      else if (at == AT_comp_dir) dir = str, dir_strx = strx;
      else if (at == AT_str_offsets_base) str_base = num;
    }
    if (dir == NULL && dir_strx != NO_INDEX && s->str_offsets && dir_strx < s->str_offsets_size) {
      cur_t so = {s->str_offsets, 0, s->str_offsets_size, false};
      uint64_t at = str_base + dir_strx * d.offset_size;
      if (str_base <= s->str_offsets_size && at >= str_base && at <= s->str_offsets_size) {
        so.pos = (size_t)at;
        uint64_t str_off = rd(&so, d.offset_size);
        if (!so.bad) dir = sect_str(s->str, s->str_size, str_off);
      }
    }
    if (stmt != NO_INDEX && !push_cu(idx, stmt, dir && dir[0] ? dir : NULL, unit_off)) return;
  }
  sort_by_key(idx->cus, idx->ncus, sizeof *idx->cus);
}

static const hci_line_cu_t *cu_of(const hci_line_index_t *idx, size_t unit) {
  size_t lo = 0, hi = idx->ncus;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (idx->cus[mid].line_off < unit) lo = mid + 1;
    else hi = mid;
  }
  return lo < idx->ncus && idx->cus[lo].line_off == unit ? &idx->cus[lo] : NULL;
}

static const char *comp_dir_of(const hci_line_index_t *idx, size_t unit) {
  const hci_line_cu_t *cu = cu_of(idx, unit);
  return cu ? cu->comp_dir : NULL;
}

bool hci_dwarf_index_build(hci_line_index_t *idx, const hci_dwarf_sects_t *s) {
  memset(idx, 0, sizeof *idx);
  if (s->line == NULL) return false;
  size_t off = 0;
  while (off < s->line_size) {
    unit_t u;
    int r = parse_unit(s, off, &u);
    if (r == UNIT_STOP) break;
    off = u.end;
    if (r == UNIT_SKIP) continue;
    cur_t c = {s->line, u.program, u.end, false};
    lstate_t st;
    lstate_reset(&st);
    hci_line_seq_t q = {UINT64_MAX, 0, u.off, u.program};
    while (c.pos < c.end && !c.bad) {
      if (!step(&c, &u, &st)) continue;
      if (st.addr < q.lo) q.lo = st.addr;
      if (st.addr > q.hi) q.hi = st.addr;
      if (!st.end_seq) continue;
      if (q.lo < q.hi && !push_seq(idx, &q)) goto out; /* out of memory: keep what we have */
      lstate_reset(&st);
      q.lo = UINT64_MAX;
      q.hi = 0;
      q.start = c.pos;
    }
  }
out:
  if (idx->n == 0) {
    hci_dwarf_index_free(idx);
    return false;
  }
  sort_by_key(idx->seqs, idx->n, sizeof *idx->seqs);
  scan_comp_dirs(idx, s);
  return true;
}

void hci_dwarf_index_free(hci_line_index_t *idx) {
  if (idx->seqs) hci_meta_free(idx->seqs, idx->alloc_bytes);
  if (idx->cus) hci_meta_free(idx->cus, idx->cus_bytes);
  memset(idx, 0, sizeof *idx);
}

/* ---- file names ---- */

/* Reads one attribute value of a DWARF 5 entry: a string (*str) or a
 * number (*num).  False for forms that cannot be skipped. */
static bool read_form(cur_t *c, uint64_t form, const unit_t *u, const hci_dwarf_sects_t *s, const char **str,
                      uint64_t *num) {
  *str = NULL;
  *num = 0;
  switch (form) {
    case FORM_string: *str = cstr(c); break;
    case FORM_line_strp: *str = sect_str(s->line_str, s->line_str_size, rd(c, u->offset_size)); break;
    case FORM_strp: *str = sect_str(s->str, s->str_size, rd(c, u->offset_size)); break;
    case FORM_strp_sup:
    case FORM_GNU_strp_alt: rd(c, u->offset_size); break; /* supplementary file: not read */
    case FORM_strx:
    case FORM_udata: *num = uleb(c); break;
    case FORM_sdata: *num = (uint64_t)sleb(c); break;
    case FORM_data1:
    case FORM_strx1: *num = rd(c, 1); break;
    case FORM_data2:
    case FORM_strx2: *num = rd(c, 2); break;
    case FORM_strx3: *num = rd(c, 3); break;
    case FORM_data4:
    case FORM_strx4: *num = rd(c, 4); break;
    case FORM_data8: *num = rd(c, 8); break;
    case FORM_data16: skip(c, 16); break; /* DW_LNCT_MD5 */
    case FORM_block: skip(c, uleb(c)); break;
    case FORM_block1: skip(c, rd(c, 1)); break;
    case FORM_block2: skip(c, rd(c, 2)); break;
    case FORM_block4: skip(c, rd(c, 4)); break;
    default: return false;
  }
  /* strx* index .debug_str_offsets through the unit's DW_AT_str_offsets_base,
   * which lives in .debug_info: not followed, the name stays unknown. */
  if (form == FORM_strx || (form >= FORM_strx1 && form <= FORM_strx4)) *num = 0;
  return !c->bad;
}

#define MAX_FORMATS 16

/* A DWARF 5 entry-format list: (content type, form) pairs. */
typedef struct formats {
  unsigned n;
  uint64_t type[MAX_FORMATS], form[MAX_FORMATS];
} formats_t;

static bool read_formats(cur_t *c, formats_t *f) {
  f->n = (unsigned)rd(c, 1);
  if (f->n > MAX_FORMATS) return false;
  for (unsigned i = 0; i < f->n; i++) {
    f->type[i] = uleb(c);
    f->form[i] = uleb(c);
  }
  return !c->bad;
}

/* Reads `count` DWARF 5 entries; for entry `want` returns its path and
 * directory index.  Every entry consumes at least one byte per format, so a
 * count larger than the bytes left is malformed. */
static bool read_entries(cur_t *c, const formats_t *f, const unit_t *u, const hci_dwarf_sects_t *s,
                         uint64_t want, const char **path, uint64_t *dir, uint64_t *count_out) {
  uint64_t count = uleb(c);
  *count_out = count;
  if (c->bad || (f->n > 0 && count > c->end - c->pos)) return false;
  if (f->n == 0) return true;
  for (uint64_t i = 0; i < count; i++) {
    for (unsigned k = 0; k < f->n; k++) {
      const char *str;
      uint64_t num;
      if (!read_form(c, f->form[k], u, s, &str, &num)) return false;
      if (i != want) continue;
      if (f->type[k] == LNCT_path) *path = str;
      else if (f->type[k] == LNCT_directory_index) *dir = num;
    }
  }
  return true;
}

/* Appends a string to a bounded buffer (always NUL-terminated). */
typedef struct sbuf {
  char *p;
  size_t size, len;
} sbuf_t;

static void sb_put(sbuf_t *b, const char *s) {
  for (; *s; s++) {
    if (b->len + 1 < b->size) b->p[b->len++] = *s;
  }
  if (b->size) b->p[b->len < b->size ? b->len : b->size - 1] = 0;
}

/* dir0 is the compilation directory: relative names and relative
 * directories are taken from it. */
static void join(sbuf_t *b, const char *dir0, const char *dir, const char *name) {
  if (name[0] != '/') {
    if (dir && dir[0] && dir != dir0) {
      if (dir[0] != '/' && dir0 && dir0[0]) {
        sb_put(b, dir0);
        sb_put(b, "/");
      }
      sb_put(b, dir);
      sb_put(b, "/");
    } else if (dir0 && dir0[0]) {
      sb_put(b, dir0);
      sb_put(b, "/");
    }
  }
  sb_put(b, name);
}

/* Writes the name of file `index` of unit u; false when unknown. */
static bool file_name(const hci_dwarf_sects_t *s, const unit_t *u, uint64_t index, const char *comp_dir,
                      char *out, size_t size) {
  cur_t c = {s->line, u->tables, u->program, false};
  sbuf_t b = {out, size, 0};
  if (size) out[0] = 0;
  if (u->version >= 5) {
    formats_t df, ff;
    const char *dir0 = NULL, *name = NULL;
    uint64_t dir_index = 0, ndirs, nfiles, ignored;
    /* Directories: pass 1 for entry 0 (the compilation directory). */
    if (!read_formats(&c, &df)) return false;
    size_t dirs_at = c.pos;
    if (!read_entries(&c, &df, u, s, 0, &dir0, &ignored, &ndirs)) return false;
    if (!read_formats(&c, &ff)) return false;
    if (!read_entries(&c, &ff, u, s, index, &name, &dir_index, &nfiles)) return false;
    if (index >= nfiles || name == NULL) return false;
    const char *dir = NULL;
    if (dir_index < ndirs) {
      cur_t d = {s->line, dirs_at, u->program, false};
      if (!read_entries(&d, &df, u, s, dir_index, &dir, &ignored, &ndirs)) dir = NULL;
    }
    join(&b, dir0 ? dir0 : comp_dir, dir, name);
    return true;
  }
  /* DWARF 2-4: include_directories then file_names, both 1-based, ended by
   * an empty string; directory 0 is the compilation directory, which only
   * .debug_info knows (comp_dir; without it such names stay relative). */
  size_t dirs_at = c.pos;
  for (;;) {
    const char *d = cstr(&c);
    if (d == NULL) return false;
    if (d[0] == 0) break;
  }
  for (uint64_t i = 1;; i++) {
    const char *name = cstr(&c);
    if (name == NULL || name[0] == 0) return false;
    uint64_t dir = uleb(&c);
    uleb(&c); /* mtime */
    uleb(&c); /* length */
    if (c.bad) return false;
    if (i != index) continue;
    const char *dirname = NULL;
    cur_t d = {s->line, dirs_at, u->program, false};
    for (uint64_t k = 1; k <= dir; k++) {
      const char *x = cstr(&d);
      if (x == NULL || x[0] == 0) {
        dirname = NULL;
        break;
      }
      dirname = x;
    }
    join(&b, comp_dir, dir ? dirname : NULL, name);
    return true;
  }
}

/* ---- lookup ---- */

static const hci_line_seq_t *seq_at(const hci_line_index_t *idx, uint64_t addr) {
  /* Sequences rarely overlap (discarded functions left at address 0 are the
   * usual exception); look back a bounded distance for one that covers addr. */
  return hci_range_find(idx->seqs, idx->n, sizeof(hci_line_seq_t), offsetof(hci_line_seq_t, lo),
                        offsetof(hci_line_seq_t, hi), 64, addr);
}

bool hci_dwarf_unit_at(const hci_line_index_t *idx, uint64_t addr, size_t *line_unit, uint64_t *info_off) {
  const hci_line_seq_t *q = seq_at(idx, addr);
  const hci_line_cu_t *cu = q ? cu_of(idx, q->unit) : NULL;
  if (cu == NULL) return false;
  *line_unit = q->unit;
  *info_off = cu->info_off;
  return true;
}

bool hci_dwarf_file(const hci_line_index_t *idx, const hci_dwarf_sects_t *s, size_t line_unit, uint64_t index,
                    char *out, size_t size) {
  unit_t u;
  if (size) out[0] = 0;
  if (parse_unit(s, line_unit, &u) != UNIT_OK) return false;
  return file_name(s, &u, index, comp_dir_of(idx, line_unit), out, size);
}

bool hci_dwarf_lookup(const hci_line_index_t *idx, const hci_dwarf_sects_t *s, uint64_t addr, char *file,
                      size_t file_size, int *line) {
  if (file_size) file[0] = 0;
  *line = 0;
  const hci_line_seq_t *q = seq_at(idx, addr);
  if (q == NULL) return false;
  unit_t u;
  if (parse_unit(s, q->unit, &u) != UNIT_OK || q->start < u.program || q->start > u.end) return false;
  cur_t c = {s->line, q->start, u.end, false};
  lstate_t st, prev;
  lstate_reset(&st);
  prev = st;
  bool have_prev = false;
  while (c.pos < c.end && !c.bad) {
    if (!step(&c, &u, &st)) continue;
    if (have_prev && prev.addr <= addr && addr < st.addr) {
      *line = prev.line <= 0x7fffffff ? (int)prev.line : 0;
      if (!file_name(s, &u, prev.file, comp_dir_of(idx, q->unit), file, file_size) && file_size) file[0] = 0;
      return true;
    }
    if (st.end_seq) break;
    prev = st;
    have_prev = true;
  }
  return false;
}
