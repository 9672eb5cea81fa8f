#!/bin/sh
# test_suppress.sh - leak suppressions (HEAPCHECK_SUPPRESSIONS, LSan's
# "leak:<pattern>" lines) on the supp fixture:
#   leak_alpha 100 B | leak_beta 2 x 50 B | leak_owner 64 B owning a list of
#   5 x 32 B nodes (indirect, allocated by build_list) | leak_gamma 70 B
#
# Usage: test_suppress.sh   (HC_LIB, HC_FIXTURES set by meson; see
# tests/scenarios/fixtures.sh).  Exits 0 when every expectation holds.

. "$(dirname "$0")/scenarios/fixtures.sh"

supp=$dump/supp.txt

# ---- baseline: everything is reported ----
run HEAPCHECK=normal supp
expect_rc 1
has "Leak check _main_ detected leaks of 494 bytes in 10 objects"
has_re "^Indirect leak of 160 bytes in 5 objects allocated from:$"
lacks "Suppressions used"

# ---- function names, anchors, globs, comments ----
cat >"$supp" <<'EOF'
# known leaks of the fixture
leak:leak_alpha      # substring of a function name

  leak:^leak_bet?$
EOF
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" supp
expect_rc 1
has "Leak check _main_ detected leaks of 294 bytes in 7 objects"
lacks "leak_alpha "
lacks "leak_beta "
has_re "^	@ [0-9a-f]+ leak_gamma "
has_re "^-----------------------------------------------------$"
has_re "^Suppressions used:$"
has_re "^  count      bytes template$"
has_re "^      1        100 leak_alpha$"
has_re '^      2        100 \^leak_bet\?\$$'
has "SUMMARY: heapcheck: 294 bytes leaked in 7 allocations"
# The block comes after the records and before the final lines.
checks=$((checks + 1))
s=$(printf '%s\n' "$out" | grep -n '^Suppressions used:' | cut -d: -f1)
e=$(printf '%s\n' "$out" | grep -n '^Exiting with error code' | cut -d: -f1)
[ -n "$s" ] && [ -n "$e" ] && [ "$s" -lt "$e" ] || fail "Suppressions used: is not before the Exiting line"

# ---- an anchored pattern that does not match the whole name ----
printf 'leak:^leak_alph$\n' >"$supp"
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" supp
has "Leak check _main_ detected leaks of 494 bytes in 10 objects"
lacks "Suppressions used"

# ---- what only a suppressed leak reaches is not reported either ----
printf 'leak:leak_owner\n' >"$supp"
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" supp
expect_rc 1
has "Leak check _main_ detected leaks of 270 bytes in 4 objects"
lacks "Indirect leak"
lacks "build_list"
has_re "^      1         64 leak_owner$"

# ---- source file and module patterns; all suppressed = success ----
printf 'leak:scenarios/fx_supp.c\n' >"$supp"
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" supp
expect_rc 0
has "No leaks found for check \"_main_\""
has_re "^     10        494 scenarios/fx_supp\.c$"
lacks "SUMMARY"
printf 'leak:*/fx_s?pp\n' >"$supp"
run HEAPCHECK=normal HEAP_CHECK_SUPPRESSIONS="$supp" supp
expect_rc 0
has_re "^     10        494 \*/fx_s\?pp$"

# ---- bad lines: an error with file and line, the rest still applies ----
cat >"$supp" <<'EOF'
leak:leak_gamma
race:leak_alpha
leak_beta
leak:
leak:^$
EOF
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" supp
expect_rc 1
has "heapcheck: error: $supp:2: unknown suppression type (only \"leak\" is supported): \"race:leak_alpha\" (line ignored)"
has "heapcheck: error: $supp:3: expected leak:<pattern>: \"leak_beta\" (line ignored)"
has_re "^heapcheck: error: $supp:4: empty pattern"
has_re "^heapcheck: error: $supp:5: empty pattern"
has "Leak check _main_ detected leaks of 424 bytes in 9 objects"
has_re "^      1         70 leak_gamma$"
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$dump/missing.txt" supp
expect_rc 1
has "heapcheck: error: cannot open suppressions file $dump/missing.txt"
has "Leak check _main_ detected leaks of 494 bytes in 10 objects"

# ---- scoped checks and the on-demand check honour them too (knobs disable) ----
printf 'leak:disable\n' >"$supp"
PRELOAD=no
run HEAPCHECK=normal HEAPCHECK_SUPPRESSIONS="$supp" knobs disable
expect_rc 0
has_re "^      1         40 disable$"
PRELOAD=yes

finish
