/* bench_trivial.c - the trivial program of issue 11's start-up target: it
 * mallocs 100 bytes, prints, frees and returns.  Its peak RSS under each
 * allocator (tests/bench/startup_rss.sh) is the allocator's start-up cost.
 *
 * With arguments it also tells where that memory is, at the end of main:
 * one line per mapping of /proc/self/smaps (Rss KB, size KB, permissions,
 * file offset, address, name), and for the mappings whose name contains one of the
 * arguments ("anon": the unnamed mappings, e.g. a library's .bss past its
 * file), the file offsets of the pages present (/proc/self/pagemap), so
 * that resident code can be matched with symbols (`nm`), and data with
 * `readelf -S`: each offset is followed by f (a page of the file), a (an
 * anonymous page of this process: written) or z (neither: the shared zero
 * page of a page only read, which Rss does not count).  The report is built in static buffers and written with
 * write(2): nothing it does allocates after the measured work. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char smaps[1 << 20];
static char out[1 << 20];
static size_t out_len;

/* The pagemap entries of every mapping, read before any formatting: the
 * report's own libc calls (snprintf, strstr) page in libc code and data of
 * their own, which a later read would count. */
#define MAX_PAGES (1 << 20)
static uint64_t entries[MAX_PAGES];

static void put(const char *s) {
  size_t l = strlen(s);
  if (out_len + l >= sizeof out) return;
  memcpy(out + out_len, s, l);
  out_len += l;
}

/* A hex number at *s, by hand (no libc: see entries). */
static unsigned long hex(const char **s) {
  unsigned long v = 0;
  for (;; (*s)++) {
    char c = **s;
    if (c >= '0' && c <= '9') v = v * 16 + (unsigned long)(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + (unsigned long)(c - 'a' + 10);
    else return v;
  }
}

static void report(int argc, char **argv) {
  int fd = open("/proc/self/smaps", O_RDONLY);
  if (fd < 0) return;
  size_t n = 0;
  ssize_t r;
  while (n < sizeof smaps - 1 && (r = read(fd, smaps + n, sizeof smaps - 1 - n)) > 0) n += (size_t)r;
  close(fd);
  smaps[n] = 0;
  /* First pass, without libc: every mapping's pagemap entries. */
  int pm = open("/proc/self/pagemap", O_RDONLY);
  size_t used = 0;
  for (const char *s = smaps; pm >= 0 && *s;) {
    const char *t = s;
    unsigned long lo = hex(&t);
    if (*t == '-' && t > s) {
      t++;
      unsigned long hi = hex(&t);
      size_t np = (hi - lo) / 4096;
      if (*t == ' ' && used + np <= MAX_PAGES && np <= 4096 &&
          pread(pm, entries + used, np * sizeof entries[0], (off_t)(lo / 4096 * sizeof entries[0])) ==
              (ssize_t)(np * sizeof entries[0]))
        used += np;
      else if (*t == ' ')
        for (size_t i = 0; i < np && used < MAX_PAGES; i++) entries[used++] = 0;
    }
    while (*s && *s != '\n') s++;
    if (*s) s++;
  }
  if (pm >= 0) close(pm);
  /* Second pass: the report. */
  unsigned long lo = 0, hi = 0, off = 0, total = 0;
  size_t at = 0, first = 0;
  char name[400] = "", perm[8] = "", line[512], num[32];
  for (char *s = smaps, *nl; s && *s; s = nl ? nl + 1 : NULL) {
    nl = strchr(s, '\n');
    if (nl) *nl = 0;
    char *dash = strchr(s, '-'), *sp = strchr(s, ' ');
    if (dash && sp && dash < sp) { /* a mapping's first line */
      name[0] = 0;
      sscanf(s, "%lx-%lx %7s %lx %*s %*s %399[^\n]", &lo, &hi, perm, &off, name);
      first = at;
      at += (hi - lo) / 4096;
    } else if (!strncmp(s, "Rss:", 4)) {
      unsigned long rss = strtoul(s + 4, NULL, 10);
      const char *base = strrchr(name, '/');
      base = base ? base + 1 : name;
      total += rss;
      snprintf(line, sizeof line, "%6lu %6lu %s %8lx %12lx %s", rss, (hi - lo) >> 10, perm, off, lo, base);
      put(line);
      for (int i = 1; i < argc; i++)
        if (name[0] ? strstr(name, argv[i]) != NULL : !strcmp(argv[i], "anon")) {
          put("  pages:");
          for (size_t k = 0; k < (hi - lo) / 4096 && first + k < used; k++) {
            uint64_t e = entries[first + k];
            if (!(e >> 63)) continue;
            char kind = (e >> 61) & 1 ? 'f' : (e >> 56) & 1 ? 'a' : 'z'; /* PM_FILE, PM_MMAP_EXCLUSIVE */
            snprintf(num, sizeof num, " %lx%c", off + k * 4096, kind);
            put(num);
          }
          break;
        }
      put("\n");
    }
  }
  snprintf(line, sizeof line, "%6lu total\n", total);
  put(line);
  if (write(2, out, out_len) < 0) return;
}

int main(int argc, char **argv) {
  char *p = malloc(100);
  if (!p) return 1;
  snprintf(p, 100, "%d", argc);
  printf("hello %s\n", p);
  free(p);
  if (argc > 1) {
    fflush(stdout);
    report(argc, argv);
  }
  return 0;
}
