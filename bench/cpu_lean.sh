#!/bin/sh
# The CPU goals of issue 17 on FLUX.1's MLP at 1024 tokens (x 1024 x 3072
# bf16, w 12288 x 3072, bias, tanh-GELU), side by side in one run, each
# figure a whole process under /usr/bin/time (user, system, wall seconds,
# peak KiB):
#   capture synth --with-outputs (7 emulations)       goal: under 60 s
#   replay (oracle, 6 candidates, special cases)      goal: at most 1.0x the NumPy template
#   replay_template.py (fp64 GEMM, GELU, RMS/max/mean per candidate, no bound)
#   run --reference eager --candidate fused_epilogue  goal: at most 2x replay
#   bench_oracle 1024 3072 3072 (in-process ratio)    goal: at most 1.5x one DGEMM
#   replay's peak memory                              goal: at most inputs + outputs + oracle
#                                                     result + 256 MiB
# replay, the template and run are taken in turn, ROUNDS times; the ratios
# are the medians of the ratios within a round, so that a shared
# machine's drift cancels. Writes OUT/cpu-lean.json (named fields) and
# OUT/cpu-lean.md.
# Usage: bench/cpu_lean.sh BUILD_DIR OUT_DIR [WORK_DIR] [ROUNDS]
# (TOKENS, CHANNELS, OUT_FEATURES in the environment shrink it for a trial)
set -eu
M=${TOKENS:-1024} K=${CHANNELS:-3072} N=${OUT_FEATURES:-12288}
export M K N
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd) work=${3:-/tmp/admit_cpu_lean} rounds=${4:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work" && cd "$work"
k=$build/admit-kernel
log=$work/times.txt
: > "$log"
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD || echo -dirty)"
    echo "cpu $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
    echo "load_before $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$work/meta.txt"
t() { name=$1; shift; /usr/bin/time -a -o "$log" -f "$name %U %S %e %M" "$@" > /dev/null; }
rm -f flux1024.h5
t synth "$k" capture synth -o flux1024.h5 --tokens "$M" --channels "$K" --out-features "$N" --with-outputs --gzip 0
echo "file_bytes $(stat -c %s flux1024.h5)" >> "$work/meta.txt"
i=1
while [ "$i" -le "$rounds" ]; do
    t replay "$k" replay flux1024.h5
    t template /usr/bin/python3 "$src/bench/replay_template.py" flux1024.h5
    t run "$k" run flux1024.h5 --reference eager --candidate fused_epilogue
    i=$((i + 1))
done
"$build/bench_oracle" "$M" "$K" "$K" 3 > "$work/oracle.txt"
echo "load_after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$work/meta.txt"
/usr/bin/python3 - "$work" "$out" <<'EOF'
import json, os, statistics, sys
work, out = sys.argv[1], sys.argv[2]
meta = dict(l.rstrip("\n").split(" ", 1) for l in open(f"{work}/meta.txt"))
rows = {}
for l in open(f"{work}/times.txt"):
    f = l.split()
    if len(f) == 5 and f[0] in ("synth", "replay", "template", "run"):
        rows.setdefault(f[0], []).append({"user_s": float(f[1]), "sys_s": float(f[2]), "wall_s": float(f[3]),
                                          "peak_mib": int(f[4]) / 1024})
orc = {}
for l in open(f"{work}/oracle.txt"):
    if l.startswith("DGEMM alone"): orc["dgemm_s"] = float(l.split()[-4])
    if l.startswith("oracle linear+gelu"): orc["oracle_s"] = float(l.split()[-2])
    if l.startswith("ratio"): orc["oracle_over_dgemm"] = float(l.split()[-1])
    if l.startswith("CPU seconds"):
        f = l.replace(",", "").split()
        orc["dgemm_cpu_s"], orc["oracle_cpu_s"], orc["oracle_over_dgemm_cpu"] = float(f[5]), float(f[7]), float(f[9])
med = lambda name, key: statistics.median(r[key] for r in rows[name])
pair = lambda a, b: statistics.median(x["wall_s"] / y["wall_s"] for x, y in zip(rows[a], rows[b]))
cpu = lambda name: statistics.median(r["user_s"] + r["sys_s"] for r in rows[name])
# the memory goal: inputs (x bf16, w bf16, bias bf16), the reference and 6
# candidates (bf16), the oracle's value, bound and condition scale (fp64)
M, K, N = (int(os.environ[v]) for v in ("M", "K", "N"))
mem_goal = (2 * (M * K + N * K + N) + 7 * 2 * M * N + 3 * 8 * M * N) / 2**20 + 256
r = {
    "command": f"bench/cpu_lean.sh BUILD OUT: capture synth --tokens {M} --channels {K} --out-features {N} "
               f"--with-outputs --gzip 0; replay; replay_template.py; run --reference eager --candidate "
               f"fused_epilogue; bench_oracle {M} {K} {K} 3",
    "date": meta["date"], "commit": meta["commit"], "machine": meta["cpu"],
    "load_before": meta["load_before"], "load_after": meta["load_after"], "rounds": len(rows["replay"]),
    "capture_bytes": int(meta["file_bytes"]),
    "synth_wall_s": rows["synth"][0]["wall_s"], "synth_cpu_s": rows["synth"][0]["user_s"] + rows["synth"][0]["sys_s"],
    "synth_peak_mib": rows["synth"][0]["peak_mib"],
    "replay_wall_s": med("replay", "wall_s"), "replay_cpu_s": cpu("replay"), "replay_peak_mib": med("replay", "peak_mib"),
    "template_wall_s": med("template", "wall_s"), "template_cpu_s": cpu("template"),
    "template_peak_mib": med("template", "peak_mib"),
    "run_wall_s": med("run", "wall_s"), "run_cpu_s": cpu("run"), "run_peak_mib": med("run", "peak_mib"),
    "replay_over_template": pair("replay", "template"), "run_over_replay": pair("run", "replay"),
    "replay_memory_goal_mib": mem_goal, **orc, "runs": rows,
}
r["goals"] = {
    "synth_under_60s": r["synth_wall_s"] < 60,
    "replay_at_most_1x_template": r["replay_over_template"] <= 1.0,
    "run_at_most_2x_replay": r["run_over_replay"] <= 2.0,
    "oracle_at_most_1_5x_dgemm": orc.get("oracle_over_dgemm", 99) <= 1.5,
    "replay_memory_within_goal": r["replay_peak_mib"] <= mem_goal,
}
json.dump(r, open(f"{out}/cpu-lean.json", "w"), indent=1)
yn = lambda b: "met" if b else "NOT met"
g = r["goals"]
md = f"""# issue 17, CPU goals (bench/cpu_lean.sh)

- command: `{r['command']}`
- machine: {r['machine']}; date {r['date']}; commit {r['commit']}
- load average (1, 5, 15 min) before {r['load_before']}, after {r['load_after']}; {r['rounds']} rounds in turn
- capture: {r['capture_bytes'] / 1e6:.0f} MB

| figure | wall s (median) | CPU s (median) | peak MiB | goal | |
|---|---|---|---|---|---|
| capture synth --with-outputs | {r['synth_wall_s']:.1f} | {r['synth_cpu_s']:.1f} | {r['synth_peak_mib']:.0f} | under 60 s | {yn(g['synth_under_60s'])} |
| replay | {r['replay_wall_s']:.2f} | {r['replay_cpu_s']:.2f} | {r['replay_peak_mib']:.0f} | peak at most {mem_goal:.0f} MiB | {yn(g['replay_memory_within_goal'])} |
| NumPy fp64 template | {r['template_wall_s']:.2f} | {r['template_cpu_s']:.2f} | {r['template_peak_mib']:.0f} | | |
| run eager vs fused_epilogue | {r['run_wall_s']:.2f} | {r['run_cpu_s']:.2f} | {r['run_peak_mib']:.0f} | | |
| replay / template (ratio per round, median) | {r['replay_over_template']:.2f}x | | | at most 1.0x | {yn(g['replay_at_most_1x_template'])} |
| run / replay (ratio per round, median) | {r['run_over_replay']:.2f}x | | | at most 2x | {yn(g['run_at_most_2x_replay'])} |
| bench_oracle {M} {K} {K}: oracle / DGEMM | {orc.get('oracle_over_dgemm', float('nan')):.2f}x (oracle {orc.get('oracle_s', float('nan')):.2f} s, DGEMM {orc.get('dgemm_s', float('nan')):.2f} s) | {orc.get('oracle_over_dgemm_cpu', float('nan')):.2f}x (oracle {orc.get('oracle_cpu_s', float('nan')):.2f}, DGEMM {orc.get('dgemm_cpu_s', float('nan')):.2f}) | | at most 1.5x | {yn(g['oracle_at_most_1_5x_dgemm'])} |
"""
open(f"{out}/cpu-lean.md", "w").write(md)
print(md)
EOF
