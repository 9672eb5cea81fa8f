/* symbolize.c - return address -> function, file:line, module+offset.
 *
 * Purpose: the symbolizer's front end (interface in hc_symbolize.h).
 *  - Modules come from dl_iterate_phdr: the main executable (dlpi_name ""
 *    -> /proc/self/exe), shared libraries, dlopen'ed modules and the vdso
 *    (no file: its in-memory image is read).  The list is rebuilt when the
 *    loader's dlpi_adds/dlpi_subs counters change, and just before every
 *    dlclose (dlclose_hook.c), so a module unloaded before the report is
 *    still known: its frames print "(name+0xoff, unloaded, build-id ...)",
 *    symbolized from its file when the build-id still matches.
 *  - A module's file is mapped and parsed lazily, on the first lookup that
 *    lands in it.  Symbols come from .symtab, else from a separate debug
 *    file (build-id, then .gnu_debuglink with its CRC), else .dynsym; lines
 *    from .debug_line of the file or of its debug file.
 *  - C++ names go through our own demangler (demangle.c); a name it
 *    refuses goes to __cxa_demangle only if the process already has it
 *    (dlsym, never a dlopen: loading libstdc++ would run its constructors
 *    in a program that did not ask for them).
 *  - Results are cached per pc; file and demangled names are interned.
 *
 * Invariants:
 *  - every table, string and cache lives in the metadata arena
 *    (hci_meta_alloc), never in the program's heap; only __cxa_demangle
 *    (for names our demangler refuses) mallocs, and its result is copied
 *    and freed at once;
 *  - strings handed out (module, function, file) stay valid until
 *    hci_symbolizer_reset(): modules that disappear (dlclose) are retired,
 *    not unmapped, until then;
 *  - a file whose build-id differs from the loaded image's is not used.
 *
 * Locks: sym_lock serialises everything here.  It is taken after the
 * checker lock and before the loader lock (dl_iterate_phdr), the allocator's
 * locks (demangler malloc) and the metadata arena lock.  Never call this in a
 * signal handler, inside malloc or while the world is stopped.  fork takes
 * the lock (runtime/init.c's handler), so the child starts with it free.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "hc_demangle.h"
#include "hc_internal.h"
#include "hc_symbolize.h"

#define MAX_SEGS 8
#define MAX_BUILD_ID 64
#define PATH_BUF 4096

typedef struct module {
  struct module *next;
  const char *name;               /* printed path (arena) */
  uintptr_t base;                 /* dlpi_addr: load bias */
  uintptr_t lo, hi;               /* span of all PT_LOAD segments */
  unsigned nseg;                  /* segments kept in seg[] (more: lo/hi only) */
  hci_range_t seg[MAX_SEGS];
  uintptr_t dyn;                  /* its PT_DYNAMIC in memory, or 0 */
  bool is_main, is_vdso;
  bool seen;                      /* found by the current rescan */
  bool loaded;                    /* the file was parsed (successfully or not) */
  uint8_t build_id[MAX_BUILD_ID]; /* of the loaded image (PT_NOTE), if any */
  size_t build_id_len;
  hci_elf_t elf;                  /* the module's file, or the vdso's memory */
  uint64_t premapped_dev, premapped_ino; /* elf mapped before a chroot, not parsed yet */
  hci_elf_t dbg;                  /* separate debug file, if found */
  hci_symtab_t syms;
  hci_dwarf_sects_t dw;
  hci_line_index_t lines;
} module_t;

/* Arena for strings and cached frames: chunks from the metadata arena. */
typedef struct chunk {
  struct chunk *next;
  size_t size, used;              /* bytes of data[] */
  char data[];
} chunk_t;
#define CHUNK_BYTES ((size_t)64 << 10)

/* Open-addressing map from a non-zero key to a pointer. */
typedef struct ptrmap {
  uintptr_t *keys;
  void **vals;
  size_t cap, n;                  /* cap: power of two or 0 */
} ptrmap_t;

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static struct {
  hci_lock_t lock;
  module_t *modules;              /* live modules */
  module_t *retired;              /* unloaded since the last reset; still mapped */
  unsigned long long adds, subs;  /* loader counters at the last scan */
  bool scanned;
  chunk_t *chunks;
  ptrmap_t pcs;                   /* pc -> hci_frame_t* */
  ptrmap_t demangled;             /* mangled name pointer -> demangled string */
  ptrmap_t strings;               /* string hash -> chain of interned strings */
  demangle_fn demangle;           /* __cxa_demangle if the process has it */
  bool demangle_looked_up;
  struct dm_area *dm;             /* our demangler's work area and output */
  _Atomic uintptr_t hide;         /* hci_symbolize_hide's entry, or 0 */
} S = {.lock = HCI_LOCK_INIT(HC_RANK_SYMBOLIZER)};
HC_PRIVATE_STATE(S);

/* ---- arena ---- */

static void *arena_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (S.chunks == NULL || S.chunks->size - S.chunks->used < n) {
    size_t size = n > CHUNK_BYTES - sizeof(chunk_t) ? n : CHUNK_BYTES - sizeof(chunk_t);
    chunk_t *c = hci_meta_alloc(sizeof(chunk_t) + size);
    if (c == NULL) return NULL;
    c->size = size;
    c->used = 0;
    /* A big block gets its own chunk behind the current one, so the
     * current one's free space stays in use. */
    if (S.chunks && n > CHUNK_BYTES / 4) {
      c->next = S.chunks->next;
      S.chunks->next = c;
    } else {
      c->next = S.chunks;
      S.chunks = c;
    }
    c->used = n;
    return c->data;
  }
  void *p = S.chunks->data + S.chunks->used;
  S.chunks->used += n;
  return p;
}

static const char *arena_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = arena_alloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

static void arena_free_all(void) {
  while (S.chunks) {
    chunk_t *c = S.chunks;
    S.chunks = c->next;
    hci_meta_free(c, sizeof(chunk_t) + c->size);
  }
}

/* ---- pointer map ---- */

static size_t hash_key(uintptr_t k) {
  uint64_t x = (uint64_t)k * 0x9e3779b97f4a7c15ull;
  return (size_t)(x ^ (x >> 29));
}

static void *map_get(const ptrmap_t *m, uintptr_t key) {
  if (m->cap == 0) return NULL;
  for (size_t i = hash_key(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return m->vals[i];
    if (m->keys[i] == 0) return NULL;
  }
}

static void map_free(ptrmap_t *m) {
  if (m->cap) {
    hci_meta_free(m->keys, m->cap * sizeof *m->keys);
    hci_meta_free(m->vals, m->cap * sizeof *m->vals);
  }
  memset(m, 0, sizeof *m);
}

/* Inserts or replaces; a full or unallocatable map just forgets (a cache). */
static void map_put(ptrmap_t *m, uintptr_t key, void *val) {
  if (key == 0) return;
  if (2 * (m->n + 1) > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    ptrmap_t nm = {hci_meta_alloc(ncap * sizeof(uintptr_t)), hci_meta_alloc(ncap * sizeof(void *)), ncap, 0};
    if (nm.keys == NULL || nm.vals == NULL) {
      if (nm.keys) hci_meta_free(nm.keys, ncap * sizeof(uintptr_t));
      if (nm.vals) hci_meta_free(nm.vals, ncap * sizeof(void *));
      if (m->n + 1 >= m->cap) return;
    } else {
      for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) map_put(&nm, m->keys[i], m->vals[i]);
      map_free(m);
      *m = nm;
    }
  }
  size_t i = hash_key(key) & (m->cap - 1);
  while (m->keys[i] != 0 && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  if (m->keys[i] == 0) m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
}

/* ---- interned strings ---- */

/* A chain node in front of each interned string (equal hashes chain). */
typedef struct istr {
  struct istr *next;
  char s[];
} istr_t;

static const char *intern(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = s; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  uintptr_t key = (uintptr_t)h | 1;
  istr_t *head = map_get(&S.strings, key);
  for (istr_t *e = head; e; e = e->next)
    if (strcmp(e->s, s) == 0) return e->s;
  size_t n = strlen(s) + 1;
  istr_t *e = arena_alloc(sizeof(istr_t) + n);
  if (e == NULL) return NULL;
  memcpy(e->s, s, n);
  e->next = head;
  map_put(&S.strings, key, e);
  return e->s;
}

/* ---- module list ---- */

static bool same_module(const module_t *m, const char *name, uintptr_t base, uintptr_t lo) {
  return m->base == base && m->lo == lo && strcmp(m->name, name) == 0;
}

/* Reads the module's build-id from its loaded PT_NOTE segments, when they
 * lie inside one of its PT_LOAD segments (the span between two segments may
 * hold an unmapped or PROT_NONE gap; a corrupted PT_NOTE may point there). */
static void read_mem_build_id(module_t *m, const struct dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    bool inside = false;
    for (unsigned k = 0; k < m->nseg && !inside; k++)
      inside = a >= m->seg[k].lo && a < m->seg[k].hi && ph->p_memsz <= m->seg[k].hi - a;
    if (!inside) continue;
    const uint8_t *id;
    size_t len;
    if (hci_elf_note_build_id((const uint8_t *)a, (size_t)ph->p_memsz, &id, &len) && len <= MAX_BUILD_ID) {
      memcpy(m->build_id, id, len);
      m->build_id_len = len;
      return;
    }
  }
}

/* The executable's path saved at start (hci_symbolizer_note_exe), for when
 * /proc/self/exe is gone: after pthread_exit from main the thread group
 * leader is a zombie and its /proc/self/exe link cannot be read. */
static char saved_exe[PATH_BUF];

void hci_symbolizer_note_exe(void) {
  ssize_t n = readlink("/proc/self/exe", saved_exe, sizeof saved_exe - 1);
  saved_exe[n > 0 ? n : 0] = 0;
}

/* The link to the running executable that works now: /proc/self/exe, or
 * /proc/thread-self/exe when the main thread has exited. */
static const char *exe_link(void) {
  char tmp[8];
  if (readlink("/proc/self/exe", tmp, sizeof tmp) > 0) return "/proc/self/exe";
  if (readlink("/proc/thread-self/exe", tmp, sizeof tmp) > 0) return "/proc/thread-self/exe";
  return NULL;
}

/* The executable's path, for printing. */
static const char *exe_path(char *buf, size_t size) {
  const char *link = exe_link();
  ssize_t n = link ? readlink(link, buf, size - 1) : -1;
  if (n > 0) {
    buf[n] = 0;
    return buf;
  }
  return saved_exe[0] ? saved_exe : "/proc/self/exe";
}

/* dl_iterate_phdr callback: matches each loaded object with a known module
 * or creates one.  Runs under the loader lock: no file I/O here. */
static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  module_t **fresh = arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || ph->p_memsz == 0) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (lo >= hi) return 0;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  char exe[PATH_BUF];
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  bool is_vdso = vdso != 0 && vdso >= lo && vdso < hi;
  bool is_main = !is_vdso && name[0] == 0;
  if (is_vdso) {
    name = "[vdso]";
  } else if (is_main) {
    name = exe_path(exe, sizeof exe);
  }
  for (module_t **pp = &S.modules; *pp; pp = &(*pp)->next) {
    module_t *m = *pp;
    if (same_module(m, name, info->dlpi_addr, lo)) {
      *pp = m->next; /* move to the fresh list */
      m->next = *fresh;
      *fresh = m;
      m->seen = true;
      return 0;
    }
  }
  module_t *m = hci_meta_alloc(sizeof *m);
  if (m == NULL) return 0;
  m->name = arena_strdup(name);
  if (m->name == NULL) {
    hci_meta_free(m, sizeof *m);
    return 0;
  }
  m->base = info->dlpi_addr;
  m->lo = lo;
  m->hi = hi;
  m->is_main = is_main;
  m->is_vdso = is_vdso;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || ph->p_memsz == 0 || m->nseg == MAX_SEGS) continue;
    m->seg[m->nseg].lo = info->dlpi_addr + ph->p_vaddr;
    m->seg[m->nseg].hi = m->seg[m->nseg].lo + ph->p_memsz;
    m->nseg++;
  }
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) m->dyn = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
  read_mem_build_id(m, info);
  m->seen = true;
  m->next = *fresh;
  *fresh = m;
  return 0;
}

typedef struct counters {
  unsigned long long adds, subs;
  bool ok;
} counters_t;

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  counters_t *c = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    c->ok = true;
  }
  return 1; /* the first object is enough */
}

/* Rebuilds the module list when the loader says objects came or went. */
static void unload_module(module_t *m);

static void refresh_modules(void) {
  counters_t c = {0, 0, false};
  dl_iterate_phdr(counters_cb, &c);
  if (S.scanned && c.ok && c.adds == S.adds && c.subs == S.subs) return;
  module_t *fresh = NULL;
  dl_iterate_phdr(scan_cb, &fresh);
  /* What was not seen was unloaded: retire it (its strings may be in use,
   * and frames recorded while it was loaded are still symbolized from it).
   * The same module unloaded again (a dlopen/dlclose loop) is kept once. */
  while (S.modules) {
    module_t *m = S.modules;
    S.modules = m->next;
    bool dup = false;
    for (module_t *r = S.retired; r && !dup; r = r->next)
      dup = same_module(r, m->name, m->base, m->lo) && r->build_id_len == m->build_id_len &&
            memcmp(r->build_id, m->build_id, m->build_id_len) == 0;
    if (dup && !m->loaded) {
      unload_module(m); /* with its file, when premap mapped it (a chroot) */
      continue;
    }
    m->next = S.retired;
    S.retired = m;
  }
  S.modules = fresh;
  for (module_t *m = fresh; m; m = m->next) m->seen = false;
  S.adds = c.adds;
  S.subs = c.subs;
  S.scanned = true;
  /* Cached frames may name modules that moved; a new libstdc++ may exist. */
  map_free(&S.pcs);
  if (S.demangle == NULL) S.demangle_looked_up = false;
}

static module_t *find_in(module_t *list, uintptr_t addr) {
  for (module_t *m = list; m; m = m->next) {
    if (addr < m->lo || addr >= m->hi) continue;
    if (m->nseg == 0) return m;
    for (unsigned i = 0; i < m->nseg; i++)
      if (addr >= m->seg[i].lo && addr < m->seg[i].hi) return m;
  }
  return NULL;
}

/* A loaded module first; else one unloaded since (the most recent first):
 * an address reused by a later load belongs to the module loaded now. */
static module_t *find_module(uintptr_t addr, bool *unloaded) {
  module_t *m = find_in(S.modules, addr);
  *unloaded = m == NULL;
  return m ? m : find_in(S.retired, addr);
}

static const char *build_id_hex(const module_t *m) {
  if (m->build_id_len == 0) return NULL;
  char hex[2 * MAX_BUILD_ID + 1];
  for (size_t i = 0; i < m->build_id_len; i++) hci_snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
  return intern(hex);
}

void hci_symbolizer_before_dlclose(void) {
  hci_lock(&S.lock);
  refresh_modules();
  hci_unlock(&S.lock);
}

/* ---- loading a module ---- */

static bool build_id_matches(const hci_elf_t *e, const uint8_t *id, size_t len) {
  const uint8_t *fid;
  size_t flen;
  if (!hci_elf_build_id(e, &fid, &flen)) return false;
  return flen == len && memcmp(fid, id, len) == 0;
}

static bool debug_root_warned;
HC_PRIVATE_STATE(debug_root_warned);

static const char *debug_root(void) {
  const char *r = hci_opt_str(HCO_HEAPCHECK_DEBUG_DIR);
  if (r && *r && r[0] != '/' && !debug_root_warned) {
    debug_root_warned = true;
    hci_warn("HEAPCHECK_DEBUG_DIR=%s is not an absolute path; using /usr/lib/debug", r);
  }
  return r && r[0] == '/' ? r : "/usr/lib/debug";
}

/* Looks for the separate debug file: /usr/lib/debug/.build-id/xx/rest.debug
 * (build-id checked), then the .gnu_debuglink name next to the module, in
 * its .debug/ subdirectory and under /usr/lib/debug/<dir>/ (CRC checked).
 * The build-id: the loaded image's, else the file's (m->elf). */
static bool find_debug_file(module_t *m, uint64_t dev, uint64_t ino) {
  const uint8_t *id = m->build_id;
  size_t idlen = m->build_id_len;
  if (idlen == 0 && !hci_elf_build_id(&m->elf, &id, &idlen)) idlen = 0;
  char path[PATH_BUF];
  const char *root = debug_root();
  if (idlen >= 2) {
    int n = hci_snprintf(path, sizeof path, "%s/.build-id/%02x/", root, id[0]);
    for (size_t i = 1; i < idlen && n > 0 && (size_t)n < sizeof path; i++)
      n += hci_snprintf(path + n, sizeof path - (size_t)n, "%02x", id[i]);
    if (n > 0 && (size_t)n < sizeof path - 8) {
      hci_snprintf(path + n, sizeof path - (size_t)n, ".debug");
      if (hci_elf_open_file(&m->dbg, path, NULL, NULL)) {
        if (build_id_matches(&m->dbg, id, idlen)) return true;
        hci_elf_close(&m->dbg);
      }
    }
  }
  const char *link;
  uint32_t crc;
  if (m->is_vdso || !hci_elf_debuglink(&m->elf, &link, &crc) || strchr(link, '/') != NULL) return false;
  const char *slash = strrchr(m->name, '/');
  int dirlen = slash ? (int)(slash - m->name) : 0;
  for (int k = 0; k < 3; k++) {
    int n = k == 0   ? hci_snprintf(path, sizeof path, "%.*s/%s", dirlen, m->name, link)
            : k == 1 ? hci_snprintf(path, sizeof path, "%.*s/.debug/%s", dirlen, m->name, link)
                     : hci_snprintf(path, sizeof path, "%s%.*s/%s", root, dirlen, m->name, link);
    if (n <= 0 || (size_t)n >= sizeof path) continue;
    uint64_t d, i;
    if (!hci_elf_open_file(&m->dbg, path, &d, &i)) continue;
    if ((d != dev || i != ino) && hci_crc32(0, m->dbg.data, m->dbg.size) == crc) return true;
    hci_elf_close(&m->dbg);
  }
  return false;
}

static void take_dwarf(module_t *m, const hci_elf_t *e) {
  if (m->dw.line == NULL) hci_elf_dwarf_sections(e, &m->dw);
}

/* The vdso has no file: its image is in memory, section headers included,
 * within the pages of its PT_LOAD segment. */
static bool open_vdso(module_t *m) {
  const uint8_t *img = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
  if (img == NULL || (uintptr_t)img < m->lo || m->hi - (uintptr_t)img < sizeof(ElfW(Ehdr))) return false;
  ElfW(Ehdr) eh;
  memcpy(&eh, img, sizeof eh);
  size_t avail = m->hi - (uintptr_t)img;
  size_t page = (size_t)getauxval(AT_PAGESZ);
  if (page == 0) page = 4096;
  size_t end = 0;
  if (eh.e_phentsize < sizeof(ElfW(Phdr)) || eh.e_phoff > avail ||
      (size_t)eh.e_phnum * eh.e_phentsize > avail - eh.e_phoff)
    return false;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    ElfW(Phdr) ph;
    memcpy(&ph, img + eh.e_phoff + (size_t)i * eh.e_phentsize, sizeof ph);
    if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end) end = ph.p_offset + ph.p_filesz;
  }
  end = (end + page - 1) & ~(page - 1);
  /* m->hi is the PT_LOAD's memsz, possibly short of the page end. */
  size_t mapped = ((uintptr_t)img + avail + page - 1) / page * page - (uintptr_t)img;
  if (end > mapped) end = mapped;
  return hci_elf_open_buffer(&m->elf, img, end);
}

/* Maps the module's file into m->elf (not parsed); false when it cannot. */
static bool open_module_file(module_t *m, uint64_t *dev, uint64_t *ino) {
  /* The main program through /proc/self/exe: right even if its path was
   * replaced or deleted since it started (the build-id check below
   * guards the path fallback). */
  const char *file = m->name;
  if (m->is_main && exe_link()) file = exe_link();
  if (!hci_elf_open_file(&m->elf, file, dev, ino)) return false;
  const uint8_t *fid;
  size_t flen;
  if (m->build_id_len && hci_elf_build_id(&m->elf, &fid, &flen) &&
      (flen != m->build_id_len || memcmp(fid, m->build_id, flen) != 0)) {
    hci_elf_close(&m->elf); /* the file on disk is not what was loaded */
    return false;
  }
  return true;
}

/* mapped: the module is loaded now (not retired by a dlclose), so its
 * image can be read. */
static void load_module(module_t *m, bool mapped) {
  m->loaded = true;
  uint64_t dev = m->premapped_dev, ino = m->premapped_ino;
  if (m->is_vdso) {
    if (!open_vdso(m)) return;
  } else if (!m->elf.map && !open_module_file(m, &dev, &ino)) {
    /* No file (no descriptor left: RLIMIT_NOFILE; out of view): the loaded
     * image's dynamic symbols, which need none.  Exported functions only,
     * and no lines. */
    if (mapped && m->dyn) hci_symtab_build_loaded(&m->syms, m->base, m->dyn, m->seg, m->nseg);
    return;
  }
  bool have_symtab = hci_symtab_build(&m->syms, &m->elf, false);
  take_dwarf(m, &m->elf);
  if (!have_symtab || m->dw.line == NULL) {
    if (m->dbg.map || find_debug_file(m, dev, ino)) {
      if (!have_symtab) have_symtab = hci_symtab_build(&m->syms, &m->dbg, false);
      if (m->dw.line == NULL) take_dwarf(m, &m->dbg);
    }
  }
  if (!have_symtab) hci_symtab_build(&m->syms, &m->elf, true);
  if (m->dw.line) hci_dwarf_index_build(&m->lines, &m->dw);
}

/* The files go out of view (chroot): each module's file (and its separate
 * debug file, where load_module would look for one) is mapped now,
 * parsed when a report needs it (a mapping is no descriptor: nothing the
 * program sees in /proc/self/fd, no directory to leave the new root by). */
void hci_symbolizer_premap(void) {
  hci_lock(&S.lock);
  refresh_modules();
  for (module_t *m = S.modules; m; m = m->next) {
    if (m->loaded || m->is_vdso || m->elf.map) continue;
    if (!open_module_file(m, &m->premapped_dev, &m->premapped_ino)) continue;
    /* Its separate debug file too, where load_module would look for one. */
    if (hci_elf_section_present(&m->elf, ".symtab") && hci_elf_section_present(&m->elf, ".debug_line")) continue;
    find_debug_file(m, m->premapped_dev, m->premapped_ino);
  }
  hci_unlock(&S.lock);
}

static void unload_module(module_t *m) {
  hci_dwarf_index_free(&m->lines);
  hci_symtab_free(&m->syms);
  hci_elf_close(&m->dbg);
  if (m->is_vdso) memset(&m->elf, 0, sizeof m->elf); /* memory image: nothing to unmap */
  else hci_elf_close(&m->elf);
  hci_meta_free(m, sizeof *m);
}

/* ---- names ---- */

/* Work area of demangle.c plus its output, from the metadata arena on the
 * first C++ name (about 150 KiB) and kept until hci_symbolizer_reset. */
struct dm_area {
  hci_demangle_work_t work;
  char out[16384];
};

static const char *demangle(const char *name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  const char *done = map_get(&S.demangled, (uintptr_t)name);
  if (done) return done;
  const char *out = name;
  if (S.dm == NULL) S.dm = hci_meta_alloc(sizeof *S.dm);
  if (S.dm && hci_demangle(name, S.dm->out, sizeof S.dm->out, &S.dm->work)) {
    const char *s = intern(S.dm->out);
    if (s) out = s;
  } else {
    /* Refused (or no memory): libstdc++'s demangler, only if already loaded
     * and visible; a static executable has no dynamic symbols to look in. */
    if (!S.demangle_looked_up) {
      S.demangle_looked_up = true;
      if (!hci_eh_static_exe()) S.demangle = (demangle_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    if (S.demangle) {
      int status = -1;
      char *d = S.demangle(name, NULL, NULL, &status);
      if (d && status == 0) {
        const char *s = intern(d);
        if (s) out = s;
      }
      free(d); /* __cxa_demangle's result comes from malloc */
    }
  }
  map_put(&S.demangled, (uintptr_t)name, (void *)(uintptr_t)out);
  return out;
}

/* "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main": the symbol
 * version of a .symtab name is not part of the function's name (and would
 * keep suppressions from matching).  Interned; the name itself if none. */
static const char *unversioned(const char *name) {
  const char *at = strchr(name, '@');
  if (at == NULL || at == name) return name;
  char buf[1024];
  size_t n = (size_t)(at - name);
  if (n >= sizeof buf) return name;
  memcpy(buf, name, n);
  buf[n] = 0;
  const char *s = intern(buf);
  return s ? s : name;
}

/* ---- inlined frames ---- */

#define MAX_INLINED 16

static void set_call_site(module_t *m, size_t unit, const hci_inline_t *in, hci_frame_t *f) {
  char file[PATH_BUF];
  f->file = NULL;
  f->line = 0;
  if (!hci_dwarf_file(&m->lines, &m->dw, unit, in->call_file, file, sizeof file)) return;
  hci_sym_normalize_path(file);
  if (file[0]) f->file = intern(file);
  f->line = f->file && in->call_line <= 0x7fffffff ? (int)in->call_line : 0;
}

/* f holds the real function (symbol) at the line table's line.  When addr
 * is inside inlined code, f becomes the innermost inlined function at that
 * line, and a chain of callers (arena) leads out to the real function, each
 * at the line of the call that was inlined. */
static void expand_inlined(module_t *m, uint64_t addr, hci_frame_t *f) {
  size_t unit;
  uint64_t info;
  hci_inline_t in[MAX_INLINED];
  if (!hci_dwarf_unit_at(&m->lines, addr, &unit, &info)) return;
  int n = hci_dwarf_inlined(&m->dw, info, addr, in, MAX_INLINED);
  if (n <= 0) return;
  hci_frame_t *chain = arena_alloc((size_t)n * sizeof *chain);
  if (chain == NULL) return;
  /* chain[n-1] is the real function, chain[i] the function in[i+1] was
   * inlined into... built from the outside in. */
  for (int i = 0; i < n; i++) {
    chain[i] = *f;
    chain[i].caller = i + 1 < n ? &chain[i + 1] : NULL;
    chain[i].inlined = i + 1 < n;
  }
  /* chain[n-1]: the real function, at the call site of in[0]. */
  set_call_site(m, unit, &in[0], &chain[n - 1]);
  /* chain[n-1-k] (k >= 1): in[k-1]'s function, at the call site of in[k]. */
  for (int k = 1; k < n; k++) {
    hci_frame_t *c = &chain[n - 1 - k];
    c->function = in[k - 1].function ? demangle(unversioned(in[k - 1].function)) : NULL;
    c->function_offset = 0;
    set_call_site(m, unit, &in[k], c);
  }
  /* f: the innermost inlined function at the line table's line. */
  f->function = in[n - 1].function ? demangle(unversioned(in[n - 1].function)) : NULL;
  f->function_offset = 0;
  f->inlined = true;
  f->caller = &chain[0];
}

/* ---- public interface ---- */

static void lookup(uintptr_t pc, hci_frame_t *f) {
  bool unloaded;
  module_t *m = find_module(pc - 1, &unloaded);
  if (m == NULL) return;
  f->module = m->name;
  if (unloaded) {
    f->unloaded = true;
    f->build_id = build_id_hex(m);
  }
  f->module_offset = pc - m->base;
  if (!m->loaded) load_module(m, !unloaded);
  uint64_t addr = (uint64_t)(pc - 1 - m->base);
  const hci_sym_t *s = hci_symtab_find(&m->syms, addr);
  if (s) {
    f->function = demangle(unversioned(s->name));
    f->function_offset = (uintptr_t)(addr + 1 - s->addr);
  }
  char file[PATH_BUF];
  int line;
  if (m->lines.n && hci_dwarf_lookup(&m->lines, &m->dw, addr, file, sizeof file, &line)) {
    hci_sym_normalize_path(file);
    if (file[0]) f->file = intern(file);
    f->line = f->file ? line : 0;
  }
  if (m->lines.n) expand_inlined(m, addr, f);
}

/* fork (the runtime's one handler): the child gets the state consistent
 * and the lock free. */
void hci_symbolizer_fork_locks(hci_lock_fn *each) { each(&S.lock); }
void hci_symbolizer_lock(void) { hci_lock(&S.lock); }
void hci_symbolizer_unlock(void) { hci_unlock(&S.lock); }

bool hci_symbolize(uintptr_t pc, hci_frame_t *out) {
  memset(out, 0, sizeof *out);
  out->pc = pc;
  out->module = "?";
  out->module_offset = pc;
  if (pc == 0) return false;
  hci_lock(&S.lock);
  refresh_modules();
  const hci_frame_t *hit = map_get(&S.pcs, pc);
  if (hit) {
    *out = *hit;
  } else {
    lookup(pc, out);
    hci_frame_t *keep = arena_alloc(sizeof *keep);
    if (keep) {
      *keep = *out;
      map_put(&S.pcs, pc, keep);
    }
  }
  hci_unlock(&S.lock);
  uintptr_t hide = atomic_load_explicit(&S.hide, memory_order_relaxed);
  out->hidden = hide && out->function && !out->inlined && pc - out->function_offset == hide;
  return out->function != NULL;
}

void hci_symbolize_hide(uintptr_t entry) { atomic_store_explicit(&S.hide, entry, memory_order_relaxed); }

int hci_symbolize_func_ranges(uintptr_t in_module, const char *const *names, uintptr_t *lo, uintptr_t *hi, int max) {
  int n = 0;
  hci_lock(&S.lock);
  refresh_modules();
  module_t *m = find_in(S.modules, in_module);
  if (m && !m->loaded) load_module(m, true);
  for (size_t i = 0; m && i < m->syms.n && n < max; i++) {
    const hci_sym_t *sym = &m->syms.syms[i];
    for (const char *const *q = names; *q; q++) {
      if (strcmp(sym->name, *q) != 0) continue;
      lo[n] = m->base + (uintptr_t)sym->addr;
      hi[n] = m->base + (uintptr_t)sym->end;
      n++;
      break;
    }
  }
  hci_unlock(&S.lock);
  return n;
}

bool hci_symbolize_section(uintptr_t in_module, const char *name, uintptr_t *lo, uintptr_t *hi) {
  bool ok = false;
  hci_elf_sect_t s;
  hci_lock(&S.lock);
  refresh_modules();
  module_t *m = find_in(S.modules, in_module);
  if (m && !m->loaded) load_module(m, true); /* the file whose build id matches the loaded image */
  if (m && hci_elf_section(&m->elf, name, &s) && s.size > 0) {
    *lo = m->base + (uintptr_t)s.addr;
    *hi = *lo + s.size;
    ok = *lo >= m->lo && *hi <= m->hi && *lo < *hi;
  }
  hci_unlock(&S.lock);
  return ok;
}

bool hci_symbolize_symbol(uintptr_t in_module, const char *name, uintptr_t *addr) {
  bool ok = false;
  uint64_t v;
  hci_lock(&S.lock);
  refresh_modules();
  module_t *m = find_in(S.modules, in_module);
  if (m && !m->loaded) load_module(m, true);
  if (m && hci_elf_symbol(&m->elf, name, &v)) {
    *addr = m->base + (uintptr_t)v;
    ok = *addr >= m->lo && *addr < m->hi;
  }
  hci_unlock(&S.lock);
  return ok;
}

int hci_format_frame(char *buf, size_t size, const hci_frame_t *f) {
  size_t n = 0;
#define EMIT(...)                                                                     \
  do {                                                                                \
    int k_ = hci_snprintf(n < size ? buf + n : NULL, n < size ? size - n : 0, __VA_ARGS__); \
    if (k_ > 0) n += (size_t)k_;                                                      \
  } while (0)
  if (size) buf[0] = 0;
  if (f->function) EMIT("%s ", f->function);
  if (f->file) {
    if (f->line > 0) EMIT("%s:%d ", f->file, f->line);
    else EMIT("%s ", f->file);
  }
  EMIT("(%s+0x%lx", f->module ? f->module : "?", (unsigned long)f->module_offset);
  if (f->unloaded) EMIT(f->build_id ? ", unloaded, build-id %s)" : ", unloaded)", f->build_id);
  else EMIT(")");
  if (f->inlined) EMIT(" [inlined]");
#undef EMIT
  return (int)n;
}

void hci_symbolizer_reset(void) {
  hci_lock(&S.lock);
  for (int list = 0; list < 2; list++) {
    module_t *m = list ? S.retired : S.modules;
    while (m) {
      module_t *next = m->next;
      unload_module(m);
      m = next;
    }
  }
  S.modules = S.retired = NULL;
  map_free(&S.pcs);
  map_free(&S.demangled);
  map_free(&S.strings);
  arena_free_all();
  if (S.dm) {
    hci_meta_free(S.dm, sizeof *S.dm);
    S.dm = NULL;
  }
  S.demangle = NULL;
  S.demangle_looked_up = false;
  S.scanned = false;
  hci_unlock(&S.lock);
}
