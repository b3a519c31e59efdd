#!/bin/sh
# The real-kernel corpus (captures/real, made on a GPU by
# tools/make_real_corpus.py): admit-kernel replay on every capture, and
# every candidate's verdict must be the tier MANIFEST.json names; a
# candidate found in several captures of one op is also judged on their
# pooled evidence, which must be the loosest of its captures' tiers.
# Skips (exit 77) only while there is no MANIFEST.json; fails when the
# manifest lists a missing file or no capture, when a capture in the folder
# is not listed, when a manifest is a dry run's, or when any verdict
# differs from the manifest's.
# Usage: cli_real_corpus.sh ADMIT WORKDIR SRCDIR [CORPUS_DIR [--allow-dry-run]]
# (PYTHON in the environment names another python3 than /usr/bin/python3.)
set -u
admit=$1 work=$2 src=$3
corpus=${4:-$src/captures/real}
allow=${5:-}
rm -rf "$work" && mkdir -p "$work" || exit 1
if [ ! -e "$corpus/MANIFEST.json" ]; then
    echo "SKIP: no $corpus/MANIFEST.json (the corpus is made on a GPU by tools/make_real_corpus.py)"
    exit 77
fi
exec "${PYTHON:-/usr/bin/python3}" - "$admit" "$corpus" "$work" "$allow" <<'PY'
import json, os, subprocess, sys

admit, corpus, work, allow = sys.argv[1:5]
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def finish():
    print(f"cli_real_corpus: {len(fails)} failure(s)")
    sys.exit(1 if fails else 0)


mpath = os.path.join(corpus, "MANIFEST.json")
try:
    with open(mpath) as f:
        m = json.load(f)
except (OSError, ValueError) as e:
    fail(f"{mpath}: cannot read the manifest: {e}")
    finish()
if m.get("format") != "admit-real-corpus" or m.get("version") != 1:
    fail(f"{mpath}: format {m.get('format')!r} version {m.get('version')!r}, expected 'admit-real-corpus' 1")
    finish()
if m.get("dry_run") is not False and allow != "--allow-dry-run":
    fail(f"{mpath}: a dry run's manifest (stand-ins, not real kernels): remake it on a GPU")
caps = m.get("captures") or []
if not caps:
    fail(f"{mpath}: lists no captures")
listed, want = [], {}
for e in caps:
    fn = e.get("file", "")
    if not fn or os.path.basename(fn) != fn:
        fail(f"{mpath}: capture entry with a bad 'file': {fn!r}")
        continue
    if not os.path.isfile(os.path.join(corpus, fn)):
        fail(f"{mpath}: lists {fn}, which is not in {corpus}")
        continue
    if not e.get("candidates"):
        fail(f"{mpath}: {fn} lists no candidates")
    for c in e.get("candidates", []):
        if c.get("expected") not in ("exact", "lossless", "high"):
            fail(f"{mpath}: {fn}/{c.get('name')}: expected tier {c.get('expected')!r}")
        if (fn, c.get("name")) in want:
            fail(f"{mpath}: {fn}/{c.get('name')} listed twice")
        want[(fn, c.get("name"))] = c
    listed.append(fn)
for fn in sorted(os.listdir(corpus)):
    if fn.endswith(".h5") and fn not in listed:
        fail(f"{corpus}/{fn} is not in the manifest")
if fails:
    finish()

got, pooled = {}, {}
for i in range(0, len(listed), 200):
    part = listed[i:i + 200]
    js = os.path.join(work, f"replay{i // 200}.json")
    p = subprocess.run([admit, "replay"] + [os.path.join(corpus, f) for f in part] + ["--json", js],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0:
        fail(f"admit-kernel replay exited {p.returncode}:\n{p.stdout}")
        finish()
    for r in json.load(open(js))["results"]:
        if r.get("evidence", {}).get("captures", 1) > 1:
            pooled[(r["op"] if "op" in r else "", r["candidate"], r["source"])] = r
        else:
            got[(os.path.basename(r["source"]), r["candidate"])] = r

print(f"{'capture':34s} {'candidate':30s} {'expected':9s} {'verdict':9s} {'rms':>7s} {'max':>7s} {'ulp':>7s}")
for key in sorted(set(want) | set(got)):
    fn, name = key
    if key not in got:
        fail(f"{fn}/{name}: in the manifest but not among the capture's candidates")
        continue
    if key not in want:
        fail(f"{fn}/{name}: a candidate of the capture that the manifest does not list")
        continue
    r, exp = got[key], want[key]["expected"]
    n = r["numbers"]
    ok = r["verdict"] == exp
    print(f"{fn:34s} {name:30s} {exp:9s} {r['verdict']:9s} {n['rms_ratio']:7.3g} {n['max_ratio_judged']:7.3g} "
          f"{n['ulp_ratio']:7.3g}{'' if ok else '   <- differs'}")
    if not ok:
        why = " ".join(g["reason"] for g in r["gates"] if g["applicable"] and not g["passed"]
                       and (g["gate"] != "exact" or exp == "exact"))
        fail(f"{fn}/{name} ({want[key].get('class')}): verdict {r['verdict']}, manifest {exp}. {why}")
order = {"exact": 0, "lossless": 1, "high": 2}
for (op, name, src), r in sorted(pooled.items()):
    tiers = [want[k]["expected"] for k in want if k[1] == name and k in got and got[k].get("op", op) == op]
    exp = max(tiers, key=lambda t: order[t]) if tiers else "?"
    ok = r["verdict"] == exp
    n = r["numbers"]
    print(f"{src:34s} {name:30s} {exp:9s} {r['verdict']:9s} {n['rms_ratio']:7.3g} {n['max_ratio_judged']:7.3g} "
          f"{n['ulp_ratio']:7.3g}{'' if ok else '   <- differs'}")
    if not ok:
        why = " ".join(g["reason"] for g in r["gates"] if g["applicable"] and not g["passed"] and g["gate"] != "exact")
        fail(f"{src}/{name}: pooled verdict {r['verdict']}, the loosest of its captures' {exp}. {why}")
finish()
PY
