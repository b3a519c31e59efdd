#!/bin/sh
# The verdict report's page in a real browser: headless Chromium renders
# the page of `table fusions/dit.json` and of `replay` over every bundled
# capture at a phone's width (390 px) and a laptop's (1400 px), keeps a
# screenshot of each, and measures them (tests/html_lib.sh): nothing runs
# off the right edge, every verdict cell is on screen, plot text is at
# least 11 px, no JavaScript error; no summary row grows tall at 1400 px
# (long reasons live in the details); every measured row links to its
# detail; the page opens with a verdict banner. Skipped (77) only where
# Chromium is absent.
# Usage: html_chromium.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
. "$(dirname "$0")/cli_lib.sh"
. "$(dirname "$0")/html_lib.sh"
html_browser
rm -rf "$work" && mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd -P)

expect 0 "summary: 14 entries" -- "$admit" table "$src/fusions/dit.json" --html "$work/table"
expect 0 "summary:" -- "$admit" replay "$src"/captures/data/*.h5 --html "$work/replay"
html_check 60 table="$work/table/index.html" replay="$work/replay/index.html"
for page in table replay; do
    f=$work/$page/index.html
    rows=$(grep -c '<tr class="[a-z]*"><td class="name"' "$f")
    errs=$(grep -c '<tr class="error">' "$f")
    eval "links=\$html_links_$page sections=\$html_sections_$page"
    check "$page: a verdict banner opens the page" grep -q '<div class="banner [a-z]*" role="status">' "$f"
    check "$page: every measured row links to its detail ($links of $((rows - errs)))" test "$links" = $((rows - errs))
    check "$page: every measured row has a detail section ($sections)" test "$sections" = $((rows - errs))
done

# The measuring can fail: a copy of the table page whose verdict column is
# 1200 px wide, and one that throws a JavaScript error, measured apart
# (their own counts) must fail the checks that concern them, and only those.
sed 's#</head>#<style>td.verdict { min-width: 1200px }</style></head>#' "$work/table/index.html" > "$work/table/overflow.html"
sed 's#</head>#<script>window.addEventListener("load", function () { no_such_function(); });</script></head>#' \
    "$work/table/index.html" > "$work/table/jserror.html"
(
    work=$work/selftest checks=0 fails=0 html_shots=no
    mkdir -p "$work"
    html_check - overflow="$work/../table/overflow.html" jserror="$work/../table/jserror.html" > "$work/out.txt"
)
st=$work/selftest/out.txt
sed 's/^/    self-test: /' "$st"
check "self-test: the overflowing verdict column fails at 390 px" grep -q "^FAIL: overflow at 390 px: every verdict cell is on screen" "$st"
check "self-test: the overflowing verdict column fails at 1400 px" grep -q "^FAIL: overflow at 1400 px: every verdict cell is on screen" "$st"
check "self-test: the JavaScript error fails, named" grep -q "no_such_function" "$st"
check "self-test: the page without overflow passes its cell check" sh -c "! grep -q '^FAIL: jserror at [0-9]* px: every verdict' '$st'"
echo "screenshots: $(ls "$work"/*.png | tr '\n' ' ')"
finish html_chromium
