#!/bin/bash
# preload_programs.sh - real programs run under LD_PRELOAD=$HC_LIB must print
# exactly what they print without it.
#
# For each program: one run without heapcheck, one with LD_PRELOAD=$HC_LIB;
# exit statuses and stdout are compared byte for byte.  The preloaded run
# also has LD_DEBUG=bindings (written to files, not stderr): the test
# requires a line binding the symbol `malloc' to libheapcheck, proof that the
# run was served by our allocator.
# python3, perl, sort, bash and git are required (the test fails without
# them); sqlite3 is skipped with "SKIP" when absent.
# Usage: HC_LIB=/path/libheapcheck.so bash preload_programs.sh
set -u
export LC_ALL=C
HC_LIB=${HC_LIB:?HC_LIB must name libheapcheck.so}
if [ ! -f "$HC_LIB" ]; then
  echo "FAIL: HC_LIB=$HC_LIB does not exist"
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hc_preload.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
passed=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

require() {
  command -v "$1" >/dev/null 2>&1 && return 0
  fail "required program '$1' is not installed"
  return 1
}

# run_pair NAME STDIN_FILE CMD... : runs CMD in $work/NAME.{plain,pre}/ (fresh
# directories, same relative layout), compares, checks the malloc binding.
run_pair() {
  local name=$1 input=$2
  shift 2
  local d=$work/$name
  mkdir -p "$d.plain" "$d.pre" "$d.ld"
  (cd "$d.plain" && "$@") <"$input" >"$d.out.plain" 2>"$d.err.plain"
  local rc_plain=$?
  (cd "$d.pre" && LD_PRELOAD=$HC_LIB LD_DEBUG=bindings LD_DEBUG_OUTPUT=$d.ld/bind "$@") \
    <"$input" >"$d.out.pre" 2>"$d.err.pre"
  local rc_pre=$?
  local ok=1
  if [ "$rc_plain" -ne 0 ]; then
    fail "$name: exits with status $rc_plain even without heapcheck: $(head -c 400 "$d.err.plain")"
    ok=0
  fi
  if [ "$rc_pre" -ne "$rc_plain" ]; then
    fail "$name: exit status $rc_pre with LD_PRELOAD, $rc_plain without; stderr: $(head -c 600 "$d.err.pre")"
    ok=0
  fi
  if ! cmp -s "$d.out.plain" "$d.out.pre"; then
    fail "$name: output differs with LD_PRELOAD ($(wc -c <"$d.out.plain") vs $(wc -c <"$d.out.pre") bytes)"
    diff "$d.out.plain" "$d.out.pre" | head -n 10
    ok=0
  fi
  if [ ! -s "$d.out.plain" ]; then
    fail "$name: printed nothing"
    ok=0
  fi
  # "binding file X [0] to /path/libheapcheck.so.0 [0]: normal symbol `malloc'"
  if ! cat "$d.ld"/bind.* 2>/dev/null | grep -q "to [^ ]*libheapcheck[^ ]* .*symbol \`malloc'"; then
    fail "$name: no 'malloc' bound to libheapcheck in LD_DEBUG=bindings output (not preloaded?)"
    ok=0
  fi
  if [ $ok = 1 ]; then
    passed=$((passed + 1))
    echo "ok   $name ($(wc -c <"$d.out.plain") bytes of identical output)"
  fi
  rm -rf "$d.plain" "$d.pre" "$d.ld"
}

nothing=/dev/null

# ---- python3: dicts, json round trip, sorting, with PYTHONMALLOC=malloc ----
if require python3; then
  # the real interpreter (python3 may be a shell shim, e.g. pyenv's)
  py=$(python3 -c 'import sys; print(sys.executable)')
  cat >"$work/work.py" <<'EOF'
import json, hashlib
d = {}
for i in range(200000):
    d["key%d" % i] = [i, str(i * 7919 % 100003), {"n": i % 97}]
s = json.dumps(d, sort_keys=True)
back = json.loads(s)
assert back == d
words = sorted(("w%x" % ((i * 2654435761) % 4294967296) for i in range(150000)), reverse=True)
nums = sorted((i * 7919) % 100003 for i in range(200000))
groups = {}
for w in words:
    groups.setdefault(w[:3], []).append(w)
text = " ".join(words[:50000]).upper().replace("W", "v")
print(len(s), hashlib.sha256(s.encode()).hexdigest())
print(words[:3], words[-3:], nums[:5], nums[-5:])
print(len(groups), sorted((k, len(v)) for k, v in groups.items())[:5])
print(hashlib.md5(text.encode()).hexdigest(), len(text))
big = [bytes(range(256)) * (i % 50 + 1) for i in range(5000)]
print(sum(len(b) for b in big), sum(big[-1]))
EOF
  PYTHONMALLOC=malloc PYTHONHASHSEED=0 run_pair python3 $nothing "$py" "$work/work.py"
fi

# ---- perl: hash of 200k keys, regexes ----
if require perl; then
  cat >"$work/work.pl" <<'EOF'
my %h;
for my $i (0 .. 199999) { $h{"key$i"} = $i * 7 % 10007; }
my $sum = 0; $sum += $_ for values %h;
my @k = sort keys %h;
my $m = 0;
for my $k (@k) { $m++ if $k =~ /^key(\d)\1/; }
my $s = join(",", @k[0 .. 999]);
(my $t = $s) =~ s/key(\d+)/<$1>/g;
my @parts = split /,/, $t;
print scalar(keys %h), " $sum $m ", length($t), " $parts[0] $parts[-1]\n";
my %inv; push @{$inv{$h{$_}}}, $_ for @k;
print scalar(keys %inv), " ", join(" ", map { scalar @{$inv{$_}} } (sort { $a <=> $b } keys %inv)[0 .. 9]), "\n";
EOF
  run_pair perl $nothing perl "$work/work.pl"
fi

# ---- sort: a 1M-line file ----
if require sort; then
  awk 'BEGIN { x = 12345; for (i = 0; i < 1000000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
       printf "%d %x line-%d\n", x % 100000, x, i } }' >"$work/lines.txt"
  run_pair sort "$work/lines.txt" sort -k1,1n -k2 --parallel=2 -S 64M
  run_pair sort_unique "$work/lines.txt" sort -u -t' ' -k1,1
fi

# ---- bash: a loop with an associative array and string growth ----
if require bash; then
  run_pair bash $nothing bash -c 'declare -A h; for ((i = 0; i < 60000; i++)); do h[k$i]=$((i * i % 977)); done
    s=0; for k in "${!h[@]}"; do s=$((s + h[$k])); done; echo "$s ${#h[@]}"
    str=; for i in {1..20000}; do str+="x$i"; done; echo "${#str}"; a=(); for i in {1..30000}; do a+=("$i"); done
    echo "${#a[@]} ${a[29999]}"'
fi

# ---- git: a scratch repository with 200 files ----
if require git; then
  cat >"$work/git.sh" <<'EOF'
set -e
export HOME=$PWD GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
  GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com \
  GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'
git -c init.defaultBranch=main init -q repo
cd repo
for i in $(seq 1 200); do
  mkdir -p "d$((i % 10))"
  seq 1 $((i * 5)) | sed "s/^/file $i line /" >"d$((i % 10))/f$i.txt"
done
git add .
git commit -q -m "200 files"
for i in $(seq 1 200 | awk 'NR % 7 == 0'); do echo "changed $i" >>"d$((i % 10))/f$i.txt"; done
rm d3/f13.txt
echo new >new.txt
git status --porcelain
git diff --stat | tail -n 3
git diff | sha256sum
git add -A
git commit -q -m "second"
git log --format='%H %s'
git ls-files | wc -l
git gc -q
git count-objects -v | grep -v size
git log -p | sha256sum
EOF
  run_pair git $nothing bash "$work/git.sh"
fi

# ---- sqlite3: a 100k-row table (optional) ----
if command -v sqlite3 >/dev/null 2>&1; then
  cat >"$work/work.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER, pad TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
INSERT INTO t SELECT i, 'k' || (i * 7919 % 1000), i * 31 % 10007, printf('%.*c', i % 200, 'x') FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(v), sum(length(pad)) FROM t;
SELECT k, count(*), sum(v), max(v) FROM t GROUP BY k ORDER BY sum(v) DESC LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.v = b.id WHERE a.k = 'k7';
SELECT group_concat(id) FROM (SELECT id FROM t WHERE v BETWEEN 100 AND 110 ORDER BY id LIMIT 20);
UPDATE t SET pad = upper(pad) || k WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
VACUUM;
SELECT count(*), sum(length(pad)), total(v) FROM t;
EOF
  run_pair sqlite3 "$work/work.sql" sqlite3 db.sqlite
else
  echo "SKIP sqlite3 (not installed)"
fi

echo "$passed programs identical under heapcheck, $failures failures"
[ "$failures" -eq 0 ]
