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
echo "screenshots: $(ls "$work"/*.png | tr '\n' ' ')"
finish html_chromium
