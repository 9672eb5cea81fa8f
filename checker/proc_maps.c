/* proc_maps.c - a snapshot of /proc/self/maps that is safe to take while
 * the world is stopped.
 *
 * The file is read with open/read into a buffer from hci_os_map (mmap is a
 * plain system call: no user-space lock), then parsed into a sorted array of
 * hci_map_t.  Buffers grow by mapping a bigger one and copying; they are
 * kept between reads so a steady-state check maps nothing.
 *
 * Invariants: m->v[0..n) is sorted by lo and non-overlapping (the kernel
 * prints VMAs in address order).  A read that fails leaves n == 0.
 * Locks: none; the caller owns m.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"

#define BUF_MIN ((size_t)64 << 10)
#define MAPS_MIN 512

/* Replaces *buf (cap bytes, used bytes live) with a buffer twice as big. */
static bool grow(void **buf, size_t *cap, size_t used, size_t min) {
  size_t ncap = *cap ? *cap * 2 : min;
  void *nb = hci_os_map(ncap);
  if (!nb) return false;
  if (*buf) {
    memcpy(nb, *buf, used);
    hci_os_unmap(*buf, *cap);
  }
  *buf = nb;
  *cap = ncap;
  return true;
}

static int read_all(hci_maps_t *m, size_t *len) {
  bool kept; /* a descriptor kept from start-up when the program has none left */
  int fd = hci_proc_open(HCI_PROC_MAPS, &kept);
  if (fd < 0) return -1;
  size_t used = 0;
  for (;;) {
    if (m->buf_cap - used < 4096 && !grow((void **)&m->buf, &m->buf_cap, used, BUF_MIN)) {
      hci_proc_close(fd, kept);
      return -1;
    }
    ssize_t r = read(fd, m->buf + used, m->buf_cap - used - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      hci_proc_close(fd, kept);
      return -1;
    }
    if (r == 0) break;
    used += (size_t)r;
  }
  hci_proc_close(fd, kept);
  m->buf[used] = '\0';
  *len = used;
  return 0;
}

static uintptr_t hex(const char **s) {
  uintptr_t v = 0;
  for (;;) {
    char c = **s;
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return v;
    v = v << 4 | d;
    (*s)++;
  }
}

static const char *skip_field(const char *s, const char *end) {
  while (s < end && *s != ' ') s++;
  while (s < end && *s == ' ') s++;
  return s;
}

static bool starts(const char *s, const char *end, const char *prefix) {
  size_t n = strlen(prefix);
  return (size_t)(end - s) >= n && memcmp(s, prefix, n) == 0;
}

/* "lo-hi perms offset dev inode   path" */
static bool parse_line(const char *s, const char *end, hci_map_t *out) {
  const char *p = s;
  out->lo = hex(&p);
  if (p >= end || *p != '-') return false;
  p++;
  out->hi = hex(&p);
  if (p >= end || *p != ' ' || out->hi <= out->lo) return false;
  p++;
  if (end - p < 4) return false;
  uint32_t f = 0;
  if (p[0] == 'r') f |= HCI_MAP_R;
  if (p[1] == 'w') f |= HCI_MAP_W;
  if (p[2] == 'x') f |= HCI_MAP_X;
  if (p[3] == 'p') f |= HCI_MAP_PRIVATE;
  p = skip_field(p, end);            /* perms */
  p = skip_field(p, end);            /* offset */
  const char *dev = p;
  p = skip_field(p, end);            /* dev */
  const char *inode = p;
  p = skip_field(p, end);            /* inode; p is now the path (possibly empty) */
  bool no_inode = inode < end && inode[0] == '0' && (inode + 1 == end || inode[1] == ' ');
  if (p >= end) {
    f |= HCI_MAP_ANON;
  } else if (*p == '[') {
    if (starts(p, end, "[stack")) f |= HCI_MAP_ANON | HCI_MAP_STACK; /* "[stack]" or old "[stack:tid]" */
    else if (starts(p, end, "[heap]")) f |= HCI_MAP_ANON | HCI_MAP_HEAP;
    else if (starts(p, end, "[anon")) f |= HCI_MAP_ANON; /* prctl(PR_SET_VMA_ANON_NAME) */
    else f |= HCI_MAP_SPECIAL;       /* [vdso] [vvar] [vsyscall] [uprobes]... */
  } else if (starts(p, end, "/dev/") && !starts(p, end, "/dev/shm/") && !starts(p, end, "/dev/zero")) {
    f |= HCI_MAP_DEVICE;             /* a driver's memory: reading it may have side effects */
  } else if (no_inode && starts(dev, end, "00:00")) {
    f |= HCI_MAP_ANON;               /* a name but no file behind it */
  }
  out->flags = f;
  return true;
}

int hci_maps_read(hci_maps_t *m) {
  m->n = 0;
  size_t len;
  if (read_all(m, &len) != 0) return -1;
  const char *s = m->buf, *end = m->buf + len;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    const char *le = nl ? nl : end;
    hci_map_t map;
    if (parse_line(s, le, &map)) {
      if (m->n == m->cap) {
        size_t cap_bytes = (size_t)m->cap * sizeof(hci_map_t);
        if (!grow((void **)&m->v, &cap_bytes, (size_t)m->n * sizeof(hci_map_t),
                  MAPS_MIN * sizeof(hci_map_t))) {
          m->n = 0;
          return -1;
        }
        m->cap = (int)(cap_bytes / sizeof(hci_map_t));
      }
      /* The file is not read atomically; keep the array sorted whatever a
       * concurrent mmap in a running thread did between two reads. */
      if (m->n == 0 || map.lo >= m->v[m->n - 1].hi) m->v[m->n++] = map;
    }
    s = le + 1;
  }
  return 0;
}

int hci_maps_uffd(char *buf, size_t len, uintptr_t *lo, uintptr_t *hi, int cap) {
  int fd = hci_os_open_proc("smaps", O_RDONLY);
  if (fd < 0) return -1;
  char line[512];
  size_t n = 0, have = 0, at = 0;
  int found = 0;
  hci_map_t map = {0};
  for (;;) {
    if (at == have) {
      ssize_t r = read(fd, buf, len);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      have = (size_t)r;
      at = 0;
    }
    char c = buf[at++];
    if (c != '\n') {
      if (n < sizeof line) line[n++] = c; /* a longer line is a path's: cut */
      continue;
    }
    hci_map_t m;
    if (parse_line(line, line + n, &m)) map = m; /* a mapping's first line: the ones after are its */
    else if (starts(line, line + n, "VmFlags:") && (memmem(line, n, " um", 3) || memmem(line, n, " uw", 3) ||
                                                   memmem(line, n, " ui", 3))) {
      if (found == cap) found = -1;
      if (found < 0) break;
      lo[found] = map.lo;
      hi[found++] = map.hi;
    }
    n = 0;
  }
  close(fd);
  return found;
}

const hci_map_t *hci_maps_find(const hci_maps_t *m, uintptr_t addr) {
  int lo = 0, hi = m->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (m->v[mid].hi <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo < m->n && m->v[lo].lo <= addr && addr < m->v[lo].hi) return &m->v[lo];
  return NULL;
}

void hci_maps_free(hci_maps_t *m) {
  if (m->buf) hci_os_unmap(m->buf, m->buf_cap);
  if (m->v) hci_os_unmap(m->v, (size_t)m->cap * sizeof(hci_map_t));
  memset(m, 0, sizeof *m);
}

bool hci_readable_build(hci_readable_t *r, const hci_maps_t *m) {
  memset(r, 0, sizeof *r);
  if (m->n == 0) return false;
  r->map_bytes = ((size_t)m->n * 2 * sizeof(uintptr_t) + 4095) & ~(size_t)4095;
  r->lo = hci_os_map(r->map_bytes);
  if (!r->lo) return false;
  r->hi = r->lo + m->n;
  for (int i = 0; i < m->n; i++) {
    const hci_map_t *v = &m->v[i];
    if (!(v->flags & HCI_MAP_R) || (v->flags & (HCI_MAP_SPECIAL | HCI_MAP_DEVICE))) continue;
    if (r->n && r->hi[r->n - 1] == v->lo) {
      r->hi[r->n - 1] = v->hi;
    } else {
      r->lo[r->n] = v->lo;
      r->hi[r->n] = v->hi;
      r->n++;
    }
  }
  return r->n > 0;
}

size_t hci_readable_first(const hci_readable_t *r, uintptr_t addr) {
  size_t a = 0, b = r->n;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (r->hi[mid] <= addr) a = mid + 1;
    else b = mid;
  }
  return a;
}

void hci_readable_free(hci_readable_t *r) {
  if (r->lo) hci_os_unmap(r->lo, r->map_bytes);
  memset(r, 0, sizeof *r);
}
