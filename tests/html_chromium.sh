#!/bin/sh
# The HTML report in a real browser: headless Chromium renders replay's page
# of every bundled capture at a laptop's width (1400 x 900) to a PNG, and
# measures it through a wrapper page: nothing runs off the right edge, no
# summary row grows tall (long reasons live in the details), every row links
# to its detail. Skipped (77) where Chromium is absent.
# Usage: html_chromium.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "chromium not found: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
chrome() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$work/profile" \
        --allow-file-access-from-files --window-size=1400,900 "$@" 2>/dev/null
}
expect 0 "admit-kernel replay" -- "$admit" replay "$src"/captures/data/*.h5 --html "$work/html"
rows=$(grep -c '<tr class=' "$work/html/index.html")
chrome --screenshot="$work/page.png" "file://$work/html/index.html" > /dev/null
check "a screenshot of the page" test -s "$work/page.png"
cat > "$work/measure.html" <<'HTML'
<!doctype html><html><body><iframe id="f" src="html/index.html" style="width:1400px;height:900px;border:0"></iframe>
<script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, tall = 0;
  d.querySelectorAll('table.sum tr').forEach(function (r) { tall = Math.max(tall, r.getBoundingClientRect().height); });
  var p = document.createElement('pre');
  p.textContent = 'MEASURED width ' + d.documentElement.scrollWidth + ' tallest ' + Math.round(tall) + ' links ' +
    d.querySelectorAll('table.sum a[href^="#e"]').length + ' details ' + d.querySelectorAll('section[id^="e"]').length;
  document.body.appendChild(p);
};
</script></body></html>
HTML
m=$(chrome --virtual-time-budget=10000 --dump-dom "file://$work/measure.html" | grep -o 'MEASURED width [0-9]* tallest [0-9]* links [0-9]* details [0-9]*')
echo "$m (rows $rows)"
set -- $m
check "the page is measured" test "$#" = 9
check "nothing runs off the right edge at 1400 px (width $3)" test "${3:-99999}" -le 1400
check "no summary row grows tall (tallest $5 px)" test "${5:-99999}" -le 60
check "every row links to its detail ($7 of $rows)" test "${7:-0}" = "$rows"
check "every row has a detail section ($9 of $rows)" test "${9:-0}" = "$rows"
finish html_chromium
