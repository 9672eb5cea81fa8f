/* flood_scc.c - the leaked structures: the graph of pointers between leaks
 * and its strongly connected components (Tarjan), so that classification
 * (flood_classify.c) makes one leak per leaked structure direct whatever the
 * objects' addresses.
 * Runs with the world stopped, after the leaks are collected and sorted by
 * address; memory from hci_os_map only (no malloc, no locks).  Leak objects
 * are read through the classification flood's fault-proof scan
 * (hci_fl_drain with covered_mode 2).
 */
#include "flood_internal.h"

static bool add_edge(leak_graph_t *g, uint32_t to) {
  if (g->nto == g->to_cap) {
    size_t ncap = g->to_cap ? g->to_cap * 2 : 16384;
    uint32_t *n = hci_fl_grow(g->to, g->to_cap * sizeof *n, ncap * sizeof *n);
    if (!n) return false;
    g->to = n;
    g->to_cap = ncap;
  }
  g->to[g->nto++] = to;
  return true;
}

void hci_fl_scan_edges(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta) {
  leak_graph_t *g = f->graph;
  uintptr_t a = (uintptr_t)f->p->align;
  for (uintptr_t q = (lo + a - 1) & ~(a - 1); q + sizeof(uintptr_t) <= hi && !g->failed; q += a) {
    uintptr_t v, start;
    size_t size;
    memcpy(&v, (const void *)(q + delta), sizeof v);
    uint8_t *mk = hci_fl_resolve(f, v, &start, &size);
    if (!mk || !(*mk & M_LEAK)) continue;
    hci_leak_t *l = hci_fl_find_leak(f, start);
    if (!l) continue;
    uint32_t j = (uint32_t)(l - f->r->leaks);
    if (j != g->from && !add_edge(g, j)) g->failed = true;
  }
}

/* Tarjan's algorithm, iterative (a leaked list of millions of nodes would
 * overflow a recursive one).  num[v]: visit order + 1 (0: not yet);
 * low[v]: the lowest num reachable through v's subtree and one back edge;
 * comp[v]: once v's component is complete, its lowest index (= lowest
 * address).  flag[] (the result) holds ON_STACK while running, then
 * POINTED_TO on a component's lowest member. */
enum { ON_STACK = 1, POINTED_TO = 2 };

static void tarjan(const leak_graph_t *g, uint32_t n, uint32_t *num, uint32_t *low, uint32_t *comp, uint32_t *stk,
                   uint32_t *cs_node, size_t *cs_edge, uint8_t *flag) {
  uint32_t counter = 0, sp = 0, csp = 0;
  for (uint32_t r = 0; r < n; r++) {
    if (num[r]) continue;
    num[r] = low[r] = ++counter;
    stk[sp++] = r;
    flag[r] |= ON_STACK;
    cs_node[csp] = r;
    cs_edge[csp++] = g->off[r];
    while (csp) {
      uint32_t v = cs_node[csp - 1];
      if (cs_edge[csp - 1] < g->off[v + 1]) {
        uint32_t w = g->to[cs_edge[csp - 1]++];
        if (!num[w]) {
          num[w] = low[w] = ++counter;
          stk[sp++] = w;
          flag[w] |= ON_STACK;
          cs_node[csp] = w;
          cs_edge[csp++] = g->off[w];
        } else if ((flag[w] & ON_STACK) && num[w] < low[v]) {
          low[v] = num[w];
        }
        continue;
      }
      csp--;
      if (csp && low[v] < low[cs_node[csp - 1]]) low[cs_node[csp - 1]] = low[v];
      if (low[v] != num[v]) continue;
      /* v roots a component: the members are on stk above it */
      uint32_t first = sp, least = v;
      do {
        first--;
        if (stk[first] < least) least = stk[first];
      } while (stk[first] != v);
      for (uint32_t k = first; k < sp; k++) {
        comp[stk[k]] = least;
        flag[stk[k]] &= (uint8_t)~ON_STACK;
      }
      sp = first;
    }
  }
}

uint8_t *hci_fl_structure_leaders(flood_t *f, size_t *map) {
  hci_flood_result_t *r = f->r;
  if (r->nleaks >= UINT32_MAX) return NULL;
  uint32_t n = (uint32_t)r->nleaks;
  leak_graph_t g = {0};
  size_t off_bytes = ((size_t)n + 1) * sizeof *g.off;
  g.off = hci_os_map(off_bytes);
  if (!g.off) return NULL;
  f->graph = &g;
  f->covered_mode = 2;
  for (uint32_t i = 0; i < n && !g.failed; i++) {
    g.off[i] = g.nto;
    g.from = i;
    push_obj(f, r->leaks[i].addr, r->leaks[i].size);
    hci_fl_drain(f);
  }
  g.off[n] = g.nto;
  f->covered_mode = 0;
  f->graph = NULL;
  /* one mapping: flag[n] first (the result), then the 4-byte arrays, then cs_edge */
  size_t flag_bytes = ((size_t)n + 7) & ~(size_t)7;
  size_t bytes = flag_bytes + (size_t)n * (5 * sizeof(uint32_t) + sizeof(size_t));
  uint8_t *mem = g.failed ? NULL : hci_os_map(bytes);
  if (mem) {
    uint8_t *flag = mem;
    size_t *cs_edge = (size_t *)(void *)(mem + flag_bytes);
    uint32_t *num = (uint32_t *)(void *)(cs_edge + n), *low = num + n, *comp = low + n, *stk = comp + n,
             *cs_node = stk + n;
    tarjan(&g, n, num, low, comp, stk, cs_node, cs_edge, flag);
    for (uint32_t i = 0; i < n; i++)
      for (size_t e = g.off[i]; e < g.off[i + 1]; e++)
        if (comp[g.to[e]] != comp[i]) flag[comp[g.to[e]]] |= POINTED_TO;
    for (uint32_t i = 0; i < n; i++) flag[i] = comp[i] == i && !(flag[i] & POINTED_TO);
    *map = bytes;
  }
  hci_os_unmap(g.off, off_bytes);
  if (g.to) hci_os_unmap(g.to, g.to_cap * sizeof *g.to);
  return mem;
}
