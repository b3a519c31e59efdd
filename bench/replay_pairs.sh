#!/bin/sh
# replay against the NumPy template (bench/replay_template.py) with two
# builds side by side, on bench/cpu_lean.sh's capture (FLUX.1's MLP at 1024
# tokens, 6 candidates): per round, replay with BUILD_A, replay with
# BUILD_B and the template, each a whole process under /usr/bin/time (user,
# system, wall seconds, peak KiB), and each replay's phase timings (its
# JSON). The ratios are per round (a shared machine's drift cancels), the
# figures their medians. Writes OUT/replay-pairs.json (named fields).
# Usage: bench/replay_pairs.sh BUILD_A BUILD_B OUT_DIR [WORK_DIR] [ROUNDS]
set -eu
M=${TOKENS:-1024} K=${CHANNELS:-3072} N=${OUT_FEATURES:-12288}
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd) work=${4:-/tmp/admit_replay_pairs} rounds=${5:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work" && cd "$work"
log=$work/times.txt
: > "$log"
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit_a $(git -C "$a/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "commit_b $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD || echo -dirty)"
    echo "cpu $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
    echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$work/meta.txt"
t() { name=$1; shift; /usr/bin/time -a -o "$log" -f "$name %U %S %e %M" "$@" > /dev/null; }
[ -f flux1024.h5 ] || "$b/admit-kernel" capture synth -o flux1024.h5 --tokens "$M" --channels "$K" \
    --out-features "$N" --with-outputs --gzip 0 > /dev/null
i=1
while [ "$i" -le "$rounds" ]; do
    t replay_a "$a/admit-kernel" replay flux1024.h5 --json "a$i.json"
    t replay_b "$b/admit-kernel" replay flux1024.h5 --json "b$i.json"
    t template /usr/bin/python3 "$src/bench/replay_template.py" flux1024.h5
    i=$((i + 1))
done
echo "load_after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$work/meta.txt"
/usr/bin/python3 - "$work" "$out" "$rounds" "$a" "$b" <<'PY'
import json, statistics, sys
work, out, rounds, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
meta = dict(l.rstrip("\n").split(" ", 1) for l in open(f"{work}/meta.txt"))
rows = {}
for l in open(f"{work}/times.txt"):
    f = l.split()
    if len(f) == 5:
        rows.setdefault(f[0], []).append({"user_s": float(f[1]), "sys_s": float(f[2]), "wall_s": float(f[3]),
                                          "cpu_s": float(f[1]) + float(f[2]), "peak_mib": int(f[4]) / 1024})
for k, p in (("replay_a", "a"), ("replay_b", "b")):
    for i, r in enumerate(rows[k]):
        r["timings"] = json.load(open(f"{work}/{p}{i + 1}.json"))["timings"]
med = statistics.median
ratio = lambda x, y, key: med(u[key] / v[key] for u, v in zip(rows[x], rows[y]))
r = {"command": f"bench/replay_pairs.sh {a} {b} OUT (capture synth --tokens 1024 --channels 3072 --out-features "
                "12288 --with-outputs --gzip 0; per round replay A, replay B, replay_template.py)",
     "date": meta["date"], "commit_a": meta["commit_a"], "commit_b": meta["commit_b"], "machine": meta["cpu"],
     "load_before": meta["load_before"], "load_after": meta["load_after"], "rounds": rounds}
for k in ("replay_a", "replay_b", "template"):
    for key in ("wall_s", "cpu_s", "peak_mib"):
        r[f"{k}_{key}"] = med(x[key] for x in rows[k])
for k in ("replay_a", "replay_b"):
    r[f"{k}_statistics_s"] = med(x["timings"]["statistics"] for x in rows[k])
    r[f"{k}_over_template_wall"] = ratio(k, "template", "wall_s")
    r[f"{k}_over_template_cpu"] = ratio(k, "template", "cpu_s")
r["b_over_a_cpu"] = ratio("replay_b", "replay_a", "cpu_s")
r["b_over_a_statistics"] = med(y["timings"]["statistics"] / x["timings"]["statistics"]
                               for x, y in zip(rows["replay_a"], rows["replay_b"]))
r["runs"] = rows
json.dump(r, open(f"{out}/replay-pairs.json", "w"), indent=1)
for k, v in r.items():
    if k != "runs": print(k, v)
PY
