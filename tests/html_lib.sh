# Shared by the HTML tests (html_chromium.sh, html_drift.sh), sourced after
# cli_lib.sh with $work set (an absolute path): headless Chromium (Debian's
# chromium package, installed by ci/setup) renders report pages and
# measures them.
#
#   html_browser   exits 77 (skipped) when no Chromium is installed, and
#                  only then
#   html_check MAXROW NAME=PAGE...
#                  for each page: a screenshot of it at 390 px and at
#                  1400 px side by side ($work/NAME.png); then, in one
#                  browser, each page at both widths, checking that the
#                  page does not overflow sideways, every verdict cell
#                  (.verdict) is drawn inside the window, plot text is at
#                  least 11 px, and nothing is written to the console (a
#                  JavaScript error); with MAXROW (not "-"), that no summary
#                  row is taller than MAXROW px at 1400 px. Sets
#                  html_links_NAME and html_sections_NAME (at 1400 px).
#                  With html_shots=no, no screenshots (the self-test's
#                  broken pages).
#
# Chromium runs as root in CI: --no-sandbox; the background-networking
# flags keep it off the network (the machines have none); a fresh profile
# each run (/work/.library/env/machines/c.md). One browser start a page and
# one for the measuring: a start costs seconds.

html_browser() {
    browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
    if [ -z "$browser" ]; then
        echo "chromium not found: skipped (ci/setup installs Debian's chromium)"
        exit 77
    fi
}

html_chrome() {
    h_prof=$(mktemp -d "$work/profile.XXXXXX") || return 1
    timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --disable-quic --no-first-run --user-data-dir="$h_prof" \
        --allow-file-access-from-files --hide-scrollbars --enable-logging=stderr --v=0 "$@"
    h_rc=$?
    rm -rf "$h_prof"
    return $h_rc
}

html_check() {
    h_maxrow=$1
    shift
    # the screenshots: the page at 390 and at 1400 px, side by side
    for h_np in "$@"; do
        [ "${html_shots:-yes}" = no ] && break
        h_name=${h_np%%=*} h_page=${h_np#*=}
        cat > "$work/view-$h_name.html" <<HTML
<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0;display:flex;gap:16px;background:#888">
<iframe src="file://$h_page" style="width:390px;height:2000px;border:0;background:#fff"></iframe>
<iframe src="file://$h_page" style="width:1400px;height:2000px;border:0;background:#fff"></iframe>
</body></html>
HTML
        html_chrome --screenshot="$work/$h_name.png" --window-size=1806,2000 --virtual-time-budget=5000 \
            "file://$work/view-$h_name.html" >/dev/null 2>&1
        check "a screenshot of $h_name at 390 and 1400 px ($work/$h_name.png)" test -s "$work/$h_name.png"
    done
    # the measuring: every page at both widths in one browser; the iframe
    # is the page's viewport, so its media queries see that width
    {
        echo '<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        for h_np in "$@"; do
            h_name=${h_np%%=*} h_page=${h_np#*=}
            for h_w in 390 1400; do
                echo "<iframe data-name=\"$h_name\" data-w=\"$h_w\" src=\"file://$h_page\" style=\"width:${h_w}px;height:900px;border:0;display:block\"></iframe>"
            done
        done
        cat <<'JS'
<script>
var frames = document.querySelectorAll('iframe'), left = frames.length, out = [];
function measure(f) {
  var d = f.contentDocument, win = f.contentWindow, w = parseInt(f.dataset.w, 10), bad = [], minfont = 1e9, tall = 0;
  var cells = d.querySelectorAll('.verdict');
  cells.forEach(function (c) {
    var r = c.getBoundingClientRect();
    if (!(r.width > 0 && r.height > 0) || r.right > w + 0.5 || r.left < -0.5) bad.push(Math.round(r.left) + '..' + Math.round(r.right));
  });
  d.querySelectorAll('svg text').forEach(function (t) {
    var m = t.getScreenCTM(), fs = parseFloat(win.getComputedStyle(t).fontSize);
    if (m && fs > 0) minfont = Math.min(minfont, fs * Math.sqrt(m.a * m.a + m.b * m.b));
  });
  d.querySelectorAll('table.sum > tbody > tr').forEach(function (r) { tall = Math.max(tall, r.getBoundingClientRect().height); });
  out.push([f.dataset.name, w, 'scroll', d.documentElement.scrollWidth, 'verdicts', cells.length, 'outside', bad.length,
            'font', minfont < 1e9 ? minfont.toFixed(1) : 'none', 'tallest', Math.round(tall),
            'links', d.querySelectorAll('table.sum a[href^="#e"]').length,
            'sections', d.querySelectorAll('section[id^="e"]').length, 'at', bad.slice(0, 3).join(',') || '-'].join(' '));
}
frames.forEach(function (f) {
  f.onload = function () {
    measure(f);
    if (--left === 0) {
      var p = document.createElement('pre');
      p.textContent = out.map(function (l) { return 'MEAS' + 'URED ' + l; }).join('\n');
      document.body.appendChild(p);
    }
  };
});
</script></body></html>
JS
    } > "$work/measure.html"
    html_chrome --virtual-time-budget=20000 --dump-dom "file://$work/measure.html" >"$work/measure.out" 2>"$work/measure.log"
    grep -o 'MEASURED [^<]*' "$work/measure.out" > "$work/measured.txt"
    sed 's/^/    /' "$work/measured.txt"
    # the pages' own console: no error, no message at all (the pages run
    # no script; a message means one was injected or broke)
    if grep -F "CONSOLE" "$work/measure.log" | grep -v -F "measure.html" >"$work/console.txt"; then
        echo "FAIL: a page wrote to the console (a JavaScript error):"; sed 's/^/    /' "$work/console.txt"
        fails=$((fails + 1))
    fi
    checks=$((checks + 1))
    for h_np in "$@"; do
        h_name=${h_np%%=*}
        for h_w in 390 1400; do
            # MEASURED NAME W scroll S verdicts V outside O font F tallest T links L sections N at WHERE
            set -- $(grep "^MEASURED $h_name $h_w " "$work/measured.txt")
            check "$h_name at $h_w px: the page is measured" test "$#" = 19
            check "$h_name at $h_w px: nothing runs off the right edge (width ${5:-?})" test "${5:-99999}" -le "$h_w"
            check "$h_name at $h_w px: there are verdict cells (${7:-0})" test "${7:-0}" -gt 0
            check "$h_name at $h_w px: every verdict cell is on screen (${9:-?} outside, at ${19:-?})" test "${9:-1}" = 0
            check "$h_name at $h_w px: plot text is at least 11 px (${11:-?})" \
                awk -v f="${11:-0}" 'BEGIN { exit !(f == "none" || f + 0 >= 11) }'
            if [ "$h_w" = 1400 ]; then
                [ "$h_maxrow" != - ] &&
                    check "$h_name at 1400 px: no summary row grows tall (${13:-?} px)" test "${13:-99999}" -le "$h_maxrow"
                eval "html_links_$h_name=\${15:-0} html_sections_$h_name=\${17:-0}"
            fi
        done
    done
}
