/* test_elf_malformed.c - the ELF/DWARF parser must survive any input.
 *
 * Feeds hci_elf_probe_buffer (sections, notes, .symtab/.dynsym with
 * lookups, .debug_line index with lookups) with truncated, bit-flipped,
 * value-smashed and randomised copies of real ELF files: this executable,
 * /bin/true, the modules in HC_SYM_MODULES and HC_SYM_CXX_MODULE, libc, and
 * every file of the fuzz corpus (HC_SYM_CORPUS).  Mutations favour the bytes
 * the parser reads (ELF header, section table, symbol, string, note and line
 * sections).  The seed is fixed, so a failure reproduces.
 *
 * Each input is copied so that it ends exactly at a PROT_NONE guard page:
 * a read past the end faults even without a sanitizer.  The test passes
 * when nothing crashes and the unmutated files still parse.
 */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hc_internal.h"
#include "hc_symbolize.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}
static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

typedef struct region {
  size_t off, len;
} region_t;

/* Byte ranges the parser looks at: header, section table, interesting sections. */
static int hot_regions(const uint8_t *d, size_t size, region_t *r, int max) {
  int n = 0;
  r[n++] = (region_t){0, size < 64 ? size : 64};
  Elf64_Ehdr eh;
  if (size < sizeof eh) return n;
  memcpy(&eh, d, sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
      (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
    return n;
  r[n++] = (region_t){eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr)};
  for (unsigned i = 1; i < eh.e_shnum && n < max; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, d + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || sh.sh_size == 0)
      continue;
    bool want = sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_STRTAB ||
                sh.sh_type == SHT_NOTE;
    if (!want && eh.e_shstrndx < eh.e_shnum) {
      /* .debug_line, .debug_line_str, .gnu_debuglink: by name */
      Elf64_Shdr ss;
      memcpy(&ss, d + eh.e_shoff + eh.e_shstrndx * sizeof ss, sizeof ss);
      if (ss.sh_offset < size && sh.sh_name < ss.sh_size && ss.sh_size <= size - ss.sh_offset) {
        const char *name = (const char *)d + ss.sh_offset + sh.sh_name;
        size_t room = ss.sh_size - sh.sh_name;
        want = strncmp(name, ".debug_line", room < 11 ? room : 11) == 0 ||
               strncmp(name, ".gnu_debuglink", room < 14 ? room : 14) == 0;
      }
    }
    if (want) r[n++] = (region_t){sh.sh_offset, sh.sh_size};
  }
  return n;
}

static size_t hot_offset(const region_t *r, int n, size_t size) {
  if (below(4) == 0 || n == 0) return below(size);
  const region_t *x = &r[below((size_t)n)];
  /* Line-program headers and symbol entries sit near the starts. */
  size_t span = below(3) == 0 ? (x->len < 256 ? x->len : 256) : x->len;
  return x->off + below(span);
}

static const uint64_t interesting[] = {0, 1, 2, 4, 5, 8, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000,
                                       0xfffffff0, 0xffffffff, 0x7fffffffffffffffull, 0xffffffffffffffffull};

typedef struct guard_buf {
  uint8_t *map;
  size_t cap; /* bytes before the guard page */
} guard_buf_t;

static uint8_t *place(guard_buf_t *g, const uint8_t *src, size_t size) {
  uint8_t *p = g->map + g->cap - size;
  memcpy(p, src, size);
  return p;
}

static long total_runs;

static int fuzz_file(const char *path, const uint8_t *d, size_t size, int iters) {
  if (size < 16) return 0;
  long page = sysconf(_SC_PAGESIZE);
  guard_buf_t g;
  g.cap = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
  g.map = mmap(NULL, g.cap + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g.map == MAP_FAILED) return 1;
  mprotect(g.map + g.cap, (size_t)page, PROT_NONE);
  uint8_t *work = malloc(size);
  region_t r[64];
  int nr = hot_regions(d, size, r, 64);
  int base = hci_elf_probe_buffer(place(&g, d, size), size);
  int bad = 0;
  if (base < 0 && memcmp(d, ELFMAG, SELFMAG) == 0 && d[EI_CLASS] == ELFCLASS64) {
    fprintf(stderr, "FAIL %s: the unmutated file was rejected\n", path);
    bad = 1;
  }
  for (int it = 0; it < iters; it++) {
    size_t n = size;
    memcpy(work, d, size);
    switch (below(6)) {
      case 0: /* truncate, often inside a hot region */
        n = below(3) ? hot_offset(r, nr, size) : below(size);
        break;
      case 1: /* bit flips */
        for (size_t k = 1 + below(8); k > 0; k--) {
          size_t o = hot_offset(r, nr, size);
          work[o] ^= (uint8_t)(1u << below(8));
        }
        break;
      case 2: { /* smash a 1/2/4/8-byte value */
        size_t w = (size_t)1 << below(4);
        size_t o = hot_offset(r, nr, size);
        if (o + w > size) o = size - w;
        uint64_t v = below(2) ? interesting[below(sizeof interesting / sizeof *interesting)] : next();
        if (below(2)) v += below(3) - 1;
        memcpy(work + o, &v, w);
        break;
      }
      case 3: { /* random run of bytes */
        size_t o = hot_offset(r, nr, size);
        size_t len = 1 + below(64);
        for (size_t k = 0; k < len && o + k < size; k++) work[o + k] = (uint8_t)next();
        break;
      }
      case 4: /* many flips anywhere, then truncate */
        for (size_t k = 0; k < 32; k++) work[below(size)] ^= (uint8_t)next();
        n = size - below(size / 2 + 1);
        break;
      default: { /* swap two hot 8-byte words (offsets and sizes land elsewhere) */
        size_t a = hot_offset(r, nr, size), b = hot_offset(r, nr, size);
        if (a + 8 <= size && b + 8 <= size) {
          uint64_t x, y;
          memcpy(&x, work + a, 8);
          memcpy(&y, work + b, 8);
          memcpy(work + a, &y, 8);
          memcpy(work + b, &x, 8);
        }
        break;
      }
    }
    hci_elf_probe_buffer(place(&g, work, n), n);
    total_runs++;
  }
  free(work);
  munmap(g.map, g.cap + (size_t)page);
  printf("%-60s %8zu bytes, %d found unmutated, %d mutations\n", path, size, base, iters);
  return bad;
}

static int fuzz_path(const char *path, int iters) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size > (64 << 20)) {
    close(fd);
    return 0;
  }
  size_t size = (size_t)st.st_size;
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return 0;
  /* Big files cost more per probe: fewer rounds keep the test short. */
  int n = size > (1 << 20) ? iters / 8 : iters;
  int bad = fuzz_file(path, p, size, n);
  munmap(p, size);
  return bad;
}

static int fuzz_list(const char *list, int iters) {
  int bad = 0;
  if (list == NULL) return 0;
  char *copy = strdup(list), *save = NULL;
  for (char *m = strtok_r(copy, ":", &save); m; m = strtok_r(NULL, ":", &save)) bad += fuzz_path(m, iters);
  free(copy);
  return bad;
}

int main(void) {
  const char *it = getenv("HC_MALFORMED_ITERS");
  int iters = it ? atoi(it) : 3000;
  int bad = 0;
  /* Random garbage behind a valid ELF64 header. */
  uint8_t junk[4096];
  for (int round = 0; round < iters; round++) {
    for (size_t k = 0; k < sizeof junk; k++) junk[k] = (uint8_t)next();
    memcpy(junk, "\177ELF\2\1\1", 7);
    size_t n = 64 + below(sizeof junk - 64);
    hci_elf_probe_buffer(junk, n);
    total_runs++;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = 0;
  bad += fuzz_path(self, iters);
  bad += fuzz_path("/bin/true", iters);
  bad += fuzz_path("/lib/x86_64-linux-gnu/libc.so.6", iters / 4);
  bad += fuzz_list(getenv("HC_SYM_MODULES"), iters);
  bad += fuzz_list(getenv("HC_SYM_CXX_MODULE"), iters);
  const char *corpus = getenv("HC_SYM_CORPUS");
  DIR *dir = corpus ? opendir(corpus) : NULL;
  if (dir) {
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
      if (de->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", corpus, de->d_name);
      bad += fuzz_path(path, iters / 4);
    }
    closedir(dir);
  }
  printf("%ld probes without a crash\n", total_runs);
  printf("%d passed, %d failed\n", bad ? 0 : 1, bad ? 1 : 0);
  return bad ? 1 : 0;
}
