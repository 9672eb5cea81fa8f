#!/bin/sh
# test_realign.sh LIBHEAPCHECK.so FIXTURE FIXTURE_FP CC_ID - allocation stacks
# through frames whose CFI uses DWARF expressions (stacks/unwind_cfi.c's
# eval_expr): GCC's realigned frames (CFA = *(rbp - N), registers saved at
# rbp + M) and OpenSSL perlasm's (CFA = *(rsp + N) + 8), read from the real
# report of tests/realign_fixture.c under HEAPCHECK=normal.  Before, the
# walk stopped at such a frame (make -> realigned, no main; valgrind goes
# on to main).
#
# FIXTURE: built -O2 -fomit-frame-pointer, walked with the default
# (auto: malloc's callers have no frame pointer, so the DWARF walk) and
# with HEAPCHECK_UNWINDER=dwarf.  FIXTURE_FP: the same with frame pointers:
# auto takes the frame-pointer walk, which crosses a GCC realigned frame by
# the frame record its prologue builds (c_direct, whose rule is an
# expression, goes by DWARF).  CC_ID: meson's compiler id; with gcc the
# fixture's c_realigned must have an expression CFA (else the case lost its
# point), clang keeps rbp there (an ordinary frame) and the asm cases carry
# the expressions.
. "$(dirname "$0")/expect.sh"

lib=${1:?usage: test_realign.sh LIB FIXTURE FIXTURE_FP CC_ID}
fx=${2:?}
fx_fp=${3:?}
cc_id=${4:?}
expect_private_env hc_realign

run() {
  cur="$*"
  out=$(env LD_PRELOAD="$lib" HEAPCHECK=normal "$@" 2>&1)
  rc=$?
}

# chain FRAMES...: every leak record whose first frame is $1 has the
# frames FRAMES, in this order, from its first; at least one such record.
chain() {
  checks=$((checks + 1))
  _got=$(printf '%s\n' "$out" | awk -v want="$*" '
    /^Leak of / { if (inrec) done_rec(); inrec = 1; n = 0; next }
    inrec && /^\t@ / { f[n++] = $3; next }
    inrec { done_rec(); inrec = 0 }
    END { if (inrec) done_rec(); print found ":" bad }
    function done_rec(   k, w, m, i, s) {
      m = split(want, w, " ")
      if (n == 0 || f[0] != w[1]) return
      found++
      for (i = 1; i <= m; i++) if (i > n || f[i - 1] != w[i]) {
        s = ""; for (k = 0; k < n; k++) s = s " " f[k]
        bad = bad "[" s " ]"; return
      }
    }')
  case $_got in
  0:*) fail "no leak record starts at $1" ;;
  *:) ;;
  *) fail "want $*, got ${_got#*:}" ;;
  esac
}

# The frames each case must show (realign_fixture.c).
all_cases() {
  chain make_a c_realigned outer_a main
  chain make_b asm_drap outer_b main
  chain make_c asm_perl outer_c main
  chain c_direct outer_d main
  chain make_e asm_ops outer_e main
}

# The fixture is what it claims: expression CFAs where the CFI says so.
cfa_kinds() { # FUNCTION: the CFA column of its rows, e.g. "rsp+8 r10+0 exp"
  _pc=$(nm "$fx" | awk -v f="$1" '$3 == f { print $1 }')
  readelf --debug-dump=frames-interp "$fx" |
    awk -v pc="pc=$_pc" 'index($0, pc) { on = 1; next } on && /^$/ { exit } on && $1 ~ /^[0-9a-f]+$/ { print $2 }' |
    tr '\n' ' '
}
if command -v readelf >/dev/null 2>&1; then
  for f in asm_drap asm_perl asm_ops $([ "$cc_id" = gcc ] && echo c_realigned c_direct); do
    cur="CFI of $f"
    checks=$((checks + 1))
    case " $(cfa_kinds "$f") " in
    *" exp "*) ;;
    *) fail "$f: no row with an expression CFA (readelf: $(cfa_kinds "$f"))" ;;
    esac
  done
fi

run "$fx"
expect_rc 1
if [ "$cc_id" = gcc ]; then
  all_cases
else
  # clang: c_direct keeps rbp as a frame pointer, so auto walks by frame
  # pointers from it, and those skip the frameless main above outer_d (the
  # frame-pointer walk's limit, HEAPCHECK_UNWINDER in leak-checking.md).
  chain make_a c_realigned outer_a main
  chain make_b asm_drap outer_b main
  chain make_c asm_perl outer_c main
  chain c_direct outer_d
  chain make_e asm_ops outer_e main
fi

run env HEAPCHECK_UNWINDER=dwarf "$fx"
expect_rc 1
all_cases

# Frame pointers: the frame-pointer walk for malloc's callers that keep one.
run "$fx_fp"
expect_rc 1
chain make_a c_realigned outer_a main
chain make_b asm_drap outer_b main
# asm_perl keeps no frame record: a frame-pointer walk skips its caller
# outer_c (the limit of frame pointers); main is still reached.
chain make_c asm_perl
has_re "^	@ [0-9a-f]+ main "
chain c_direct outer_d main
chain make_e asm_ops outer_e main

run env HEAPCHECK_UNWINDER=dwarf "$fx_fp"
expect_rc 1
all_cases

finish test_realign
