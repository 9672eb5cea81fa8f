#!/usr/bin/env bash
# test_layers.sh - the seams between the layers hold in the built objects and
# in the sources (docs/design.md, "Folders" and "The heap view").
#
# Usage: test_layers.sh NM SOURCE_DIR base.a stacks.a allocator.a symbolizer.a
#                       checker.a profiler.a runtime.a entry.a
#
# 1. No object of a layer references a symbol defined by a layer above it
#    (base < stacks < allocator < symbolizer < checker|profiler < runtime).
# 2. The checker and the profiler reference no writable allocator data
#    (globals the allocator owns are reached through its setters and the heap
#    view); read-only tables and the pagemap (hci_pagemap) the inline view reads are
#    allowed.
# 3. No source above allocator/ reads span, pagemap or page-heap internals:
#    the heap view (allocator/hc_heap_view.h) is the one door.
# 4. No library source reads the environment but through the options table.
# 5. docs/design.md names every library source file.
# 6. The checker's marks are the checker's: no allocator source names them
#    (hc_span_t has no mark field; the view only indexes the caller's table).
# 7. Each group of a thread's state (hc_tcache_t) is touched only by its
#    owners (docs/design.md, "The rules of each seam").
# Exit status 0 when all hold; 1 with every violation printed.
set -u
NM=$1 SRC=$2
shift 2
names=(base stacks allocator symbolizer checker profiler runtime entry)
declare -A lib rank
ranks=(0 1 2 3 4 4 5 5)
for i in "${!names[@]}"; do
  lib[${names[$i]}]=$1
  rank[${names[$i]}]=${ranks[$i]}
  shift
done
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Defined (global) and undefined symbols of each layer.
for n in "${names[@]}"; do
  "$NM" -g --defined-only "${lib[$n]}" 2>/dev/null | awk 'NF >= 3 {print $2, $3}' | sort -u -k2 >"$tmp/$n.def"
  "$NM" -g --undefined-only "${lib[$n]}" 2>/dev/null | awk '{print $NF}' | sort -u >"$tmp/$n.undef"
  [ -s "$tmp/$n.def" ] || { echo "FAIL: no symbols read from ${lib[$n]}"; fail=1; }
done

# 1. Calls point down.
for n in "${names[@]}"; do
  for m in "${names[@]}"; do
    [ "${rank[$m]}" -gt "${rank[$n]}" ] || continue
    # The project's own names only (the malloc family and dlclose are libc's too).
    awk '$2 ~ /^(hci?_|_Z.*HeapLeakChecker|MallocExtension|__lsan_)/ {print $2}' "$tmp/$m.def" | sort -u >"$tmp/m.names"
    bad=$(comm -12 "$tmp/$n.undef" "$tmp/m.names")
    if [ -n "$bad" ]; then
      echo "FAIL: $n/ references symbols of $m/ (a layer above):" $bad
      fail=1
    fi
  done
done

# 2. No writable allocator data referenced from above (types B, D: bss and data).
# Read by inline code of the allocator's headers (hci_ensure_init, the heap view).
allowed='hci_pagemap|hci_init_state'
allowed="^($allowed)\$"
awk '$1 ~ /^[BDbdS]$/ {print $2}' "$tmp/allocator.def" | sort -u >"$tmp/alloc.data"
for n in checker profiler; do
  bad=$(comm -12 "$tmp/$n.undef" "$tmp/alloc.data" | grep -Ev "$allowed")
  if [ -n "$bad" ]; then
    echo "FAIL: $n/ references allocator data directly (use the allocator's accessors):" $bad
    fail=1
  fi
done

# 3. The heap view is the one door.
pat='hci_pagemap_find|hci_pagemap_span|hci_pagemap_class|hc_pm_entry_t|->objmeta|->carved|->req_size|->snext|hci_samples\.|hci_pageheap\.|->is_sampled|->sample_est|HC_SPAN_(SMALL|LARGE|FREE|STASHED)'
hits=$(grep -nE "$pat" "$SRC"/checker/*.[ch] "$SRC"/profiler/*.[ch] "$SRC"/runtime/*.[ch] "$SRC"/symbolizer/*.[ch] 2>/dev/null)
if [ -n "$hits" ]; then
  echo "FAIL: heap internals read outside allocator/ (use hc_heap_view.h):"
  echo "$hits"
  fail=1
fi

# 4. Every variable is read through the options table (base/hc_options.h).
hits=$(grep -nE 'hci_env_(get|int|bool)\(|getenv\(' "$SRC"/base/*.c "$SRC"/stacks/*.c "$SRC"/allocator/*.c \
  "$SRC"/symbolizer/*.c "$SRC"/checker/*.c "$SRC"/profiler/*.c "$SRC"/runtime/*.c | grep -v '^[^:]*/base/options.c:')
if [ -n "$hits" ]; then
  echo "FAIL: environment read outside the options table (add a row to base/hc_options.h, read it with hci_opt_*):"
  echo "$hits"
  fail=1
fi

# 5. docs/design.md names every library source file (its "What each folder holds").
for f in "$SRC"/base/*.[ch] "$SRC"/stacks/*.[ch] "$SRC"/allocator/*.[ch] "$SRC"/symbolizer/*.[ch] \
  "$SRC"/checker/*.[ch] "$SRC"/profiler/*.[ch] "$SRC"/runtime/*.[ch]; do
  n=$(basename "$f")
  if ! grep -q "\`$n\`" "$SRC/docs/design.md"; then
    echo "FAIL: docs/design.md does not name $n (add it to \"What each folder holds\")"
    fail=1
  fi
done

# 6. Marks: only the view's definition of the caller's table names them.
# (Code only: "mark" in comments is also the free-list hardening's word.)
hits=$(grep -nE '(->|\.)(tags?|marks?|slot0)\>|hci_heap_marks_t|hci_heap_locate_marked|\<M_(LIVE|LEAK|PENDING)\>' \
  "$SRC"/allocator/*.c "$SRC"/allocator/hc_types.h "$SRC"/allocator/hc_internal.h)
span=$(sed -n '/^typedef struct hc_span {/,/^} hc_span_t;/p' "$SRC"/allocator/hc_types.h | grep -nE '\<(tags?|marks?)\>[][0-9]*;')
if [ -n "$hits$span" ]; then
  echo "FAIL: the allocator names the checker's marks (they are the checker's table, indexed by span id):"
  echo "$hits$span"
  fail=1
fi

# 7. Thread state by owner: group (member and accessor) -> the files that may touch it.
owners=(
  'smp|hci_tc_sampler:hc_internal.h sampler.c alloc_inline.h thread_cache.c'
  'fl|hci_tc_free:hc_internal.h thread_cache.c alloc.c alloc_inline.h heap_verify.c malloc_ext.c'
  'stk|hci_tc_memo:hc_internal.h alloc.c'
  'chk|hci_tc_chk:hc_internal.h alloc_ctl.c alloc.c'
  'qr|hci_tc_quar:hc_internal.h quarantine.c'
)
srcs=("$SRC"/base/*.[ch] "$SRC"/stacks/*.[ch] "$SRC"/allocator/*.[ch] "$SRC"/symbolizer/*.[ch] \
  "$SRC"/checker/*.[ch] "$SRC"/profiler/*.[ch] "$SRC"/runtime/*.[ch])
for o in "${owners[@]}"; do
  IFS='|' read -r member acc <<<"${o%%:*}"
  files=${o#*:}
  # One grep a group; lines of files outside the owners are violations.
  hits=$(grep -nE "(->|\\.)$member\\.|\\<$acc\\(" "${srcs[@]}" |
    awk -F: -v own=" $files " '{n = $1; sub(/.*\//, "", n); if (index(own, " " n " ") == 0) print}')
  if [ -n "$hits" ]; then
    echo "FAIL: the thread state group $member is touched outside its owners ($files):"
    echo "$hits"
    fail=1
  fi
done

[ $fail = 0 ] && echo "layers: calls point down, no allocator data written from above, heap read through the view, marks the checker's, thread state by owner"
exit $fail
