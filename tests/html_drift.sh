#!/bin/sh
# The drift report's page in a real browser: three runs of the small toy
# into a history (the second with a PSNR floor no comparison reaches, so
# that failing points are drawn; the third a rerun of the first's date and
# commit), then headless Chromium renders the page at 390 and 1400 px,
# keeps a screenshot of each, and measures them (tests/html_lib.sh):
# nothing runs off the right edge, every verdict cell is on screen, plot
# text is at least 11 px, no JavaScript error. The page marks the failing
# points, labels every run apart, and prints no "nan". Skipped (77) only
# where Chromium is absent.
# Usage: html_drift.sh ADMIT WORKDIR
set -u
admit=$1 work=$2
. "$(dirname "$0")/cli_lib.sh"
. "$(dirname "$0")/html_lib.sh"
html_browser
rm -rf "$work" && mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd -P)
toy="--toy --grid 8 --blocks 2 --steps 2 --depth 6 --band-tolerance 1 --history $work/h.jsonl"
expect 0 "verdict: pass" -- "$admit" drift $toy --date 2026-11-28 --commit aaaaaaa
expect 1 "verdict: FAIL" -- "$admit" drift $toy --date 2026-11-29 --commit bbbbbbb --psnr-floor 60
expect 0 "verdict: pass" -- "$admit" drift $toy --date 2026-11-28 --commit aaaaaaa --html "$work/html"
f=$work/html/index.html
html_check - drift="$f"
check "a verdict banner opens the page" grep -q '<div class="banner pass" role="status">' "$f"
check "the failing points are ringed in red" grep -q 'r="8" fill="none" stroke="#cf222e"' "$f"
check "the rerun is labelled apart" grep -q '11-28 (2)' "$f"
check "each run shows its commit" grep -q '>bbbbbbb<' "$f"
check "no nan on the page" sh -c "! grep -qiw nan '$f'"
echo "screenshots: $(ls "$work"/*.png | tr '\n' ' ')"
finish html_drift
