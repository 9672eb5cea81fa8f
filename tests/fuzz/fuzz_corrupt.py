#!/usr/bin/env python3
"""fuzz_corrupt.py - corrupted binaries and debug files run under the checker.

Corrupts random bytes of a small program (tests/fuzz/fuzz_target.c, built
without frame pointers and with debug information) and of its separate
debug file, runs each copy without heapcheck and under HEAPCHECK=normal
(LD_PRELOAD), and fails when a copy crashes or hangs under the checker but
not without it: the corrupted program itself may fail, heapcheck's own code
(the DWARF unwinder reading .eh_frame_hdr/.eh_frame in every malloc, the
symbolizer reading .symtab, .strtab, .debug_line, .debug_info, notes and the
section table for the report) must not.

Cases (deterministic: case k uses seed + k):
  fixed   .eh_frame_hdr's fde_count set to 0x7fffffff, 0xffffffff and 0;
  exe     1-8 bytes of one section the loader does not use (.eh_frame_hdr,
          .eh_frame, .symtab, .strtab, .debug_*, notes, .gnu_debuglink), of
          the section table or of the ELF header's section fields;
  debug   the same for the debug file of the stripped program, found
          through its build-id under HEAPCHECK_DEBUG_DIR (no CRC to stop it);
  zdebug  the debug file with compressed sections (zlib: decoded by
          symbolizer/inflate.c, so its corrupted copies test the decoder);
  gnudebug  the same with GNU .zdebug_* sections (objcopy's zlib-gnu).

Usage: fuzz_corrupt.py TARGET LIBHEAPCHECK [--cases N] [--seed S] [--keep DIR]
Prints one line per failure and a closing "N passed, N failed" line.
"""
import argparse
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

TIMEOUT = 60
LOADER_FREE = ('.eh_frame_hdr', '.eh_frame', '.symtab', '.strtab', '.shstrtab', '.note.gnu.build-id',
               '.gnu_debuglink', '.comment')


def sections(data):
    """{name: (offset, size)} of an ELF64 file, plus the section table and header fields."""
    out = {}
    if len(data) < 64 or data[:4] != b'\x7fELF':
        return out
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    out['<ehdr-sh>'] = (0x28, 8)
    out['<ehdr-shnum>'] = (0x3a, 6)
    if shentsize != 64 or shoff + shnum * 64 > len(data) or shstrndx >= shnum:
        return out
    out['<shdrs>'] = (shoff, shnum * 64)
    hdrs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * 64) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    for h in hdrs[1:]:
        name_off, sh_type, _flags, _addr, off, size = h[:6]
        end = data.find(b'\0', stroff + name_off)
        name = data[stroff + name_off:end].decode('latin-1')
        if sh_type == 8 or size == 0 or off + size > len(data):  # NOBITS
            continue
        out[name] = (off, size)
    return out


def targets(secs):
    return sorted(n for n in secs if n in LOADER_FREE or n.startswith('.debug_') or n.startswith('.zdebug')
                  or n.startswith('<'))


def mutate(data, secs, rng):
    names = targets(secs)
    eh = [n for n in ('.eh_frame_hdr', '.eh_frame') if n in secs]
    # The unwinder reads these in every malloc: two cases in five go there.
    name = rng.choice(eh) if eh and rng.random() < 0.4 else rng.choice(names)
    off, size = secs[name]
    d = bytearray(data)
    what = []
    for _ in range(rng.randint(1, 8)):
        pos = off + rng.randrange(size)
        r = rng.random()
        if r < 0.25 and pos + 4 <= off + size:
            pos &= ~3
            val = rng.choice([0x7fffffff, 0xffffffff, 0x80000000, 0, 1, rng.getrandbits(32)])
            d[pos:pos + 4] = struct.pack('<I', val)
            what.append('%#x=%#x' % (pos, val))
        else:
            val = rng.choice([0, 0xff, 0x7f, 0x80, rng.getrandbits(8)])
            d[pos] = val
            what.append('%#x=%#x' % (pos, val))
    return bytes(d), '%s %s' % (name, ' '.join(what))


def run(exe, env):
    """('ok'|'crash'|'hang', status, output tail)"""
    try:
        p = subprocess.run([exe], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return 'hang', None, (e.output or b'')[-2000:]
    except OSError as e:  # not executable any more (a corrupted header the kernel rejects)
        return 'ok', str(e), b''
    if p.returncode < 0 and -p.returncode in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE,
                                              signal.SIGABRT, signal.SIGTRAP, signal.SIGSYS):
        return 'crash', p.returncode, p.stdout[-2000:]
    return 'ok', p.returncode, p.stdout[-2000:]


def base_env():
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith('HEAPCHECK') or k.startswith('HEAP_CHECK') or k.startswith('PERFTOOLS')
                   or k.startswith('HEAPPROFILE') or k == 'LD_PRELOAD')}
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('target')
    ap.add_argument('lib')
    ap.add_argument('--cases', type=int, default=240)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--keep', default=None)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix='hc_fuzz_corrupt.')
    keep = a.keep or os.path.join(work, 'failures')
    os.makedirs(keep, exist_ok=True)
    passed = failed = 0
    try:
        exe = os.path.join(work, 'prog')
        shutil.copy(a.target, exe)
        stripped = os.path.join(work, 'stripped')
        dbg = os.path.join(work, 'prog.debug')
        zdbg = os.path.join(work, 'prog.zdebug')
        gdbg = os.path.join(work, 'prog.gnudebug')
        subprocess.check_call(['objcopy', '--only-keep-debug', exe, dbg])
        subprocess.check_call(['objcopy', '--strip-all', exe, stripped])
        subprocess.check_call(['objcopy', '--compress-debug-sections=zlib', dbg, zdbg])
        subprocess.check_call(['objcopy', '--compress-debug-sections=zlib-gnu', dbg, gdbg])
        build_id = None
        out = subprocess.check_output(['readelf', '-n', exe]).decode()
        for line in out.splitlines():
            if 'Build ID:' in line:
                build_id = line.split('Build ID:')[1].strip()
        if not build_id:
            print('FAIL: %s has no build-id' % a.target)
            print('0 passed, 1 failed')
            return 1
        dbgroot = os.path.join(work, 'debug')
        dbgdir = os.path.join(dbgroot, '.build-id', build_id[:2])
        os.makedirs(dbgdir)
        dbgpath = os.path.join(dbgdir, build_id[2:] + '.debug')

        checked = dict(base_env(), LD_PRELOAD=a.lib, HEAPCHECK='normal', HEAPCHECK_DEBUG_DIR=dbgroot,
                       HEAP_CHECK_DUMP_DIRECTORY=work)
        plain = base_env()
        exe_data = open(exe, 'rb').read()
        dbg_data = open(dbg, 'rb').read()
        zdbg_data = open(zdbg, 'rb').read()
        gdbg_data = open(gdbg, 'rb').read()
        exe_secs, dbg_secs, zdbg_secs = sections(exe_data), sections(dbg_data), sections(zdbg_data)
        gdbg_secs = sections(gdbg_data)

        def check(label, prog, env, want_report, need=None):
            nonlocal passed, failed
            b = run(prog, plain)
            c = run(prog, env)
            bad = c[0] != 'ok' and b[0] == 'ok'
            if want_report and c[0] == 'ok':
                text = c[2].decode('latin-1')
                if 'SUMMARY: heapcheck:' not in text or ' fz_make ' not in text:
                    bad = True  # the control must show a symbolized report
                if need and need not in text:
                    bad = True  # and the line, read from the debug file
            if bad:
                failed += 1
                name = 'case%d' % (passed + failed)
                shutil.copy(prog, os.path.join(keep, name))
                print('FAIL %s: %s under heapcheck (status %s), %s without; kept as %s' %
                      (label, c[0], c[1], b[0], os.path.join(keep, name)))
                print(c[2].decode('latin-1')[-1500:])
            else:
                passed += 1

        # Controls: the pristine program and the stripped one with its debug file.
        shutil.copy(dbg, dbgpath)
        for u in ('dwarf', 'auto'):
            check('control exe %s' % u, exe, dict(checked, HEAPCHECK_UNWINDER=u), True)
            check('control stripped+debug %s' % u, stripped, dict(checked, HEAPCHECK_UNWINDER=u), True,
                  'fuzz_target.c:')
        # The same debug file with zlib-compressed sections, both forms: lines too.
        for z, zname in ((zdbg, 'zdebug'), (gdbg, 'gnudebug')):
            shutil.copy(z, dbgpath)
            for u in ('dwarf', 'auto'):
                check('control stripped+%s %s' % (zname, u), stripped, dict(checked, HEAPCHECK_UNWINDER=u), True,
                      'fuzz_target.c:')
        shutil.copy(dbg, dbgpath)

        def emit(path, data):
            with open(path, 'wb') as f:
                f.write(data)
            os.chmod(path, 0o755)

        # Fixed cases: an absurd fde_count in .eh_frame_hdr.
        hoff, hsize = exe_secs['.eh_frame_hdr']
        for val in (0x7fffffff, 0xffffffff, 0):
            d = bytearray(exe_data)
            d[hoff + 8:hoff + 12] = struct.pack('<I', val)
            prog = os.path.join(work, 'fixed')
            emit(prog, bytes(d))
            check('fde_count=%#x' % val, prog, dict(checked, HEAPCHECK_UNWINDER='dwarf'), val == 0x7fffffff)

        prog = os.path.join(work, 'case')
        for k in range(a.cases):
            rng = random.Random(a.seed + k)
            kind = ('exe', 'exe', 'debug', 'zdebug', 'exe', 'debug', 'gnudebug', 'zdebug')[k % 8]
            env = dict(checked, HEAPCHECK_UNWINDER='dwarf' if k % 2 else 'auto')
            if kind == 'exe':
                data, what = mutate(exe_data, exe_secs, rng)
                emit(prog, data)
                shutil.copy(dbg, dbgpath)
                check('case %d exe %s' % (k, what), prog, env, False)
            else:
                src, secs = {'debug': (dbg_data, dbg_secs), 'zdebug': (zdbg_data, zdbg_secs),
                             'gnudebug': (gdbg_data, gdbg_secs)}[kind]
                data, what = mutate(src, secs, rng)
                emit(dbgpath, data)
                check('case %d %s %s' % (k, kind, what), stripped, env, False)
    finally:
        if failed == 0 and not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
