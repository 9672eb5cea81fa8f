#!/usr/bin/env python3
"""test_inflate.py - the zlib decoder of compressed debug sections.

symbolizer/inflate.c against Python's zlib (the reference encoder):
  round trips  payloads of many shapes and sizes, every compression level,
               the stored, fixed-Huffman, Huffman-only and RLE strategies
               and windows of 2^8..2^15 bytes decode to exactly the input;
  refusals     every prefix of a stream, a stream with its Adler-32 or a
               byte changed, a size one too small or too large, and zlib
               headers that are not deflate or ask for a dictionary are
               refused (exit 1), never accepted with other bytes and
               never a crash;
  report       a copy of FIXTURE with its .debug_* sections made
               SHF_COMPRESSED (zlib), and one with GNU .zdebug_* sections,
               leak under HEAPCHECK=normal with LIB
               preloaded: each report names inflate_fixture.c and the leak's
               line, read from the compressed .debug_line.

Usage: test_inflate.py TOOL [FIXTURE LIB]
Prints each failure and a closing "N passed, N failed" line.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

passed = failed = 0


def result(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print('FAIL: ' + what)


def decode(tool, work, stream, size):
    src, dst = os.path.join(work, 'in'), os.path.join(work, 'out')
    with open(src, 'wb') as f:
        f.write(stream)
    if os.path.exists(dst):
        os.unlink(dst)
    rc = subprocess.run([tool, src, str(size), dst], timeout=60).returncode
    data = open(dst, 'rb').read() if rc == 0 else None
    return rc, data


def payloads(rng):
    text = b''.join(rng.choice([b'the ', b'heap ', b'leak ', b'checker ', b'\n', b'0x7f', b'DW_AT_name '])
                    for _ in range(40000))
    yield 'one byte', b'x'
    yield 'zeros 100k', bytes(100000)
    yield 'random 1k', rng.randbytes(1000)
    yield 'random 70k', rng.randbytes(70000)  # stored blocks above 64 KiB
    yield 'text', text
    yield 'text 300k', text * 2 + bytes(rng.randrange(256) for _ in range(1000))
    yield 'runs', b''.join(bytes([rng.randrange(4)]) * rng.randrange(1, 300) for _ in range(2000))
    for n in (2, 3, 17, 258, 259, 32768, 32769):
        yield 'random %d' % n, rng.randbytes(n)
    with open(sys.argv[1], 'rb') as f:
        yield 'the tool itself', f.read()


def round_trips(tool, work, rng):
    strategies = [('default', zlib.Z_DEFAULT_STRATEGY), ('fixed', zlib.Z_FIXED),
                  ('huffman-only', zlib.Z_HUFFMAN_ONLY), ('rle', zlib.Z_RLE), ('filtered', zlib.Z_FILTERED)]
    for name, data in payloads(rng):
        for level in (0, 1, 6, 9):
            for sname, strat in strategies:
                if level == 0 and strat != zlib.Z_DEFAULT_STRATEGY:
                    continue
                c = zlib.compressobj(level, zlib.DEFLATED, 15, 9, strat)
                stream = c.compress(data) + c.flush()
                rc, out = decode(tool, work, stream, len(data))
                result(rc == 0 and out == data, 'round trip %s level %d %s: rc %d' % (name, level, sname, rc))
        for wbits in (8, 9, 12):
            c = zlib.compressobj(6, zlib.DEFLATED, wbits)
            stream = c.compress(data) + c.flush()
            rc, out = decode(tool, work, stream, len(data))
            result(rc == 0 and out == data, 'round trip %s window 2^%d: rc %d' % (name, wbits, rc))


def refusals(tool, work, rng):
    data = b''.join(rng.choice([b'alpha ', b'beta ', b'gamma\n']) for _ in range(3000)) + rng.randbytes(300)
    stream = zlib.compress(data, 6)
    # Every prefix of a short stream: refused, never a crash.
    small = zlib.compress(data[:400], 9)
    for cut in range(len(small)):
        rc, _ = decode(tool, work, small[:cut], 400)
        result(rc == 1, 'prefix of %d bytes of %d: rc %d (want 1)' % (cut, len(small), rc))
    for cut in range(0, len(stream), max(1, len(stream) // 40)):
        rc, _ = decode(tool, work, stream[:cut], len(data))
        result(rc == 1, 'prefix of %d bytes: rc %d (want 1)' % (cut, rc))
    # The wrong size, either way.
    for size in (len(data) - 1, len(data) + 1, 0):
        rc, _ = decode(tool, work, stream, size)
        result(rc == 1, 'size %d for %d bytes: rc %d (want 1)' % (size, len(data), rc))
    # The Adler-32 changed.
    bad = stream[:-1] + bytes([stream[-1] ^ 1])
    rc, _ = decode(tool, work, bad, len(data))
    result(rc == 1, 'Adler-32 changed: rc %d (want 1)' % rc)
    # Headers: not deflate, a window over 32 KiB, a preset dictionary, a bad check.
    for hdr, what in ((bytes([0x79, 0x9c]), 'method 9'), (bytes([0x88, 0x1c]), 'window 2^16'),
                      (bytes([0x78, 0xbb]), 'FDICT'), (bytes([0x78, 0x9d]), 'FCHECK')):
        rc, _ = decode(tool, work, hdr + stream[2:], len(data))
        result(rc == 1, 'header %s: rc %d (want 1)' % (what, rc))
    # Bytes changed at random: refused or, when the result still checks, the
    # original bytes (a change the Adler-32 cannot see); never a crash.
    for k in range(300):
        d = bytearray(stream)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(2, len(d))
            d[i] ^= 1 << rng.randrange(8)
        rc, out = decode(tool, work, bytes(d), len(data))
        result(rc == 1 or (rc == 0 and out is not None), 'mutation %d: rc %d' % (k, rc))


def compress_debug(src, dst, gnu=False):
    """Copies ELF64 file src to dst with every .debug_* section but the
    string tables compressed (zlib), whatever their size (the linker and
    objcopy leave a section alone when compression does not pay, and a
    small program's all are): SHF_COMPRESSED with an Elf64_Chdr, or with
    gnu the older form, renamed .zdebug_* ("ZLIB", the size in 8 big-endian
    bytes, the stream).  Each new body, the section-name table (with gnu)
    and the section headers are appended to the file."""
    d = bytearray(open(src, 'rb').read())
    shoff, = struct.unpack_from('<Q', d, 0x28)
    shnum, shstrndx = struct.unpack_from('<HH', d, 0x3c)
    hdrs = [list(struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * 64)) for i in range(shnum)]
    stroff, strsize = hdrs[shstrndx][4], hdrs[shstrndx][5]
    names = bytearray(d[stroff:stroff + strsize])
    done = []

    def append(body):
        while len(d) % 8:
            d.append(0)
        at = len(d)
        d.extend(body)
        return at

    for h in hdrs:
        name = names[h[0]:names.index(b'\0', h[0])].decode()
        if not name.startswith('.debug_') or name.endswith('str') or h[2] & 0x800 or h[1] == 8:
            continue
        body = bytes(d[h[4]:h[4] + h[5]])
        if gnu:
            packed = b'ZLIB' + struct.pack('>Q', len(body)) + zlib.compress(body, 9)
            h[0] = len(names)
            names.extend(b'.z' + name[1:].encode() + b'\0')
        else:
            packed = struct.pack('<IIQQ', 1, 0, len(body), max(h[8], 1)) + zlib.compress(body, 9)
            h[2] |= 0x800  # SHF_COMPRESSED
            h[8] = 8
        h[4], h[5] = append(packed), len(packed)
        done.append(name)
    if gnu:
        hdrs[shstrndx][4], hdrs[shstrndx][5] = append(bytes(names)), len(names)
    new_shoff = append(b''.join(struct.pack('<IIQQQQIIQQ', *h) for h in hdrs))
    struct.pack_into('<Q', d, 0x28, new_shoff)
    with open(dst, 'wb') as f:
        f.write(d)
    os.chmod(dst, 0o755)
    return done


def report(fixture, lib, work):
    line = [i for i, t in enumerate(open(os.path.join(os.path.dirname(__file__), 'inflate_fixture.c')), 1)
            if 'INFLATE_FIXTURE_LEAK_LINE' in t][0]
    packed = os.path.join(work, 'inflate_fixture')
    done = compress_debug(fixture, packed)
    result('.debug_line' in done and '.debug_info' in done, 'sections compressed: %s' % done)
    sections = subprocess.run(['readelf', '-S', '-W', packed], capture_output=True, text=True).stdout
    compressed = [s for s in sections.splitlines() if '.debug_line ' in s and ' C ' in s]
    result(bool(compressed), 'readelf sees a compressed .debug_line:\n' + sections)
    # The older GNU form: .zdebug_* sections ("ZLIB", a big-endian size).
    gnu = os.path.join(work, 'inflate_fixture_gnu')
    done = compress_debug(fixture, gnu, gnu=True)
    sections = subprocess.run(['readelf', '-S', '-W', gnu], capture_output=True, text=True).stdout
    result('.debug_line' in done and '.zdebug_line' in sections and '.debug_line ' not in sections,
           'sections renamed .zdebug_* and compressed: %s\n%s' % (done, sections))
    env = dict(os.environ, HEAPCHECK='normal', LD_PRELOAD=lib)
    want = 'inflate_fixture.c:%d' % line
    for prog, form in ((packed, 'SHF_COMPRESSED'), (gnu, '.zdebug')):
        p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=120)
        result(p.returncode == 1 and want in p.stderr and 'inflate_fixture_leak' in p.stderr,
               'report of the fixture with %s sections: exit %d, wants %s:\n%s' %
               (form, p.returncode, want, p.stderr[-2000:]))


def main():
    tool = sys.argv[1]
    rng = random.Random(20261207)
    with tempfile.TemporaryDirectory(prefix='hc_inflate.') as work:
        round_trips(tool, work, rng)
        refusals(tool, work, rng)
        if len(sys.argv) > 3:
            report(sys.argv[2], sys.argv[3], work)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
