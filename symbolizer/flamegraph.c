/* flamegraph.c - flame graphs (one self-contained SVG) and folded stacks
 * of weighted allocation stacks: a leak report's records or a heap profile.
 *
 * Folded stacks: one line per stack, frames from the outermost (main) to
 * the allocation site joined by ';', a space, the weight ("main;f;g 640").
 * A frame is its function name, else "<module basename>+0x<offset>";
 * ';' inside a name becomes ':'.
 *
 * The SVG: frames merged by name into a tree (the root "all" at the bottom),
 * widths proportional to bytes, the title and tooltips with bytes, share and
 * objects.  A small script of our own (no network, no external file) zooms
 * on click (the frame's subtree fills the width, its ancestors are dimmed),
 * resets with "Reset zoom" or Escape, and searches ("Search" or Ctrl-F: a
 * regular expression; matches turn purple and the matched share is shown).
 * The URL query ?z=NAME zooms on the first frame named NAME and ?s=REGEX
 * searches at load (links to a view; the render test uses them).
 * Without scripts the graph still shows, with labels cut to fit.
 *
 * Callers: report_out.c (leak checks) and profile.c (heap profiles), with
 * the world running and outside malloc (the symbolizer is used).  Memory
 * comes from hci_os_map; output goes through hci_out_t.
 */
#include <string.h>
#include <unistd.h>

#include "hc_internal.h"
#include "hc_symbolize.h"

#define FG_W 1200
#define FG_PAD 10
#define FG_FH 16
#define FG_TOP 44
#define FG_BOTTOM 34

typedef struct node {
  const char *name;
  uint64_t value, count;
  uint32_t child, next; /* first child, next sibling (0 = none: node 0 is the root) */
  uint32_t depth;
} node_t;

typedef struct tree {
  node_t *v;
  size_t n, cap, map;
  char *names; /* fallback names "module+0xoff" */
  size_t names_len, names_cap;
  uint32_t max_depth;
} tree_t;

/* NULL for a hidden frame (hci_symbolize_hide): left out of the graph. */
static const char *frame_name(tree_t *t, uintptr_t pc) {
  hci_frame_t f;
  hci_symbolize(pc, &f);
  if (f.hidden) return NULL;
  if (f.function && *f.function) return f.function;
  const char *b = strrchr(f.module, '/');
  b = b ? b + 1 : f.module;
  if (!t->names || t->names_len + 300 > t->names_cap) return "?";
  char *s = t->names + t->names_len;
  int k = hci_snprintf(s, 300, "%s+0x%lx", b, (unsigned long)f.module_offset);
  t->names_len += (size_t)(k < 299 ? k : 299) + 1;
  return s;
}

static void tree_free(tree_t *t) {
  if (t->v) hci_os_unmap(t->v, t->map);
  if (t->names) hci_os_unmap(t->names, t->names_cap);
}

static int tree_build(tree_t *t, const hci_fg_item_t *items, size_t n) {
  memset(t, 0, sizeof *t);
  size_t frames = 1;
  for (size_t i = 0; i < n; i++) {
    const uintptr_t *pcs;
    int d = hci_depot_get(items[i].stack_id, &pcs);
    frames += d > 0 ? (size_t)d : 1;
  }
  t->cap = frames;
  t->map = (frames * sizeof(node_t) + 4095) & ~(size_t)4095;
  t->v = hci_os_map(t->map);
  t->names_cap = ((frames < 4096 ? frames : 4096) * 64 + 4095) & ~(size_t)4095;
  t->names = hci_os_map(t->names_cap);
  if (!t->v || !t->names) {
    tree_free(t);
    return -1;
  }
  t->n = 1;
  t->v[0].name = "all";
  for (size_t i = 0; i < n; i++) {
    const uintptr_t *pcs;
    int d = hci_depot_get(items[i].stack_id, &pcs);
    uint32_t cur = 0;
    t->v[0].value += items[i].value;
    t->v[0].count += items[i].count;
    for (int k = (d > 0 ? d : 1) - 1; k >= 0; k--) {
      const char *name = d > 0 ? frame_name(t, pcs[k]) : "(stack unknown)";
      if (!name) continue;
      uint32_t c = t->v[cur].child, last = 0;
      while (c && strcmp(t->v[c].name, name) != 0) {
        last = c;
        c = t->v[c].next;
      }
      if (!c) {
        if (t->n == t->cap) break;
        c = (uint32_t)t->n++;
        t->v[c].name = name;
        t->v[c].depth = t->v[cur].depth + 1;
        if (t->v[c].depth > t->max_depth) t->max_depth = t->v[c].depth;
        if (last) t->v[last].next = c;
        else t->v[cur].child = c;
      }
      t->v[c].value += items[i].value;
      t->v[c].count += items[i].count;
      cur = c;
    }
  }
  return 0;
}

// ---- folded ----

static void folded_name(hci_out_t *o, const char *s) {
  for (; *s; s++) {
    char c = *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s;
    hci_out_put(o, &c, 1);
  }
}

int hci_fg_write_folded(int fd, const hci_fg_item_t *items, size_t n) {
  hci_out_t *o = hci_out_new(fd);
  if (!o) return -1;
  tree_t names; /* only its fallback-name buffer */
  memset(&names, 0, sizeof names);
  names.names_cap = 1 << 16;
  names.names = hci_os_map(names.names_cap);
  for (size_t i = 0; i < n; i++) {
    const uintptr_t *pcs;
    int d = hci_depot_get(items[i].stack_id, &pcs);
    if (d <= 0) hci_out_puts(o, "(stack unknown)");
    bool first = true;
    for (int k = d - 1; k >= 0; k--) {
      names.names_len = 0;
      const char *name = frame_name(&names, pcs[k]);
      if (!name) continue;
      if (!first) hci_out_put(o, ";", 1);
      folded_name(o, name);
      first = false;
    }
    hci_out_printf(o, " %llu\n", (unsigned long long)items[i].value);
  }
  if (names.names) hci_os_unmap(names.names, names.names_cap);
  hci_out_flush(o);
  int rc = o->failed ? -1 : 0;
  hci_os_unmap(o, sizeof *o);
  return rc;
}

// ---- SVG ----

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void color(char *buf, size_t size, const char *name, int palette) {
  uint32_t h = hash_name(name);
  unsigned a = h % 55, b = (h >> 8) % 110, c = (h >> 16) % 45;
  if (palette == HCI_FG_LEAKS) hci_snprintf(buf, size, "rgb(%u,%u,%u)", 200 + a, 60 + b, 30 + c);
  else hci_snprintf(buf, size, "rgb(%u,%u,%u)", 40 + c, 150 + a + (b % 40), 60 + b / 2);
}

/* "1.5 MiB" style, integer arithmetic only. */
static void human(char *buf, size_t size, uint64_t v) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t scaled = v * 10;
  while (scaled >= 10240 && u < 4) {
    scaled /= 1024;
    u++;
  }
  if (u == 0) hci_snprintf(buf, size, "%llu B", (unsigned long long)v);
  else hci_snprintf(buf, size, "%llu.%llu %s", (unsigned long long)(scaled / 10), (unsigned long long)(scaled % 10), unit[u]);
}

static void label(hci_out_t *o, const char *name, double w) {
  int fit = (int)((w - 6) / 6.6);
  size_t len = strlen(name);
  if (fit < 3) return;
  if (len <= (size_t)fit) {
    hci_out_xml(o, name);
    return;
  }
  char buf[512];
  size_t k = (size_t)fit - 2 < sizeof buf - 3 ? (size_t)fit - 2 : sizeof buf - 3;
  while (k > 0 && ((unsigned char)name[k] & 0xc0) == 0x80) k--; /* never cut a UTF-8 sequence */
  memcpy(buf, name, k);
  memcpy(buf + k, "..", 3);
  hci_out_xml(o, buf);
}

static const char fg_style[] =
    "<style type=\"text/css\">\n"
    "text{font-family:monospace;font-size:11px;fill:#000}\n"
    "#title{font-size:15px}\n"
    ".f rect{stroke:#fff;stroke-width:0.5}\n"
    ".f:hover rect{stroke:#000;stroke-width:1}\n"
    ".f text{pointer-events:none}\n"
    ".anc rect{opacity:0.5}\n"
    ".btn{cursor:pointer;fill:#225}\n"
    ".hide{display:none}\n"
    "</style>\n";

/* The viewer: written for heapcheck (zoom, reset, search, details line). */
static const char fg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var HC = {frames: [], W: 0, pad: 10, zoomed: null, re: null};\n"
    "function hcLabel(f, w) {\n"
    "  var n = Math.floor((w - 6) / 6.6);\n"
    "  if (n < 3) return '';\n"
    "  return f.name.length <= n ? f.name : f.name.substring(0, n - 2) + '..';\n"
    "}\n"
    "function hcPlace(f, x, w) {\n"
    "  f.rect.setAttribute('x', x.toFixed(2));\n"
    "  f.rect.setAttribute('width', w.toFixed(2));\n"
    "  f.text.setAttribute('x', (x + 3).toFixed(2));\n"
    "  f.text.textContent = hcLabel(f, w);\n"
    "}\n"
    "function hcZoom(z) {\n"
    "  var full = HC.W - 2 * HC.pad, scale = full / z.w, eps = 1e-6;\n"
    "  HC.zoomed = z;\n"
    "  HC.frames.forEach(function (f) {\n"
    "    var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;\n"
    "    var covers = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;\n"
    "    if (f.d < z.d && covers) {\n"
    "      f.g.classList.add('anc'); f.g.style.display = ''; hcPlace(f, HC.pad, full);\n"
    "    } else if (f.d >= z.d && inside) {\n"
    "      f.g.classList.remove('anc'); f.g.style.display = '';\n"
    "      hcPlace(f, HC.pad + (f.x - z.x) * scale, f.w * scale);\n"
    "    } else {\n"
    "      f.g.style.display = 'none';\n"
    "    }\n"
    "  });\n"
    "  document.getElementById('unzoom').classList.remove('hide');\n"
    "}\n"
    "function hcReset() {\n"
    "  HC.zoomed = null;\n"
    "  HC.frames.forEach(function (f) {\n"
    "    f.g.classList.remove('anc'); f.g.style.display = ''; hcPlace(f, f.x, f.w);\n"
    "  });\n"
    "  document.getElementById('unzoom').classList.add('hide');\n"
    "}\n"
    "function hcMark(re) {\n"
    "  HC.re = re;\n"
    "  var spans = [];\n"
    "  HC.frames.forEach(function (f) {\n"
    "    var hit = re !== null && re.test(f.name);\n"
    "    f.rect.setAttribute('fill', hit ? 'rgb(200,60,220)' : f.fill);\n"
    "    if (hit) spans.push([f.x, f.x + f.w]);\n"
    "  });\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  var sum = 0, end = -1;\n"
    "  spans.forEach(function (s) {\n"
    "    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
    "    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
    "  });\n"
    "  var m = document.getElementById('matched'), b = document.getElementById('search');\n"
    "  if (re === null) { m.textContent = ' '; b.textContent = 'Search'; return; }\n"
    "  m.textContent = 'Matched: ' + (100 * sum / (HC.W - 2 * HC.pad)).toFixed(1) + '%';\n"
    "  b.textContent = 'Reset search';\n"
    "}\n"
    "function hcSearch(term) {\n"
    "  if (term === undefined) {\n"
    "    if (HC.re !== null) { hcMark(null); return; }\n"
    "    term = window.prompt('Search frames (regular expression):', '');\n"
    "  }\n"
    "  if (term === null || term === '') { hcMark(null); return; }\n"
    "  var re;\n"
    "  try { re = new RegExp(term); } catch (e) { window.alert('Bad regular expression: ' + e.message); return; }\n"
    "  hcMark(re);\n"
    "}\n"
    "function hcInit() {\n"
    "  var svg = document.documentElement, details = document.getElementById('details');\n"
    "  HC.W = +svg.getAttribute('width');\n"
    "  Array.prototype.forEach.call(document.querySelectorAll('g.f'), function (g) {\n"
    "    var r = g.querySelector('rect');\n"
    "    var f = {g: g, rect: r, text: g.querySelector('text'), name: g.getAttribute('data-name'),\n"
    "             info: g.querySelector('title').textContent, x: +r.getAttribute('x'),\n"
    "             w: +r.getAttribute('width'), d: +g.getAttribute('data-depth'), fill: r.getAttribute('fill')};\n"
    "    HC.frames.push(f);\n"
    "    g.addEventListener('click', function () { hcZoom(f); });\n"
    "    g.addEventListener('mouseover', function () { details.textContent = f.info; });\n"
    "    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "  });\n"
    "  document.getElementById('unzoom').addEventListener('click', hcReset);\n"
    "  document.getElementById('search').addEventListener('click', function () { hcSearch(); });\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); hcSearch(); }\n"
    "    else if (e.key === 'Escape') { hcReset(); hcMark(null); }\n"
    "  });\n"
    "  var qs = window.location.search || '', z = /[?&]z=([^&]*)/.exec(qs), q = /[?&]s=([^&]*)/.exec(qs);\n"
    "  if (z) {\n"
    "    var name = decodeURIComponent(z[1]);\n"
    "    for (var i = 0; i < HC.frames.length; i++) if (HC.frames[i].name === name) { hcZoom(HC.frames[i]); break; }\n"
    "  }\n"
    "  if (q) hcSearch(decodeURIComponent(q[1]));\n"
    "}\n"
    "]]></script>\n";

typedef struct layout {
  hci_out_t *o;
  const tree_t *t;
  double scale; /* pixels per unit */
  int height;
  int palette;
  const char *unit;
} layout_t;

static void draw(layout_t *L, uint32_t id, double x) {
  const node_t *nd = &L->t->v[id];
  double w = (double)nd->value * L->scale;
  if (w < 0.1) return;
  hci_out_t *o = L->o;
  int y = L->height - FG_BOTTOM - (int)(nd->depth + 1) * FG_FH;
  char fill[32], hb[32];
  color(fill, sizeof fill, nd->name, L->palette);
  human(hb, sizeof hb, nd->value);
  uint64_t total = L->t->v[0].value;
  unsigned long long pm = total ? (unsigned long long)((nd->value * 10000 + total / 2) / total) : 0;
  hci_out_printf(o, "<g class=\"f\" data-depth=\"%u\" data-name=\"", nd->depth);
  hci_out_xml(o, nd->name);
  hci_out_puts(o, "\"><title>");
  hci_out_xml(o, nd->name);
  hci_out_printf(o, " (%llu %s = %s, %llu.%02llu%%, %llu objects)</title>", (unsigned long long)nd->value, L->unit, hb,
                 pm / 100, pm % 100, (unsigned long long)nd->count);
  char xs[32], ws[32];
  /* two decimals without floating-point printf */
  hci_snprintf(xs, sizeof xs, "%llu.%02llu", (unsigned long long)x, (unsigned long long)((x - (double)(uint64_t)x) * 100));
  hci_snprintf(ws, sizeof ws, "%llu.%02llu", (unsigned long long)w, (unsigned long long)((w - (double)(uint64_t)w) * 100));
  hci_out_printf(o, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" rx=\"2\" fill=\"%s\"/>", xs, y, ws, FG_FH - 1, fill);
  char tx[32];
  double t3 = x + 3;
  hci_snprintf(tx, sizeof tx, "%llu.%02llu", (unsigned long long)t3, (unsigned long long)((t3 - (double)(uint64_t)t3) * 100));
  hci_out_printf(o, "<text x=\"%s\" y=\"%d\">", tx, y + FG_FH - 5);
  label(o, nd->name, w);
  hci_out_puts(o, "</text></g>\n");
  double cx = x;
  for (uint32_t c = nd->child; c; c = L->t->v[c].next) {
    draw(L, c, cx);
    cx += (double)L->t->v[c].value * L->scale;
  }
}

int hci_fg_write_svg(int fd, const hci_fg_item_t *items, size_t n, const char *title, const char *unit, int palette) {
  tree_t t;
  if (tree_build(&t, items, n) != 0) return -1;
  hci_out_t *o = hci_out_new(fd);
  if (!o) {
    tree_free(&t);
    return -1;
  }
  int height = FG_TOP + (int)(t.max_depth + 1) * FG_FH + FG_BOTTOM;
  hci_out_printf(o,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" onload=\"hcInit()\">\n",
                 FG_W, height, FG_W, height);
  hci_out_puts(o, "<!-- heapcheck flame graph: click a frame to zoom, Escape or \"Reset zoom\" to go back, "
                  "Ctrl-F or \"Search\" to highlight frames matching a regular expression -->\n");
  hci_out_puts(o, fg_style);
  hci_out_puts(o, fg_script);
  hci_out_printf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f6f6f0\"/>\n", FG_W, height);
  hci_out_printf(o, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">", FG_W / 2);
  hci_out_xml(o, title);
  hci_out_puts(o, "</text>\n");
  char hb[32];
  human(hb, sizeof hb, t.v[0].value);
  hci_out_printf(o, "<text id=\"total\" x=\"%d\" y=\"38\" text-anchor=\"middle\">total %llu %s (%s) in %llu objects</text>\n",
                 FG_W / 2, (unsigned long long)t.v[0].value, unit, hb, (unsigned long long)t.v[0].count);
  hci_out_printf(o, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"22\">Reset zoom</text>\n", FG_PAD);
  hci_out_printf(o, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"22\" text-anchor=\"end\">Search</text>\n",
                 FG_W - FG_PAD);
  hci_out_printf(o, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", FG_PAD, height - 12);
  hci_out_printf(o, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n", FG_W - FG_PAD, height - 12);
  hci_out_puts(o, "<g id=\"frames\">\n");
  if (t.v[0].value) {
    layout_t L = {.o = o, .t = &t, .scale = (double)(FG_W - 2 * FG_PAD) / (double)t.v[0].value, .height = height,
                  .palette = palette, .unit = unit};
    draw(&L, 0, FG_PAD);
  } else {
    hci_out_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">nothing to show (no %s)</text>\n", FG_W / 2,
                   height - FG_BOTTOM - 4, palette == HCI_FG_LEAKS ? "leaks" : "live samples");
  }
  hci_out_puts(o, "</g>\n</svg>\n");
  hci_out_flush(o);
  int rc = o->failed ? -1 : 0;
  hci_os_unmap(o, sizeof *o);
  tree_free(&t);
  return rc;
}

// ---- heap profiles ----
