/* report.c - the leak report, its summary line and the leak profile file.
 *
 * The text follows gperftools (gperftools-compat.md section 4) so scripts
 * that grep it keep working:
 *     Leak check <name> detected leaks of N bytes in M objects
 *     The K largest leaks:
 *     Leak of N bytes in M objects allocated from:          (direct)
 *     \t@ <hex pc> <function file:line (module+0xoff)>
 *     Indirect leak of N bytes in M objects allocated from: (reachable only from leaks)
 *     ... pprof hint naming <dir>/<prog>.<pid>.<name>-end.heap (shell-quoted
 *         when needed), or a line saying no profile was written ...
 *     SUMMARY: heapcheck: N bytes leaked in M allocations
 * Records group objects by (allocation stack, kind) and are sorted by the
 * bytes they account for: their own plus, for direct records, the indirect
 * leaks they keep (then a line says "(T bytes in all: x direct, y indirect
 * in n objects it keeps)", valgrind's "T (x direct, y indirect)").  Sizes
 * are the requested sizes.
 * The profile file (only with HEAP_CHECK_DUMP_DIRECTORY or
 * HEAPCHECK_LEAK_PROFILE=1) holds one line per leaked object in gperftools' heap
 * profile v1 format plus /proc/self/maps, so google-pprof reads it.
 *
 * Runs with the world running (it symbolizes, which may take the loader
 * lock and call the demangler), but still without malloc: buffers come from
 * hci_os_map, output goes through write(2).
 * Locks: called with hci_chk_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

// ---- buckets ----

typedef struct bucket {
  uint32_t stack_id;
  uint8_t kind;
  size_t bytes, count;
  size_t owned_bytes;  /* direct: the indirect leaks its objects keep (valgrind's "y indirect") */
  size_t owned_objects;
  size_t first;        /* index of its first leak in the sorted leak array */
} bucket_t;

static int cmp_leak(const void *a, const void *b) {
  const hci_leak_t *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->stack_id != y->stack_id) return x->stack_id < y->stack_id ? -1 : 1;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Largest total first: the bytes of the record plus what they keep alive
 * (valgrind's "N (x direct, y indirect)"), so a small block owning a big
 * structure is never hidden behind bigger lone leaks; on ties direct first. */
static int cmp_bucket(const void *a, const void *b) {
  const bucket_t *x = a, *y = b;
  size_t tx = x->bytes + x->owned_bytes, ty = y->bytes + y->owned_bytes;
  if (tx != ty) return tx > ty ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Sorts leaks (a private copy) and groups them; NULL when out of memory. */
static bucket_t *make_buckets(hci_leak_t *leaks, size_t n, size_t *nb, size_t *map_bytes) {
  hci_sort(leaks, n, sizeof *leaks, cmp_leak);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || leaks[i].stack_id != leaks[i - 1].stack_id || leaks[i].kind != leaks[i - 1].kind) k++;
  *map_bytes = (k * sizeof(bucket_t) + 4095) & ~(size_t)4095;
  bucket_t *b = hci_os_map(*map_bytes);
  if (!b) return NULL;
  k = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || leaks[i].stack_id != leaks[i - 1].stack_id || leaks[i].kind != leaks[i - 1].kind) {
      b[k].stack_id = leaks[i].stack_id;
      b[k].kind = leaks[i].kind;
      b[k].first = i;
      k++;
    }
    b[k - 1].bytes += leaks[i].size;
    b[k - 1].count++;
    b[k - 1].owned_bytes += leaks[i].owned_bytes;
    b[k - 1].owned_objects += leaks[i].owned_objects;
  }
  hci_sort(b, k, sizeof *b, cmp_bucket);
  *nb = k;
  return b;
}

/* make_buckets over a private copy of src (*copy, *copy_map bytes mapped;
 * NULL when out of memory); NULL when either could not be mapped. */
static bucket_t *copy_buckets(const hci_leak_t *src, size_t n, hci_leak_t **copy, size_t *copy_map, size_t *nb,
                              size_t *map_bytes) {
  *copy_map = (n * sizeof(hci_leak_t) + 4095) & ~(size_t)4095;
  *copy = hci_os_map(*copy_map);
  if (!*copy) return NULL;
  memcpy(*copy, src, n * sizeof **copy);
  return make_buckets(*copy, n, nb, map_bytes);
}

// ---- frames ----

/* LSan's strip_path_prefix: cut from the start of a path. */
static void strip_prefix(const char **path) {
  const char *pre = hci_chk.strip_path_prefix;
  if (!pre || !*path) return;
  size_t n = strlen(pre);
  if (strncmp(*path, pre, n) == 0 && (*path)[n]) *path += n;
}

static void print_frames(hci_out_t *o, uint32_t stack_id, bool symbolize) {
  const uintptr_t *pcs;
  int n = hci_depot_get(stack_id, &pcs);
  if (n <= 0) {
    hci_out_printf(o, "\t@ 0 (allocation stack unknown)\n");
    return;
  }
  for (int i = 0; i < n; i++) {
    char text[1024] = "";
    if (!symbolize) {
      hci_out_printf(o, "\t@ %lx\n", (unsigned long)pcs[i]);
      continue;
    }
    hci_frame_t fr;
    hci_symbolize(pcs[i], &fr);
    if (fr.hidden) continue; /* our start_main, between main and libc */
    /* Inlined code: one line per function, innermost first, same pc. */
    for (const hci_frame_t *f = &fr; f; f = f->caller) {
      hci_frame_t c = *f;
      strip_prefix(&c.file);
      strip_prefix(&c.module);
      hci_format_frame(text, sizeof text, &c);
      hci_out_printf(o, "\t@ %lx %s\n", (unsigned long)pcs[i], text);
    }
  }
}

// ---- the profile file ----

static void profile_path(char *buf, size_t size, const char *name) {
  const char *prog = hci_prog_short_name();
  int n = hci_snprintf(buf, size, "%s/%s.%d.", hci_chk.dump_dir, *prog ? prog : "heapcheck", (int)getpid());
  /* A check name is not a path: keep the file inside the dump directory. */
  for (const char *s = name; *s && n > 0 && (size_t)n + 1 < size; s++, n++) buf[n] = *s == '/' ? '_' : *s;
  if (n > 0 && (size_t)n < size) buf[n] = 0;
  size_t len = strlen(buf);
  hci_snprintf(buf + len, size - len, "-end.heap");
}

static void copy_maps(hci_out_t *o) {
  int fd = hci_os_open_proc("maps", O_RDONLY);
  if (fd < 0) return;
  hci_out_flush(o);
  char chunk[4096];
  for (;;) {
    ssize_t k = read(fd, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    if (o->len + (size_t)k > sizeof o->buf) hci_out_flush(o);
    memcpy(o->buf + o->len, chunk, (size_t)k);
    o->len += (size_t)k;
  }
  close(fd);
}

/* Writes the leak profile; 0, or the errno of what failed (the file is
 * then removed: a hint never names a file that was not written whole). */
static int write_profile(const char *path, const hci_leak_t *leaks, const bucket_t *b, size_t nb, size_t total,
                         size_t bytes) {
  if (hci_is_secure()) return EPERM; /* a privileged program writes no files */
  unlink(path);
  int fd = hci_create_own(path);
  if (fd < 0) return errno;
  hci_out_t *o = hci_os_map(sizeof *o);
  if (!o) {
    close(fd);
    unlink(path);
    return ENOMEM;
  }
  o->fd = fd;
  hci_out_printf(o, "heap profile: %6zu: %8zu [%6zu: %8zu] @ heapprofile\n", total, bytes, total, bytes);
  for (size_t k = 0; k < nb; k++)
    for (size_t i = b[k].first; i < b[k].first + b[k].count; i++) {
      hci_out_printf(o, "%6d: %8zu [%6d: %8zu] @", 1, leaks[i].size, 1, leaks[i].size);
      const uintptr_t *pcs;
      int n = hci_depot_get(leaks[i].stack_id, &pcs);
      for (int f = 0; f < n; f++) hci_out_printf(o, " 0x%08lx", (unsigned long)pcs[f]);
      hci_out_printf(o, "\n");
    }
  hci_out_printf(o, "\nMAPPED_LIBRARIES:\n");
  copy_maps(o);
  hci_out_flush(o);
  int err = o->failed ? o->err : 0;
  hci_os_unmap(o, sizeof *o);
  if (close(fd) != 0 && !err) err = errno;
  if (err) unlink(path);
  return err;
}

// ---- the report ----

/* The argument as one shell word: unchanged when it has only safe
 * characters, else in single quotes ('\'' for a quote). */
static void shell_quote(char *buf, size_t size, const char *s) {
  bool plain = *s != 0;
  for (const char *p = s; *p && plain; p++)
    plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("_-./+,:=@%", *p) != NULL;
  size_t n = 0;
  if (size == 0) return;
  if (!plain && n + 1 < size) buf[n++] = '\'';
  for (const char *p = s; *p && n + 5 < size; p++) {
    if (*p == '\'' && !plain) {
      memcpy(buf + n, "'\\''", 4);
      n += 4;
    } else {
      buf[n++] = *p;
    }
  }
  if (!plain && n + 1 < size) buf[n++] = '\'';
  buf[n] = 0;
}

static void print_hint(hci_out_t *o, const char *path) {
  if (!hci_chk_log_on(HCI_LOG_WARNING)) return;
  if (path) {
    char prog[1024], file[4200];
    shell_quote(prog, sizeof prog, *hci_prog_name() ? hci_prog_name() : "<program>");
    /* gperftools' form, "path", unless the path holds what double quotes
     * do not protect. */
    if (strpbrk(path, "\"$`\\!") == NULL) hci_snprintf(file, sizeof file, "\"%s\"", path);
    else shell_quote(file, sizeof file, path);
    hci_out_printf(o,
                   "\n\nIf the preceding stack traces are not enough to find the leaks, try running THIS shell "
                   "command:\n\n"
                   "pprof %s %s --inuse_objects --lines --heapcheck  --edgefraction=1e-10 --nodefraction=1e-10 "
                   "--gv\n\n",
                   prog, file);
  } else {
    hci_out_printf(o, "\nNo leak profile written (set HEAP_CHECK_DUMP_DIRECTORY=<dir> or HEAPCHECK_LEAK_PROFILE=1 "
                      "to write one for pprof)\n");
  }
  hci_out_printf(o,
                 "If you are still puzzled about why the leaks are there, try rerunning this program with "
                 "HEAP_CHECK_TEST_POINTER_ALIGNMENT=1 and/or with HEAP_CHECK_MAX_POINTER_OFFSET=-1\n");
}

static void print_records(hci_out_t *o, const hci_report_in_t *in, const hci_leak_t *leaks, const bucket_t *b,
                          size_t nb) {
  size_t limit = hci_chk.max_leaks > 0 && (size_t)hci_chk.max_leaks < nb ? (size_t)hci_chk.max_leaks : nb;
  hci_out_printf(o, "Leak check %s detected leaks of %zu bytes in %zu objects\n", in->name, in->bytes, in->nleaks);
  hci_out_printf(o, "The %zu largest leaks:\n", limit);
  for (size_t k = 0; k < limit; k++) {
    hci_out_printf(o, "%s of %zu bytes in %zu objects allocated from:\n",
                   b[k].kind == HCI_LEAK_INDIRECT ? "Indirect leak" : "Leak", b[k].bytes, b[k].count);
    if (b[k].owned_objects)
      hci_out_printf(o, "  (%zu bytes in all: %zu direct, %zu indirect in %zu objects it keeps)\n",
                     b[k].bytes + b[k].owned_bytes, b[k].bytes, b[k].owned_bytes, b[k].owned_objects);
    print_frames(o, b[k].stack_id, in->symbolize);
    if (hci_chk.report_objects) { /* LSan's report_objects */
      hci_out_printf(o, "Objects leaked above:\n");
      for (size_t i = b[k].first; i < b[k].first + b[k].count; i++)
        hci_out_printf(o, "%p (%zu bytes)\n", (void *)leaks[i].addr, leaks[i].size);
    }
    if (hci_report_opts()->supp_print) hci_fmt_print_suppression(o, b[k].stack_id);
    hci_out_flush(o); /* one record per write where it fits */
  }
  if (limit < nb) hci_out_printf(o, "Skipping leaks numbered %zu..%zu\n", limit, nb - 1);
  if (hci_chk.identify_leaks)
    for (size_t k = 0; k < nb; k++)
      for (size_t i = b[k].first; i < b[k].first + b[k].count; i++)
        hci_out_printf(o, "leaked %zu byte object %p\n", leaks[i].size, (void *)leaks[i].addr);
}

/* valgrind's "possibly lost" records, in their own section after the leaks:
 * objects reached only through pointers into their middle, grouped by
 * allocation stack like leaks, largest first, at most HEAP_CHECK_MAX_LEAKS
 * of them.  They are not leaks (the verdict and the exit status ignore
 * them); HEAPCHECK_SHOW_POSSIBLY_LOST=0 leaves only the summary line. */
static void print_possible_records(const hci_report_in_t *in) {
  if (!hci_chk.show_possible || !in->npossible || !hci_chk_log_on(0)) return;
  hci_out_t *o = hci_os_map(sizeof *o);
  size_t copy_map, nb = 0, bmap = 0;
  hci_leak_t *objs;
  bucket_t *b = copy_buckets(in->possible, in->npossible, &objs, &copy_map, &nb, &bmap);
  if (o && b) {
    o->fd = hci_log_stream_fd();
    size_t limit = hci_chk.max_leaks > 0 && (size_t)hci_chk.max_leaks < nb ? (size_t)hci_chk.max_leaks : nb;
    hci_out_printf(o, "Possibly lost in check %s: %zu bytes in %zu objects, reached only through pointers into "
                      "their middle (not leaks). The %zu largest:\n",
                   in->name, in->possible_bytes, in->possible_objects, limit);
    for (size_t k = 0; k < limit; k++) {
      hci_out_printf(o, "Possibly lost %zu bytes in %zu objects allocated from:\n", b[k].bytes, b[k].count);
      print_frames(o, b[k].stack_id, in->symbolize);
      hci_out_flush(o);
    }
    if (limit < nb) hci_out_printf(o, "Skipping possibly lost records numbered %zu..%zu\n", limit, nb - 1);
    if (hci_chk.identify_leaks) /* where to look with a debugger, as for leaks */
      for (size_t k = 0; k < nb; k++)
        for (size_t i = b[k].first; i < b[k].first + b[k].count; i++)
          hci_out_printf(o, "possibly lost %zu byte object %p\n", objs[i].size, (void *)objs[i].addr);
    hci_out_flush(o);
  }
  if (b) hci_os_unmap(b, bmap);
  if (objs) hci_os_unmap(objs, copy_map);
  if (o) hci_os_unmap(o, sizeof *o);
}

/* valgrind's "possibly lost": alive for the verdict, said apart. */
static void print_possible(const hci_report_in_t *in) {
  if (!in->possible_objects) return;
  print_possible_records(in);
  hci_chk_log(0,
              "heapcheck: possibly lost: %zu bytes in %zu objects (reached only through pointers into their "
              "middle; not counted as leaks; HEAP_CHECK_MAX_POINTER_OFFSET=N makes pointers past N bytes not count)",
              in->possible_bytes, in->possible_objects);
}

void hci_report_print(const hci_report_in_t *in) {
  if (in->nleaks == 0) {
    hci_chk_log(0,
                "No leaks found for check \"%s\" (but no 100%% guarantee that there aren't any): found %zu "
                "reachable heap objects of %zu bytes",
                in->name, in->reach_objects, in->reach_bytes);
    print_possible(in);
    hci_supp_print_used();
    return;
  }
  hci_out_t *o = hci_os_map(sizeof *o);
  size_t copy_map, nb = 0, bmap = 0;
  hci_leak_t *leaks;
  bucket_t *b = copy_buckets(in->leaks, in->nleaks, &leaks, &copy_map, &nb, &bmap);
  if (!o || !b) {
    hci_chk_log(HCI_LOG_ERROR, "Leak check %s detected leaks of %zu bytes in %zu objects (out of memory for details)",
                in->name, in->bytes, in->nleaks);
  } else {
    o->fd = hci_log_stream_fd();
    if (hci_chk_log_on(HCI_LOG_ERROR)) print_records(o, in, leaks, b, nb);
    char path[4096];
    bool written = false;
    if (hci_chk.dump_profile) {
      profile_path(path, sizeof path, in->name);
      int err = write_profile(path, leaks, b, nb, in->nleaks, in->bytes);
      written = err == 0;
      if (err) {
        if (hci_chk_log_on(HCI_LOG_ERROR)) {
          hci_out_printf(o, "Failed dumping filtered heap profile to %s: %s (errno %d)\n", path,
                         err == EPERM && hci_is_secure() ? "the program runs setuid/setgid" : hci_errno_text(err),
                         err);
          hci_out_printf(o, "Could not write pprof profile to %s\n", path);
        }
      } else if (hci_chk_log_on(1)) {
        hci_out_printf(o, "heapcheck: leak profile written to %s\n", path);
      }
    }
    /* Never a hint naming a file that was not written. */
    if (written || !hci_chk.dump_profile) print_hint(o, written ? path : NULL);
    hci_out_flush(o);
  }
  hci_supp_print_used();
  if (in->at_exit)
    hci_chk_log(HCI_LOG_ERROR, "Exiting with error code (instead of crashing) because of whole-program memory leaks");
  print_possible(in);
  hci_chk_log(HCI_LOG_ERROR, "SUMMARY: heapcheck: %zu bytes leaked in %zu allocations", in->bytes, in->nleaks);
  if (b) hci_os_unmap(b, bmap);
  if (leaks) hci_os_unmap(leaks, copy_map);
  if (o) hci_os_unmap(o, sizeof *o);
}
