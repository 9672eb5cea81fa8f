/* hc_symbolize.h - the in-process symbolizer (leak reports, heap profiles).
 *
 * Turns a return address into "function file:line (module+0xoffset)"
 * without any external tool and without the program's malloc for its own
 * tables (everything lives in the metadata arena), so it can run from the
 * allocator's exit-time reporting.  These files implement it:
 *   elf_reader.c  ELF64 images (mapped files or memory): sections, notes,
 *                 symbol tables; every offset is checked against the size.
 *   dwarf_line.c  .debug_line (DWARF 2-5) index and address -> file:line.
 *   dwarf_inline.c .debug_info inlined-call chains (dwarf_cursor.h: the
 *                 bounded reads both DWARF readers share).
 *   symbolize.c   modules from dl_iterate_phdr, separate debug files,
 *                 demangling, the per-pc cache and the public calls below.
 *   demangle.c    the Itanium C++ demangler (hc_demangle.h): no malloc.
 *
 * Rules for callers:
 *  - never call it in a signal handler, inside malloc, or while the world is
 *    stopped: it takes the loader lock (dl_iterate_phdr), opens files and,
 *    for a name its own demangler refuses, may call an already-loaded
 *    __cxa_demangle, which uses malloc;
 *  - LOCK: one symbolizer lock serialises every call.  It sits after the
 *    checker and profiler locks and before the loader lock in the lock order
 *    (runtime/init.c, docs/design.md).
 *  - returned strings stay valid until hci_symbolizer_reset().
 */
#ifndef HC_SYMBOLIZE_H
#define HC_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hc_base.h"

/* ======================= public interface (symbolize.c) ======================= */
typedef struct hci_frame {
  uintptr_t pc;               /* the address asked for (a return address) */
  const char *module;         /* path of the loaded module, never NULL ("?" if unknown) */
  uintptr_t module_offset;    /* pc - module load base (file-relative, what addr2line wants) */
  const char *function;       /* demangled name or NULL */
  uintptr_t function_offset;  /* pc - symbol start */
  const char *file;           /* source file from .debug_line or NULL */
  int line;                   /* 0 if unknown */
  bool unloaded;              /* the module was dlclose'd since */
  const char *build_id;       /* of an unloaded module (hex), or NULL */
  /* Inlined code: this frame is the inlined function at its own line, and
   * caller the function it was inlined into, at the call's line (same pc;
   * a chain ending at the real function, whose caller is NULL). */
  bool inlined;
  const struct hci_frame *caller;
  /* A frame of the library's own that reports leave out: the checker's
   * start_main, between main and libc's __libc_start_call_main, in every
   * stack that passes through main (hci_symbolize_hide). */
  bool hidden;
} hci_frame_t;

/* pc is treated as a return address: function and line are those of the
 * call instruction, i.e. of pc - 1 (so to name a function from its entry
 * address, pass entry + 1).  Always fills *out; returns true when a function
 * name was found.  Strings stay valid until hci_symbolizer_reset(). */
bool hci_symbolize(uintptr_t pc, hci_frame_t *out);
/* "func file:line (module+0xoff)", parts omitted when unknown, module+offset
 * always present, " [inlined]" after a frame that was inlined.  snprintf semantics: returns the length it wanted. */
int hci_format_frame(char *buf, size_t size, const hci_frame_t *f);
/* The address ranges [lo, hi) of the functions named in names (NULL-ended)
 * in the symbol table of the module containing in_module; returns how many
 * were found (at most max).  Same locking rules as hci_symbolize. */
int hci_symbolize_func_ranges(uintptr_t in_module, const char *const *names, uintptr_t *lo, uintptr_t *hi, int max);
/* [lo, hi): where section `name` (".eh_frame") of the module containing
 * in_module is loaded, from its file's section headers; false when the file
 * has no such section or it lies outside the module's segments. */
bool hci_symbolize_section(uintptr_t in_module, const char *name, uintptr_t *lo, uintptr_t *hi);
/* Where the symbol `name` (data or code) of the module containing in_module
 * is loaded, from its file's .symtab; false when it has none or the address
 * lies outside the module. */
bool hci_symbolize_symbol(uintptr_t in_module, const char *name, uintptr_t *addr);
/* Frames in the function that starts at entry are marked hidden from now on
 * (one function: the checker's start_main).  Found by the symbol table, so a
 * library stripped of .symtab shows the frame as before. */
void hci_symbolize_hide(uintptr_t entry);
/* Drops caches and unmaps files (e.g. after dlclose). */
void hci_symbolizer_reset(void);
/* Saves the executable's path (at start-up, from the checker's constructor)
 * for when /proc/self/exe is gone (pthread_exit from main). */
void hci_symbolizer_note_exe(void);
/* Takes note of the loaded modules (called just before dlclose), so those
 * it unloads stay known to the symbolizer. */
void hci_symbolizer_before_dlclose(void);
/* Before chroot or a Landlock domain: maps every module's file while it is
 * in reach (the reports after it name functions and lines, not only
 * modules and offsets). */
void hci_symbolizer_premap(void);
/* The symbolizer's lock, taken by a check that keeps the world stopped
 * while it reports (no stopped thread may hold it). */
void hci_symbolizer_lock(void);
void hci_symbolizer_unlock(void);
/* Fork (the runtime's handler, in the lock order): the symbolizer lock. */
void hci_symbolizer_fork_locks(hci_lock_fn *each);

/* ======================= internal: elf_reader.c ======================= */
/* A validated ELF64 little-endian image.  Headers are read with memcpy, so
 * the image may be unaligned (fuzzer buffers, odd e_shoff). */
typedef struct hci_elf {
  const uint8_t *data;        /* whole image */
  size_t size;
  size_t shoff;               /* section header table, checked to lie inside the image */
  unsigned shnum;             /* 0 when the image has no usable section headers */
  unsigned shentsize;
  const char *shstr;          /* section-name string table (NULL if none) */
  size_t shstr_size;
  uint16_t type;              /* e_type */
  void *map;                  /* mmap'ed file (NULL for a buffer) */
  size_t map_size;
  /* SHF_COMPRESSED sections decoded on first use (hci_elf_section), kept
   * until hci_elf_close: the one part that changes after opening, through
   * a const image (a failed one is kept too, with buf NULL: not retried). */
  struct hci_elf_inflated {
    unsigned index;
    uint8_t *buf;             /* anonymous mapping of map_size bytes */
    size_t size, map_size;
  } inflated[12];
  unsigned ninflated;
} hci_elf_t;

typedef struct hci_elf_sect {
  const uint8_t *data;        /* inside the image; NULL when absent */
  size_t size;
  uint64_t addr;              /* sh_addr */
  unsigned index;
} hci_elf_sect_t;

/* Validates the ELF header and section table of an in-memory image. */
bool hci_elf_open_buffer(hci_elf_t *e, const void *data, size_t size);
/* open + fstat + mmap(PROT_READ); then hci_elf_open_buffer.  Fills *dev and
 * *ino (may be NULL) to recognise the same file reached by two names. */
bool hci_elf_open_file(hci_elf_t *e, const char *path, uint64_t *dev, uint64_t *ino);
void hci_elf_close(hci_elf_t *e);
/* Section by name with contents (not NOBITS): inside the image, or for an
 * SHF_COMPRESSED section (zlib; not zstd) its decoded copy, made on the
 * first call and kept until hci_elf_close. */
bool hci_elf_section(const hci_elf_t *e, const char *name, hci_elf_sect_t *out);
/* Whether hci_elf_section would look at such a section (with contents),
 * without decoding a compressed one. */
bool hci_elf_section_present(const hci_elf_t *e, const char *name);
/* True when a section of that type with contents exists (SHT_SYMTAB...). */
bool hci_elf_has_type(const hci_elf_t *e, uint32_t sh_type);
/* The value of the defined .symtab symbol called name, of any type (data
 * too: hci_symtab_build keeps functions only); false when there is none. */
bool hci_elf_symbol(const hci_elf_t *e, const char *name, uint64_t *value);
/* NT_GNU_BUILD_ID from the .note.gnu.build-id section (or any SHT_NOTE). */
bool hci_elf_build_id(const hci_elf_t *e, const uint8_t **id, size_t *len);
/* Same, from a note area (used on the loaded image's PT_NOTE segments). */
bool hci_elf_note_build_id(const uint8_t *notes, size_t size, const uint8_t **id, size_t *len);
/* .gnu_debuglink: file name (NUL-terminated inside the section) and CRC. */
bool hci_elf_debuglink(const hci_elf_t *e, const char **name, uint32_t *crc);
struct hci_dwarf_sects;
/* Fills *out with the image's .debug_line and the sections it refers to;
 * false (and *out zeroed) when there is no usable .debug_line. */
bool hci_elf_dwarf_sections(const hci_elf_t *e, struct hci_dwarf_sects *out);
/* inflate.c: decodes a zlib stream into exactly out_len bytes at out;
 * false for anything malformed, short, long or failing its Adler-32. */
bool hci_inflate_zlib(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len);
/* CRC-32 (IEEE, as zlib and .gnu_debuglink use it). */
uint32_t hci_crc32(uint32_t crc, const void *buf, size_t len);

/* Sorted function-symbol table of one image. */
typedef struct hci_sym {
  uint64_t addr;              /* st_value */
  uint64_t end;               /* addr + size, or the end of its section for size 0 */
  const char *name;           /* points into the image's string table */
  unsigned rank;              /* preference among aliases; 8 = had a size */
} hci_sym_t;
typedef struct hci_symtab {
  hci_sym_t *syms;            /* hci_meta_alloc'ed, sorted by addr */
  size_t n;
  size_t alloc_bytes;         /* for hci_meta_free */
  char *strs;                 /* the names' copy (a loaded image's table), or NULL */
  size_t strs_bytes;
} hci_symtab_t;
/* A readable range of a loaded image (a PT_LOAD segment). */
typedef struct hci_range {
  uintptr_t lo, hi;
} hci_range_t;
/* Builds the table from SHT_SYMTAB (dynamic = false) or SHT_DYNSYM.
 * Keeps defined STT_FUNC, STT_GNU_IFUNC and sized STT_NOTYPE symbols.
 * Returns false when that table is absent, empty or unusable. */
bool hci_symtab_build(hci_symtab_t *t, const hci_elf_t *e, bool dynamic);
/* The same from a loaded image's dynamic section (dyn: its PT_DYNAMIC in
 * memory, base: its load bias), for a module whose file cannot be opened
 * (no descriptor left, out of view): DT_SYMTAB and DT_STRTAB, counted by
 * DT_HASH or DT_GNU_HASH, every read inside seg[0..nseg).  The names are
 * copied (the image goes with dlclose); symbols of size 0 are left out (no
 * section headers to bound them).  Needs no file and no descriptor. */
bool hci_symtab_build_loaded(hci_symtab_t *t, uintptr_t base, uintptr_t dyn, const hci_range_t *seg, unsigned nseg);
/* The symbol containing addr, or NULL. */
const hci_sym_t *hci_symtab_find(const hci_symtab_t *t, uint64_t addr);
void hci_symtab_free(hci_symtab_t *t);

/* Fuzzing/test entry point: parses an ELF image from memory the way the
 * symbolizer does (sections, notes, both symbol tables with lookups,
 * .debug_line index with lookups).  Never crashes on malformed input.
 * Returns -1 when the image is rejected, else a count of things found. */
int hci_elf_probe_buffer(const void *data, size_t size);

/* ======================= internal: dwarf_line.c ======================= */
typedef struct hci_dwarf_sects {
  const uint8_t *line;        /* .debug_line */
  size_t line_size;
  const uint8_t *line_str;    /* .debug_line_str (DWARF 5), may be NULL */
  size_t line_str_size;
  const uint8_t *str;         /* .debug_str, may be NULL */
  size_t str_size;
  /* Only for the compilation directory (DW_AT_comp_dir of each unit), which
   * DWARF 2-4 line tables leave implicit; all may be NULL. */
  const uint8_t *info;        /* .debug_info */
  size_t info_size;
  const uint8_t *abbrev;      /* .debug_abbrev */
  size_t abbrev_size;
  const uint8_t *str_offsets; /* .debug_str_offsets (DWARF 5 strx forms) */
  size_t str_offsets_size;
  /* For inlined frames (dwarf_inline.c); all may be NULL. */
  const uint8_t *addr;        /* .debug_addr (DWARF 5 addrx forms) */
  size_t addr_size;
  const uint8_t *ranges;      /* .debug_ranges (DWARF 2-4) */
  size_t ranges_size;
  const uint8_t *rnglists;    /* .debug_rnglists (DWARF 5) */
  size_t rnglists_size;
} hci_dwarf_sects_t;

/* One sequence of a line-number program: the address range it covers and
 * where to re-run it from. */
typedef struct hci_line_seq {
  uint64_t lo, hi;            /* [lo, hi) addresses of its rows */
  size_t unit;                /* offset of its unit header in .debug_line */
  size_t start;               /* offset of its first opcode */
} hci_line_seq_t;

/* A line-table unit's compilation directory, from .debug_info. */
typedef struct hci_line_cu {
  uint64_t line_off;          /* DW_AT_stmt_list: offset of the unit in .debug_line */
  const char *comp_dir;       /* inside a debug section; may be NULL */
  uint64_t info_off;          /* the compilation unit's offset in .debug_info */
} hci_line_cu_t;

typedef struct hci_line_index {
  hci_line_seq_t *seqs;       /* hci_meta_alloc'ed, sorted by lo */
  size_t n;
  size_t alloc_bytes;
  hci_line_cu_t *cus;         /* hci_meta_alloc'ed, sorted by line_off; may be NULL */
  size_t ncus;
  size_t cus_bytes;
} hci_line_index_t;

/* Runs every line program once and records its sequences.  Returns false
 * when nothing usable was found (the index is then empty). */
bool hci_dwarf_index_build(hci_line_index_t *idx, const hci_dwarf_sects_t *s);
/* The line-table unit holding addr and its compilation unit in .debug_info. */
bool hci_dwarf_unit_at(const hci_line_index_t *idx, uint64_t addr, size_t *line_unit, uint64_t *info_off);
/* The name of file `index` of the line-table unit at line_unit. */
bool hci_dwarf_file(const hci_line_index_t *idx, const hci_dwarf_sects_t *s, size_t line_unit, uint64_t index,
                    char *out, size_t size);

/* ======================= internal: dwarf_inline.c ======================= */
typedef struct hci_inline {
  const char *function;       /* the inlined function (linkage or plain name), may be NULL */
  uint64_t call_file;         /* where it was inlined: file index in the unit's line table */
  uint64_t call_line;
} hci_inline_t;
/* The inlined calls whose ranges hold addr in the compilation unit at
 * info_off, outermost first; how many were written (<= max). */
int hci_dwarf_inlined(const hci_dwarf_sects_t *s, uint64_t info_off, uint64_t addr, hci_inline_t *out, int max);
/* File and line of the row covering addr.  The file name is joined with its
 * directory when relative and written to file (truncated to file_size).
 * Returns false when addr is not covered; *line may be 0 with a file. */
bool hci_dwarf_lookup(const hci_line_index_t *idx, const hci_dwarf_sects_t *s, uint64_t addr,
                      char *file, size_t file_size, int *line);
void hci_dwarf_index_free(hci_line_index_t *idx);

/* ======================= internal: sym_path.c ======================= */
/* Lexically removes "." and "dir/.." from an absolute path, in place. */
void hci_sym_normalize_path(char *p);

/* ======================= frames_text.c ======================= */
/* The frames of depot stack id as report lines ("    #K 0x<pc> frame\n"),
 * at most max, each handed to emit ("    (stack unknown)\n" when the depot
 * has none).  Returns the stack's depth.  Symbolizes: world running only. */
int hci_stack_lines(uint32_t id, int max, void (*emit)(void *ctx, const char *line), void *ctx);
/* The same, numbered from #first (a report that printed frames before). */
int hci_stack_lines_at(uint32_t id, int first, int max, void (*emit)(void *ctx, const char *line), void *ctx);

/* ======================= frames_json.c ======================= */
/* The stack as a JSON array of frames {address, module, offset, function,
 * function_offset, file, line} (docs/report-formats.md). */
struct hci_out;
void hci_json_frames(struct hci_out *o, uint32_t stack_id);

/* ======================= flamegraph.c: named stacks as graphs ======================= */
typedef struct hci_fg_item {
  uint32_t stack_id;
  uint64_t value;            /* bytes */
  uint64_t count;            /* objects */
} hci_fg_item_t;
enum { HCI_FG_LEAKS = 0, HCI_FG_PROFILE = 1 }; /* palettes */
/* Self-contained SVG flame graph / folded stacks of the items; 0 or -1. */
int hci_fg_write_svg(int fd, const hci_fg_item_t *v, size_t n, const char *title, const char *unit, int palette);
int hci_fg_write_folded(int fd, const hci_fg_item_t *v, size_t n);

#endif
