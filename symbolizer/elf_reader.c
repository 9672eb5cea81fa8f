/* elf_reader.c - a defensive ELF64 reader for the symbolizer.
 *
 * Purpose: give symbolize.c the sections, notes and sorted function-symbol
 * tables of an ELF image, which is either a file mapped read-only or memory
 * (the vdso, fuzzer inputs).
 *
 * Invariants:
 *  - the image is untrusted: every offset, size, index and string is checked
 *    against the image size before it is used, with overflow-safe arithmetic;
 *    a malformed or truncated file yields "not found", never a fault;
 *  - headers and symbols are copied out with memcpy, so no alignment is
 *    assumed (a fuzzer buffer or a bad e_shoff may be unaligned);
 *  - only ELF64 little-endian images are accepted (x86-64, aarch64);
 *  - tables are allocated with hci_meta_alloc (never malloc: the symbolizer
 *    may run from the allocator's exit-time reporting).
 *
 * Locks: none here; callers serialise (symbolize.c holds its own lock).
 * A file that shrinks while mapped can still raise SIGBUS: mappings are
 * only taken of files the process loaded, which are not expected to change.
 */
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hc_internal.h"
#include "hc_symbolize.h"

/* ---- bounds helpers ---- */

/* True when [off, off + len) lies inside a region of the given size. */
static bool in_bounds(uint64_t off, uint64_t len, size_t size) {
  return off <= size && len <= size - off;
}

static bool read_shdr(const hci_elf_t *e, unsigned i, Elf64_Shdr *sh) {
  if (i >= e->shnum) return false;
  memcpy(sh, e->data + e->shoff + (size_t)i * e->shentsize, sizeof *sh);
  return true;
}

/* Section contents inside the image (NOBITS and out-of-range ones have none). */
static bool shdr_contents(const hci_elf_t *e, const Elf64_Shdr *sh, const uint8_t **data, size_t *size) {
  if (sh->sh_type == SHT_NOBITS || sh->sh_type == SHT_NULL) return false;
  if (!in_bounds(sh->sh_offset, sh->sh_size, e->size)) return false;
  *data = e->data + sh->sh_offset;
  *size = (size_t)sh->sh_size;
  return true;
}

/* Usable length of a string table: up to and including its last NUL, so
 * that any offset below it starts a terminated string. */
static size_t strtab_usable(const uint8_t *p, size_t size) {
  while (size > 0 && p[size - 1] != 0) size--;
  return size;
}

/* ---- image ---- */

bool hci_elf_open_buffer(hci_elf_t *e, const void *data, size_t size) {
  memset(e, 0, sizeof *e);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  (void)data;
  (void)size;
  return false; /* the reader only understands little-endian images */
#else
  Elf64_Ehdr eh;
  if (data == NULL || size < sizeof eh) return false;
  memcpy(&eh, data, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT)
    return false;
  e->data = data;
  e->size = size;
  e->type = eh.e_type;
  if (eh.e_shoff == 0) return true; /* valid, just without sections */
  if (eh.e_shentsize < sizeof(Elf64_Shdr) || !in_bounds(eh.e_shoff, eh.e_shentsize, size)) return true;
  e->shoff = (size_t)eh.e_shoff;
  e->shentsize = eh.e_shentsize;
  /* Extended numbering: counts too big for the header live in section 0. */
  Elf64_Shdr sh0;
  memcpy(&sh0, e->data + e->shoff, sizeof sh0);
  uint64_t shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
  uint64_t shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
  if (shnum == 0 || shnum > (size - e->shoff) / e->shentsize) return true; /* table truncated */
  e->shnum = (unsigned)shnum;
  Elf64_Shdr ss;
  const uint8_t *p;
  size_t n;
  if (shstrndx != SHN_UNDEF && shstrndx < shnum && read_shdr(e, (unsigned)shstrndx, &ss) &&
      ss.sh_type == SHT_STRTAB && shdr_contents(e, &ss, &p, &n)) {
    n = strtab_usable(p, n);
    if (n > 0) {
      e->shstr = (const char *)p;
      e->shstr_size = n;
    }
  }
  return true;
#endif
}

bool hci_elf_open_file(hci_elf_t *e, const char *path, uint64_t *dev, uint64_t *ino) {
  memset(e, 0, sizeof *e);
  /* The path is a module's, or a debug file's named by it: what lies there
   * now may be no regular file.  O_NONBLOCK: a FIFO put in a replaced
   * library's place made open wait for a writer for ever (the check hung);
   * O_NOCTTY: a terminal opened by a process without one would become its
   * controlling terminal.  Neither changes the open of a regular file. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
    close(fd);
    return false;
  }
  size_t size = (size_t)st.st_size;
  void *map = hci_os_mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  if (!hci_elf_open_buffer(e, map, size)) {
    hci_os_munmap(map, size);
    memset(e, 0, sizeof *e);
    return false;
  }
  e->map = map;
  e->map_size = size;
  if (dev) *dev = (uint64_t)st.st_dev;
  if (ino) *ino = (uint64_t)st.st_ino;
  return true;
}

void hci_elf_close(hci_elf_t *e) {
  for (unsigned k = 0; k < e->ninflated; k++)
    if (e->inflated[k].buf) hci_os_munmap(e->inflated[k].buf, e->inflated[k].map_size);
  if (e->map) hci_os_munmap(e->map, e->map_size);
  memset(e, 0, sizeof *e);
}

/* The most a compressed section may decode to (libxul-sized debug info),
 * and for each compressed byte: DEFLATE cannot exceed 1032 (a size above
 * that is refused before anything is mapped).  Not lower: installed debug
 * files have .debug_abbrev sections 83 times their compressed size. */
#define HC_INFLATE_MAX ((size_t)1 << 30)
#define HC_INFLATE_RATIO 1032

/* A compressed section's decoded copy, made once per image and kept (or
 * its failure) in e->inflated.  Two forms: SHF_COMPRESSED, an Elf64_Chdr
 * (zlib only; zstd is left alone) before the zlib stream; and the older
 * GNU .zdebug_* sections (gnu): "ZLIB", the size in 8 big-endian bytes,
 * the stream.  Decoded into an anonymous mapping of exactly that size. */
static bool inflated_contents(const hci_elf_t *ec, unsigned index, const Elf64_Shdr *sh, bool gnu,
                              const uint8_t **data, size_t *size) {
  hci_elf_t *e = (hci_elf_t *)(uintptr_t)ec; /* the cache: see hci_elf_t */
  for (unsigned k = 0; k < e->ninflated; k++) {
    if (e->inflated[k].index != index) continue;
    *data = e->inflated[k].buf;
    *size = e->inflated[k].size;
    return e->inflated[k].buf != NULL;
  }
  const uint8_t *raw;
  size_t raw_size, head = gnu ? 12 : sizeof(Elf64_Chdr);
  if (e->ninflated == sizeof e->inflated / sizeof *e->inflated || !shdr_contents(e, sh, &raw, &raw_size) ||
      raw_size < head)
    return false;
  struct hci_elf_inflated *slot = &e->inflated[e->ninflated++];
  memset(slot, 0, sizeof *slot);
  slot->index = index;
  uint64_t want = 0;
  if (gnu) {
    if (memcmp(raw, "ZLIB", 4) != 0) return false;
    for (int i = 4; i < 12; i++) want = want << 8 | raw[i];
  } else {
    Elf64_Chdr ch;
    memcpy(&ch, raw, sizeof ch);
    if (ch.ch_type != ELFCOMPRESS_ZLIB) return false;
    want = ch.ch_size;
  }
  if (want == 0 || want > HC_INFLATE_MAX || want / HC_INFLATE_RATIO > raw_size - head) return false;
  size_t len = (size_t)want, map_len = (len + 4095) & ~(size_t)4095;
  void *buf = hci_os_mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return false;
  if (!hci_inflate_zlib(raw + head, raw_size - head, buf, len)) {
    hci_os_munmap(buf, map_len);
    return false;
  }
  slot->buf = buf;
  slot->size = len;
  slot->map_size = map_len;
  *data = buf;
  *size = len;
  return true;
}

/* Section i of e named name, or its GNU-compressed form (.zdebug_X for
 * .debug_X) when gnu; peek: whether it is there with contents, a
 * compressed one not decoded (out->data stays NULL). */
static bool find_section(const hci_elf_t *e, const char *name, bool gnu, bool peek, hci_elf_sect_t *out) {
  for (unsigned i = 1; i < e->shnum; i++) {
    Elf64_Shdr sh;
    read_shdr(e, i, &sh);
    if (sh.sh_name >= e->shstr_size) continue;
    const char *have = e->shstr + sh.sh_name;
    if (gnu ? strncmp(have, ".z", 2) != 0 || strcmp(have + 2, name + 1) != 0 : strcmp(have, name) != 0) continue;
    bool packed = gnu || (sh.sh_flags & SHF_COMPRESSED);
    const uint8_t *raw;
    size_t raw_size;
    if (peek) return shdr_contents(e, &sh, &raw, &raw_size);
    if (packed ? !inflated_contents(e, i, &sh, gnu, &out->data, &out->size)
               : !shdr_contents(e, &sh, &out->data, &out->size))
      return false;
    out->addr = sh.sh_addr;
    out->index = i;
    return true;
  }
  return false;
}

static bool section_lookup(const hci_elf_t *e, const char *name, bool peek, hci_elf_sect_t *out) {
  memset(out, 0, sizeof *out);
  if (e->shstr == NULL) return false;
  if (find_section(e, name, false, peek, out)) return true;
  memset(out, 0, sizeof *out);
  return strncmp(name, ".debug_", 7) == 0 && find_section(e, name, true, peek, out);
}

bool hci_elf_section(const hci_elf_t *e, const char *name, hci_elf_sect_t *out) {
  return section_lookup(e, name, false, out);
}

bool hci_elf_section_present(const hci_elf_t *e, const char *name) {
  hci_elf_sect_t s;
  return section_lookup(e, name, true, &s);
}

bool hci_elf_has_type(const hci_elf_t *e, uint32_t sh_type) {
  for (unsigned i = 1; i < e->shnum; i++) {
    Elf64_Shdr sh;
    const uint8_t *p;
    size_t n;
    read_shdr(e, i, &sh);
    if (sh.sh_type == sh_type && shdr_contents(e, &sh, &p, &n) && n > 0) return true;
  }
  return false;
}

/* ---- notes ---- */

static size_t align4(size_t x) { return (x + 3) & ~(size_t)3; }

bool hci_elf_note_build_id(const uint8_t *notes, size_t size, const uint8_t **id, size_t *len) {
  size_t off = 0;
  while (size - off >= 12) {
    uint32_t w[3]; /* namesz, descsz, type */
    memcpy(w, notes + off, sizeof w);
    off += 12;
    size_t name_off = off;
    if (w[0] > size - off) return false;
    off += align4(w[0]);
    if (off > size) return false;
    size_t desc_off = off;
    if (w[1] > size - off) return false;
    off = align4(off + w[1]);
    if (off > size) off = size;
    if (w[2] == NT_GNU_BUILD_ID && w[0] == 4 && memcmp(notes + name_off, "GNU", 4) == 0 && w[1] > 0) {
      *id = notes + desc_off;
      *len = w[1];
      return true;
    }
  }
  return false;
}

bool hci_elf_build_id(const hci_elf_t *e, const uint8_t **id, size_t *len) {
  for (unsigned i = 1; i < e->shnum; i++) {
    Elf64_Shdr sh;
    const uint8_t *p;
    size_t n;
    read_shdr(e, i, &sh);
    if (sh.sh_type == SHT_NOTE && shdr_contents(e, &sh, &p, &n) && hci_elf_note_build_id(p, n, id, len))
      return true;
  }
  /* No section headers (or none with the note): try the PT_NOTE segments. */
  Elf64_Ehdr eh;
  memcpy(&eh, e->data, sizeof eh);
  if (eh.e_phentsize < sizeof(Elf64_Phdr) || !in_bounds(eh.e_phoff, (uint64_t)eh.e_phnum * eh.e_phentsize, e->size))
    return false;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, e->data + eh.e_phoff + (size_t)i * eh.e_phentsize, sizeof ph);
    if (ph.p_type == PT_NOTE && in_bounds(ph.p_offset, ph.p_filesz, e->size) &&
        hci_elf_note_build_id(e->data + ph.p_offset, (size_t)ph.p_filesz, id, len))
      return true;
  }
  return false;
}

bool hci_elf_debuglink(const hci_elf_t *e, const char **name, uint32_t *crc) {
  hci_elf_sect_t s;
  if (!hci_elf_section(e, ".gnu_debuglink", &s)) return false;
  const uint8_t *nul = memchr(s.data, 0, s.size);
  if (nul == NULL || nul == s.data) return false;
  size_t crc_off = align4((size_t)(nul - s.data) + 1);
  if (crc_off > s.size || s.size - crc_off < 4) return false;
  memcpy(crc, s.data + crc_off, 4);
  *name = (const char *)s.data;
  return true;
}

bool hci_elf_dwarf_sections(const hci_elf_t *e, hci_dwarf_sects_t *out) {
  memset(out, 0, sizeof *out);
  hci_elf_sect_t s;
  if (!hci_elf_section(e, ".debug_line", &s) || s.size == 0) return false;
  out->line = s.data;
  out->line_size = s.size;
  static const struct {
    const char *name;
    size_t data_off, size_off;
  } more[] = {
      {".debug_line_str", offsetof(hci_dwarf_sects_t, line_str), offsetof(hci_dwarf_sects_t, line_str_size)},
      {".debug_str", offsetof(hci_dwarf_sects_t, str), offsetof(hci_dwarf_sects_t, str_size)},
      {".debug_info", offsetof(hci_dwarf_sects_t, info), offsetof(hci_dwarf_sects_t, info_size)},
      {".debug_abbrev", offsetof(hci_dwarf_sects_t, abbrev), offsetof(hci_dwarf_sects_t, abbrev_size)},
      {".debug_str_offsets", offsetof(hci_dwarf_sects_t, str_offsets),
       offsetof(hci_dwarf_sects_t, str_offsets_size)},
      {".debug_addr", offsetof(hci_dwarf_sects_t, addr), offsetof(hci_dwarf_sects_t, addr_size)},
      {".debug_ranges", offsetof(hci_dwarf_sects_t, ranges), offsetof(hci_dwarf_sects_t, ranges_size)},
      {".debug_rnglists", offsetof(hci_dwarf_sects_t, rnglists), offsetof(hci_dwarf_sects_t, rnglists_size)},
  };
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
    if (!hci_elf_section(e, more[i].name, &s)) continue;
    memcpy((char *)out + more[i].data_off, &s.data, sizeof s.data);
    memcpy((char *)out + more[i].size_off, &s.size, sizeof s.size);
  }
  return true;
}

uint32_t hci_crc32(uint32_t crc, const void *buf, size_t len) {
  /* A table on the stack: 1 KiB and 2048 steps, nothing next to hashing a
   * whole debug file, and no shared state to initialise. */
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  const uint8_t *p = buf;
  crc = ~crc;
  for (size_t i = 0; i < len; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* ---- symbol tables ---- */

/* Preference among symbols at one address (with sym_before's underscores):
 * sized before unsized, global before weak before local (an exported name
 * reads best in a report). */
static unsigned sym_rank(const Elf64_Sym *s) {
  unsigned r = s->st_size ? 8 : 0;
  unsigned bind = ELF64_ST_BIND(s->st_info);
  r += bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0;
  return r;
}

static unsigned leading_underscores(const char *s) {
  unsigned n = 0;
  while (s[n] == '_') n++;
  return n;
}

/* Whether a comes before b: address ascending, then the preferred name
 * first: sized, then fewer leading underscores (the name the program
 * calls: glibc's weak `strdup` before its global `__strdup`, as valgrind
 * names it), then global, weak, local. */
static bool sym_before(const hci_sym_t *a, const hci_sym_t *b) {
  if (a->addr != b->addr) return a->addr < b->addr;
  if ((a->rank & 8) != (b->rank & 8)) return a->rank > b->rank;
  unsigned ua = leading_underscores(a->name), ub = leading_underscores(b->name);
  if (ua != ub) return ua < ub;
  return a->rank > b->rank;
}

static int cmp_sym(const void *a, const void *b) {
  return sym_before(a, b) ? -1 : sym_before(b, a) ? 1 : 0;
}

static void sort_syms(hci_sym_t *v, size_t n) { hci_sort(v, n, sizeof *v, cmp_sym); }

/* Whether a symbol names code (or sized data-less code labels). */
static bool sym_wanted(const Elf64_Sym *s, size_t strsz) {
  unsigned type = ELF64_ST_TYPE(s->st_info);
  if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE) return false;
  if (s->st_name == 0 || s->st_name >= strsz) return false;
  if (type == STT_FUNC || type == STT_GNU_IFUNC) return true;
  return type == STT_NOTYPE && s->st_size > 0;
}

/* The first section of type want (SHT_SYMTAB or SHT_DYNSYM) with its
 * entries and string table, both inside the image. */
typedef struct {
  const uint8_t *syms, *str;
  size_t count, entsize, str_size;
} symsec_t;

static bool find_symsec(const hci_elf_t *e, uint32_t want, symsec_t *t) {
  Elf64_Shdr sh, strsh;
  size_t syms_size = 0;
  unsigned i;
  for (i = 1; i < e->shnum; i++) {
    read_shdr(e, i, &sh);
    if (sh.sh_type == want && shdr_contents(e, &sh, &t->syms, &syms_size)) break;
  }
  if (i >= e->shnum || sh.sh_entsize < sizeof(Elf64_Sym) || sh.sh_entsize > syms_size) return false;
  if (!read_shdr(e, sh.sh_link, &strsh) || strsh.sh_type != SHT_STRTAB ||
      !shdr_contents(e, &strsh, &t->str, &t->str_size))
    return false;
  t->str_size = strtab_usable(t->str, t->str_size);
  t->entsize = sh.sh_entsize;
  t->count = syms_size / sh.sh_entsize;
  return true;
}

bool hci_elf_symbol(const hci_elf_t *e, const char *name, uint64_t *value) {
  symsec_t t;
  if (!find_symsec(e, SHT_SYMTAB, &t)) return false;
  const uint8_t *str = t.str;
  size_t str_size = t.str_size;
  for (size_t k = 1; k < t.count; k++) {
    Elf64_Sym s;
    memcpy(&s, t.syms + k * t.entsize, sizeof s);
    if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_name == 0 || s.st_name >= str_size) continue;
    if (strcmp((const char *)str + s.st_name, name) != 0) continue;
    *value = s.st_value;
    return true;
  }
  return false;
}

/* The sorted table of ss's wanted symbols; e: the image whose section
 * headers bound a symbol of size 0, or NULL (such symbols left out);
 * names: where the names point (the string table or a copy of it). */
static bool build_table(hci_symtab_t *t, const hci_elf_t *e, const symsec_t *ss, const char *names) {
  const uint8_t *syms = ss->syms;
  size_t str_size = ss->str_size, count = ss->count, entsize = ss->entsize;
  size_t wanted = 0;
  for (size_t k = 1; k < count; k++) {
    Elf64_Sym s;
    memcpy(&s, syms + k * entsize, sizeof s);
    wanted += sym_wanted(&s, str_size);
  }
  if (wanted == 0) return false;
  size_t bytes = wanted * sizeof(hci_sym_t);
  hci_sym_t *v = hci_meta_alloc(bytes);
  if (v == NULL) return false;
  size_t n = 0;
  for (size_t k = 1; k < count && n < wanted; k++) {
    Elf64_Sym s;
    memcpy(&s, syms + k * entsize, sizeof s);
    if (!sym_wanted(&s, str_size)) continue;
    const char *name = names + s.st_name;
    if (name[0] == 0) continue;
    uint64_t end;
    if (s.st_size) {
      end = s.st_value + s.st_size;
      if (end < s.st_value) end = UINT64_MAX;
    } else {
      /* A size-0 function (hand-written assembly) extends at most to the end
       * of its section, and below to the next symbol (clamped after sorting). */
      Elf64_Shdr sec;
      if (!e || !read_shdr(e, s.st_shndx, &sec) || s.st_value < sec.sh_addr || s.st_value - sec.sh_addr >= sec.sh_size)
        continue;
      end = sec.sh_addr + sec.sh_size;
    }
    v[n].addr = s.st_value;
    v[n].end = end;
    v[n].name = name;
    v[n].rank = sym_rank(&s);
    n++;
  }
  sort_syms(v, n);
  /* Keep one symbol per address (the first: the preferred one). */
  size_t out = 0;
  for (size_t k = 0; k < n; k++) {
    if (out > 0 && v[out - 1].addr == v[k].addr) {
      if (!(v[out - 1].rank & 8) && (v[k].rank & 8)) v[out - 1].end = v[k].end;
      continue;
    }
    v[out++] = v[k];
  }
  for (size_t k = 0; k + 1 < out; k++)
    if (!(v[k].rank & 8) && v[k].end > v[k + 1].addr) v[k].end = v[k + 1].addr;
  if (out == 0) {
    hci_meta_free(v, bytes);
    return false;
  }
  t->syms = v;
  t->n = out;
  t->alloc_bytes = bytes;
  return true;
}

bool hci_symtab_build(hci_symtab_t *t, const hci_elf_t *e, bool dynamic) {
  memset(t, 0, sizeof *t);
  symsec_t ss;
  if (!find_symsec(e, dynamic ? SHT_DYNSYM : SHT_SYMTAB, &ss)) return false;
  return build_table(t, e, &ss, (const char *)ss.str);
}

/* ---- a loaded image's dynamic symbols ---- */

static bool in_segs(const hci_range_t *seg, unsigned nseg, uintptr_t a, size_t n) {
  for (unsigned i = 0; i < nseg; i++)
    if (a >= seg[i].lo && a < seg[i].hi && n <= seg[i].hi - a) return true;
  return false;
}

/* A d_ptr of the loaded dynamic section as an address inside the image:
 * glibc relocates them in place where .dynamic is writable, the vdso's
 * stay as linked.  0: neither lies inside. */
static uintptr_t dyn_addr(uint64_t v, uintptr_t base, const hci_range_t *seg, unsigned nseg) {
  if (v && in_segs(seg, nseg, (uintptr_t)v, 1)) return (uintptr_t)v;
  if (v && in_segs(seg, nseg, base + (uintptr_t)v, 1)) return base + (uintptr_t)v;
  return 0;
}

static uint32_t load32(uintptr_t a) {
  uint32_t v;
  memcpy(&v, (const void *)a, sizeof v);
  return v;
}

/* How many symbols .dynsym has: DT_HASH's nchain, or one past the last
 * index DT_GNU_HASH's chains reach; 0 when neither can be read. */
static size_t dynsym_count(uintptr_t hash, uintptr_t gnu, const hci_range_t *seg, unsigned nseg) {
  if (hash && in_segs(seg, nseg, hash, 8)) return load32(hash + 4);
  if (!gnu || !in_segs(seg, nseg, gnu, 16)) return 0;
  uint32_t nb = load32(gnu), off = load32(gnu + 4), bloom = load32(gnu + 8);
  if (nb == 0 || nb > (1u << 24) || bloom > (1u << 24)) return 0;
  uintptr_t buckets = gnu + 16 + (uintptr_t)bloom * 8, chain = buckets + (uintptr_t)nb * 4;
  if (!in_segs(seg, nseg, buckets, (size_t)nb * 4)) return 0;
  uint32_t last = 0;
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t b = load32(buckets + (uintptr_t)k * 4);
    if (b > last) last = b;
  }
  if (last < off) return off;
  for (size_t steps = 0; steps < (1u << 24); steps++, last++) { /* the last bucket's chain ends with bit 0 set */
    uintptr_t c = chain + (uintptr_t)(last - off) * 4;
    if (!in_segs(seg, nseg, c, 4)) return 0;
    if (load32(c) & 1) return (size_t)last + 1;
  }
  return 0;
}

bool hci_symtab_build_loaded(hci_symtab_t *t, uintptr_t base, uintptr_t dyn, const hci_range_t *seg, unsigned nseg) {
  memset(t, 0, sizeof *t);
  uint64_t symtab = 0, strtab = 0, strsz = 0, syment = 0, hash = 0, gnu = 0;
  for (uintptr_t d = dyn; d && in_segs(seg, nseg, d, sizeof(Elf64_Dyn)); d += sizeof(Elf64_Dyn)) {
    Elf64_Dyn e;
    memcpy(&e, (const void *)d, sizeof e);
    if (e.d_tag == DT_NULL) break;
    switch (e.d_tag) {
      case DT_SYMTAB: symtab = e.d_un.d_ptr; break;
      case DT_STRTAB: strtab = e.d_un.d_ptr; break;
      case DT_STRSZ: strsz = e.d_un.d_val; break;
      case DT_SYMENT: syment = e.d_un.d_val; break;
      case DT_HASH: hash = e.d_un.d_ptr; break;
      case DT_GNU_HASH: gnu = e.d_un.d_ptr; break;
      default: break;
    }
  }
  uintptr_t sy = dyn_addr(symtab, base, seg, nseg), st = dyn_addr(strtab, base, seg, nseg);
  if (!sy || !st || syment < sizeof(Elf64_Sym) || syment > 256 || strsz == 0 || strsz > ((size_t)64 << 20) ||
      !in_segs(seg, nseg, st, (size_t)strsz))
    return false;
  size_t count = dynsym_count(dyn_addr(hash, base, seg, nseg), dyn_addr(gnu, base, seg, nseg), seg, nseg);
  if (count < 2 || count > ((size_t)1 << 24) || !in_segs(seg, nseg, sy, count * (size_t)syment)) return false;
  symsec_t ss = {.syms = (const uint8_t *)sy, .str = (const uint8_t *)st, .count = count, .entsize = (size_t)syment,
                 .str_size = strtab_usable((const uint8_t *)st, (size_t)strsz)};
  char *copy = ss.str_size ? hci_meta_alloc(ss.str_size) : NULL;
  if (copy == NULL) return false;
  memcpy(copy, ss.str, ss.str_size);
  if (!build_table(t, NULL, &ss, copy)) {
    hci_meta_free(copy, ss.str_size);
    return false;
  }
  t->strs = copy;
  t->strs_bytes = ss.str_size;
  return true;
}

const hci_sym_t *hci_symtab_find(const hci_symtab_t *t, uint64_t addr) {
  /* The nearest preceding symbol normally contains addr; a few steps back
   * find an enclosing symbol when a small one sits inside a big one. */
  return hci_range_find(t->syms, t->n, sizeof(hci_sym_t), offsetof(hci_sym_t, addr), offsetof(hci_sym_t, end), 16,
                        addr);
}

void hci_symtab_free(hci_symtab_t *t) {
  if (t->syms) hci_meta_free(t->syms, t->alloc_bytes);
  if (t->strs) hci_meta_free(t->strs, t->strs_bytes);
  memset(t, 0, sizeof *t);
}

/* ---- fuzzing and test entry point ---- */

int hci_elf_probe_buffer(const void *data, size_t size) {
  hci_elf_t e;
  if (!hci_elf_open_buffer(&e, data, size)) return -1;
  int found = 0;
  const uint8_t *id;
  size_t idlen;
  if (hci_elf_build_id(&e, &id, &idlen)) found++;
  const char *link;
  uint32_t crc = 0;
  if (hci_elf_debuglink(&e, &link, &crc)) found += (int)(strlen(link) > 0);
  if (hci_crc32(0, data, size < 4096 ? size : 4096) == crc) found++;
  found += hci_elf_has_type(&e, SHT_SYMTAB) + hci_elf_has_type(&e, SHT_DYNSYM);
  for (int dyn = 0; dyn < 2; dyn++) {
    hci_symtab_t t;
    if (!hci_symtab_build(&t, &e, dyn)) continue;
    /* Look up every symbol's start, middle and just past its end. */
    for (size_t k = 0; k < t.n && k < 4096; k++) {
      const hci_sym_t *s = hci_symtab_find(&t, t.syms[k].addr + (t.syms[k].end - t.syms[k].addr) / 2);
      if (s && s->name[0]) found++;
      hci_symtab_find(&t, t.syms[k].end);
    }
    hci_symtab_find(&t, 0);
    hci_symtab_find(&t, UINT64_MAX);
    hci_symtab_free(&t);
  }
  hci_dwarf_sects_t ds;
  hci_elf_dwarf_sections(&e, &ds);
  hci_line_index_t idx;
  if (ds.line && hci_dwarf_index_build(&idx, &ds)) {
    char file[256];
    int line;
    for (size_t k = 0; k < idx.n && k < 256; k++) {
      const hci_line_seq_t *q = &idx.seqs[k];
      if (hci_dwarf_lookup(&idx, &ds, q->lo, file, sizeof file, &line)) found++;
      if (hci_dwarf_lookup(&idx, &ds, q->lo + (q->hi - q->lo) / 2, file, sizeof file, &line)) found++;
      size_t unit;
      uint64_t info;
      hci_inline_t inl[8];
      if (k < 32 && hci_dwarf_unit_at(&idx, q->lo + (q->hi - q->lo) / 2, &unit, &info)) {
        int ni = hci_dwarf_inlined(&ds, info, q->lo + (q->hi - q->lo) / 2, inl, 8);
        for (int i = 0; i < ni; i++)
          if (hci_dwarf_file(&idx, &ds, unit, inl[i].call_file, file, sizeof file)) found++;
      }
    }
    hci_dwarf_lookup(&idx, &ds, 0, file, sizeof file, &line);
    found += (int)idx.ncus;
    hci_dwarf_index_free(&idx);
  }
  hci_elf_close(&e);
  return found;
}
