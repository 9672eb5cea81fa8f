/* inflate.c - a zlib stream (RFC 1950 around RFC 1951's DEFLATE) decoded
 * into a buffer of known size, for compressed debug sections.
 *
 * Purpose: Debian's detached debug files (libc6-dbg, every -dbgsym
 * package) and programs built with -gz keep .debug_* in SHF_COMPRESSED
 * sections; without them a report has function names but no file:line
 * where valgrind gives both.  heapcheck depends on no zlib, so the decoder
 * is ours: written from the RFCs, small rather than fast (it runs once per
 * section, when a report first needs it).
 *
 * Invariants: the input is untrusted.  Every read of it is bounds-checked
 * (a read past its end is an error, not a zero), every write and every
 * back-reference is checked against the output, code-length sets that are
 * over-subscribed or name codes beyond the alphabet are refused, and the
 * result must fill the output exactly and match the stream's Adler-32.
 * Any failure returns false; the caller treats the section as absent.
 *
 * Locks: none.  No allocation (the tables live on the stack, ~2.5 KiB).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hc_symbolize.h"

enum { MAX_BITS = 15, MAX_LITLEN = 288, MAX_DIST = 32, FAST_BITS = 9 };

typedef struct {
  const uint8_t *in;
  size_t in_len, in_pos;
  uint64_t bitbuf;  /* the next bits, least significant first (DEFLATE's order) */
  unsigned bitcnt;
  uint8_t *out;
  size_t out_len, out_pos;
} inflate_state_t;

/* A canonical Huffman code: count[len] codes of each length, their symbols
 * in code order, and a FAST_BITS-bit table of the short codes (entry:
 * symbol << 4 | length; 0 = a longer code, decoded bit by bit). */
typedef struct {
  uint16_t count[MAX_BITS + 1];
  uint16_t symbol[MAX_LITLEN];
  uint16_t fast[1u << FAST_BITS];
} huffman_t;

/* Up to 57 bits in the buffer, as many as the input still has. */
static void refill(inflate_state_t *s) {
  while (s->bitcnt <= 56 && s->in_pos < s->in_len) {
    s->bitbuf |= (uint64_t)s->in[s->in_pos++] << s->bitcnt;
    s->bitcnt += 8;
  }
}

/* n bits (n <= 32) into *v; false past the end of the input. */
static bool take_bits(inflate_state_t *s, unsigned n, unsigned *v) {
  if (s->bitcnt < n) refill(s);
  if (s->bitcnt < n) return false;
  *v = (unsigned)(s->bitbuf & ((1ull << n) - 1));
  s->bitbuf >>= n;
  s->bitcnt -= n;
  return true;
}

/* Builds h from n code lengths; false for an over-subscribed set (an
 * incomplete one is allowed: RFC 1951 has one-code distance trees, and a
 * code never assigned is refused when met). */
static bool huffman_build(huffman_t *h, const uint8_t *lengths, unsigned n) {
  memset(h->count, 0, sizeof h->count);
  memset(h->fast, 0, sizeof h->fast);
  for (unsigned i = 0; i < n; i++) h->count[lengths[i]]++;
  h->count[0] = 0;
  int left = 1;
  for (unsigned len = 1; len <= MAX_BITS; len++) {
    left = (left << 1) - h->count[len];
    if (left < 0) return false;
  }
  uint16_t offs[MAX_BITS + 2];
  offs[1] = 0;
  for (unsigned len = 1; len <= MAX_BITS; len++) offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
  /* The canonical code of each symbol, for the fast table: codes of a
   * length are consecutive from `code`, in symbol order. */
  unsigned code = 0, next_code[MAX_BITS + 1];
  for (unsigned len = 1; len <= MAX_BITS; len++) {
    code = (code + h->count[len - 1]) << 1; /* count[0] is 0 */
    next_code[len] = code;
  }
  for (unsigned i = 0; i < n; i++) {
    unsigned len = lengths[i];
    if (len == 0) continue;
    h->symbol[offs[len]++] = (uint16_t)i;
    unsigned c = next_code[len]++;
    if (len > FAST_BITS) continue;
    unsigned rev = 0; /* the stream sends a code's first bit first: reversed */
    for (unsigned b = 0; b < len; b++) rev |= ((c >> b) & 1u) << (len - 1 - b);
    for (unsigned k = rev; k < (1u << FAST_BITS); k += 1u << len) h->fast[k] = (uint16_t)(i << 4 | len);
  }
  return true;
}

/* The next symbol of code h; -1 for a code not in h or the end of input. */
static int huffman_decode(inflate_state_t *s, const huffman_t *h) {
  if (s->bitcnt < MAX_BITS) refill(s);
  unsigned e = h->fast[s->bitbuf & ((1u << FAST_BITS) - 1)];
  if (e != 0) {
    unsigned len = e & 15;
    if (len > s->bitcnt) return -1;
    s->bitbuf >>= len;
    s->bitcnt -= len;
    return (int)(e >> 4);
  }
  /* Bit by bit: first is the first code of this length, index its symbol's. */
  unsigned code = 0, first = 0, index = 0;
  for (unsigned len = 1; len <= MAX_BITS && len <= s->bitcnt; len++) {
    code |= (unsigned)(s->bitbuf >> (len - 1)) & 1u;
    unsigned count = h->count[len];
    if (code - first < count) {
      s->bitbuf >>= len;
      s->bitcnt -= len;
      return h->symbol[index + (code - first)];
    }
    index += count;
    first = (first + count) << 1;
    code <<= 1;
  }
  return -1;
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                       33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                       1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* One block's symbols up to its end code (256). */
static bool inflate_codes(inflate_state_t *s, const huffman_t *lit, const huffman_t *dist) {
  for (;;) {
    int sym = huffman_decode(s, lit);
    if (sym < 0) return false;
    if (sym < 256) {
      if (s->out_pos >= s->out_len) return false;
      s->out[s->out_pos++] = (uint8_t)sym;
      continue;
    }
    if (sym == 256) return true;
    sym -= 257;
    if (sym >= 29) return false;
    unsigned extra, len, d;
    if (!take_bits(s, len_extra[sym], &extra)) return false;
    len = len_base[sym] + extra;
    int ds = huffman_decode(s, dist);
    if (ds < 0 || ds >= 30 || !take_bits(s, dist_extra[ds], &extra)) return false;
    d = dist_base[ds] + extra;
    if (d > s->out_pos || len > s->out_len - s->out_pos) return false;
    uint8_t *o = s->out + s->out_pos; /* byte by byte: the copy may overlap its source */
    for (unsigned i = 0; i < len; i++) o[i] = o[(ptrdiff_t)i - (ptrdiff_t)d];
    s->out_pos += len;
  }
}

static bool inflate_stored(inflate_state_t *s) {
  unsigned len, nlen, b;
  if (!take_bits(s, s->bitcnt & 7, &b) || !take_bits(s, 16, &len) || !take_bits(s, 16, &nlen)) return false;
  if (len != (~nlen & 0xffffu) || len > s->out_len - s->out_pos) return false;
  for (unsigned i = 0; i < len; i++) {
    if (!take_bits(s, 8, &b)) return false;
    s->out[s->out_pos++] = (uint8_t)b;
  }
  return true;
}

static bool inflate_fixed(inflate_state_t *s) {
  uint8_t lengths[MAX_LITLEN + MAX_DIST];
  memset(lengths, 8, 144);
  memset(lengths + 144, 9, 112);
  memset(lengths + 256, 7, 24);
  memset(lengths + 280, 8, 8);
  memset(lengths + MAX_LITLEN, 5, MAX_DIST);
  huffman_t lit, dist;
  return huffman_build(&lit, lengths, MAX_LITLEN) && huffman_build(&dist, lengths + MAX_LITLEN, MAX_DIST) &&
         inflate_codes(s, &lit, &dist);
}

static bool inflate_dynamic(inflate_state_t *s) {
  static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  unsigned hlit, hdist, hclen, v;
  if (!take_bits(s, 5, &hlit) || !take_bits(s, 5, &hdist) || !take_bits(s, 4, &hclen)) return false;
  hlit += 257, hdist += 1, hclen += 4;
  if (hlit > 286 || hdist > 30) return false;
  uint8_t lengths[MAX_LITLEN + MAX_DIST];
  memset(lengths, 0, sizeof lengths);
  for (unsigned i = 0; i < hclen; i++) {
    if (!take_bits(s, 3, &v)) return false;
    lengths[order[i]] = (uint8_t)v;
  }
  huffman_t lencode, lit, dist;
  if (!huffman_build(&lencode, lengths, 19)) return false;
  memset(lengths, 0, sizeof lengths);
  for (unsigned i = 0; i < hlit + hdist;) {
    int sym = huffman_decode(s, &lencode);
    if (sym < 0) return false;
    if (sym < 16) {
      lengths[i++] = (uint8_t)sym;
      continue;
    }
    unsigned rep, value = 0;
    if (sym == 16) {
      if (i == 0 || !take_bits(s, 2, &rep)) return false;
      value = lengths[i - 1];
      rep += 3;
    } else if (sym == 17) {
      if (!take_bits(s, 3, &rep)) return false;
      rep += 3;
    } else {
      if (!take_bits(s, 7, &rep)) return false;
      rep += 11;
    }
    if (rep > hlit + hdist - i) return false;
    while (rep--) lengths[i++] = (uint8_t)value;
  }
  if (lengths[256] == 0) return false; /* no end-of-block code */
  return huffman_build(&lit, lengths, hlit) && huffman_build(&dist, lengths + hlit, hdist) &&
         inflate_codes(s, &lit, &dist);
}

static uint32_t adler32(const uint8_t *p, size_t n) {
  uint32_t a = 1, b = 0;
  while (n > 0) {
    size_t k = n < 5552 ? n : 5552; /* the most bytes before b can overflow 32 bits */
    n -= k;
    while (k--) {
      a += *p++;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return b << 16 | a;
}

bool hci_inflate_zlib(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len) {
  if (in_len < 6) return false;
  unsigned cmf = in[0], flg = in[1];
  /* deflate, a window of at most 32 KiB, no preset dictionary, check bits */
  if ((cmf & 15) != 8 || (cmf >> 4) > 7 || (flg & 0x20) || (cmf * 256 + flg) % 31 != 0) return false;
  inflate_state_t s = {.in = in + 2, .in_len = in_len - 2, .out = out, .out_len = out_len};
  unsigned last, type;
  do {
    if (!take_bits(&s, 1, &last) || !take_bits(&s, 2, &type)) return false;
    bool ok = type == 0 ? inflate_stored(&s) : type == 1 ? inflate_fixed(&s) : type == 2 ? inflate_dynamic(&s) : false;
    if (!ok) return false;
  } while (!last);
  if (s.out_pos != out_len) return false;
  /* The Adler-32 after the last block, big-endian, from the next byte. */
  unsigned pad, b[4];
  if (!take_bits(&s, s.bitcnt & 7, &pad)) return false;
  for (int i = 0; i < 4; i++)
    if (!take_bits(&s, 8, &b[i])) return false;
  uint32_t want = (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
  return adler32(out, out_len) == want;
}
