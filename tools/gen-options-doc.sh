#!/bin/sh
# tools/gen-options-doc.sh [BUILD_DIR] - rewrites the generated variable table
# of docs/options.md from base/hc_options.h (the test options_doc fails until
# the two match).
set -e
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ninja -C "$BUILD" tests/options_doc >/dev/null
"$BUILD/tests/options_doc" --write docs/options.md
echo "docs/options.md: table rewritten"
