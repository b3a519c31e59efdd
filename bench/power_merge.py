#!/usr/bin/env python3
"""Join the rows of bench/run_power.sh (bench_power --json, one process per
row) into the one report bench_power writes: the same table, cells in the
op's, lean's, size's and pooling's order, the false alarms summed."""
import argparse
import json
import math
import sys


def cross_fmt(x, at_first, first):
    if at_first:
        return "<= %.2g" % max(0.0, first)
    if x is not None and x >= 0 and math.isfinite(x):
        return "%.3g" % x
    return "-"


# issue 16's goals for the 50% point, in D: one capture of 64, four pooled
# captures of 64, one capture of 1024 outputs or more
GOALS = {(64, 1): 0.8, (64, 4): 0.25}
GOAL_LARGE = 0.15


def why_missed(c, goal):
    """What bench_power --limit says of a missed goal: the 50% point of the
    best test at 1e-3 (the whole false-alarm rate on the one statistic),
    with the null's spread known or estimated from the capture, and at
    admit's share of the rate, against the goal."""
    def lim(k):
        x = c.get(k)
        return x if x is not None and x > 0 and math.isfinite(x) else None
    known, est, est_share = lim("limit_whole_50"), lim("limit_est_whole_50"), lim("limit_est_share_50")
    if known is not None and known > goal:
        return "; below the limit of any test at 1e-3, %.3g" % known
    if est is not None and est > goal:
        return "; below the limit at 1e-3 of a test that estimates its spread, %.3g" % est
    if est_share is not None and est_share > goal:
        return "; below that limit at admit's share, %.3g" % est_share
    return ""


def write_summary(path, cells, tot, rej, trej):
    cols = [(64, 1), (64, 4), (256, 1), (1024, 1), (16384, 1), (1000000, 1)]
    rows = {}
    for c in cells:
        rows.setdefault((c["op_index"], c["lean_index"], c["op"], c["lean"]), {})[(c["n"], c["pooled"])] = c
    missed = []
    with open(path, "w") as md:
        md.write("| op | lean | " + " | ".join("%s%s" % ("10^6" if n == 1000000 else n, " x4" if p > 1 else "")
                                                 for n, p in cols) + " |\n")
        md.write("|---|---|" + "---|" * len(cols) + "\n")
        for key in sorted(rows):
            r = rows[key]
            out = []
            for n, p in cols:
                c = r.get((n, p))
                if c is None:
                    out.append("")
                    continue
                g0 = c.get("g0", 2 if n >= 100000 else 0)
                x = c["admit_50"]
                txt = cross_fmt(x, c["frac"][g0] >= 0.5, c["realized"][g0])
                goal = GOALS.get((n, p), GOAL_LARGE if n >= 1024 else None)
                val = max(0.0, c["realized"][g0]) if c["frac"][g0] >= 0.5 else (x if x >= 0 else float("inf"))
                if goal is not None and val > goal:
                    txt = "**" + txt + "**"
                    missed.append("%s %s n=%d%s: %s (goal %.2g%s)" % (key[2], key[3], n, " x4" if p > 1 else "",
                                                                     txt.strip("*"), goal, why_missed(c, goal)))
                out.append(txt)
            md.write("| %s | %s | %s |\n" % (key[2], key[3], " | ".join(out)))
        md.write("\nFalse alarms of lossless paths: admit %d, the template %d, of %d samples.\n" % (rej, trej, tot))
        if missed:
            md.write("\nIn bold, %d points above the goal: %s.\n" % (len(missed), "; ".join(missed)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--summary", help="also write the 50%% points against issue 16's goals as a Markdown table")
    ap.add_argument("--partial", action="store_true", help="skip rows still being written (a look mid-run)")
    ap.add_argument("parts", nargs="+")
    a = ap.parse_args()
    cells, fa, seeds, fa_seeds, grid, grids, cpu = [], [], set(), set(), None, set(), 0.0
    for p in a.parts:
        try:
            with open(p) as f:
                d = json.load(f)
        except ValueError:
            if not a.partial:
                raise
            print("power_merge.py: %s: unfinished, left out" % p, file=sys.stderr)
            continue
        cells += d["cells"]
        fa += d.get("false_alarm_rows", [])
        seeds.add(d["seeds"])
        if d.get("false_alarm_rows"):
            fa_seeds.add(d["fa_seeds"])
        grid = d["grid"]
        grids.add(tuple(grid))
        cpu += d["seconds"]
    if len(seeds) != 1:
        sys.exit("power_merge.py: the rows ran with different --seeds")
    if len(grids) != 1:  # a row's cells index its grid (g0, the 50% points' first size)
        sys.exit("power_merge.py: the rows ran on different grids (bench_power's default changed on 2026-12-02, "
                 "or --grid): run them again together")
    cells.sort(key=lambda c: (c["op_index"], c["lean_index"], c["n"], c["pooled"]))
    fa.sort(key=lambda r: (r["op_index"], r["path_index"], r["n"]))
    tot = sum(r["samples"] for r in fa)
    rej = sum(r["admit"] for r in fa)
    trej = sum(r["template"] for r in fa)
    with open(a.out, "w") as md:
        md.write("# Power of the bias gate: detection points and false alarms\n\n"
                 "Realized lean at 50%% and 90%% detection, in units of D (the reference's RMS error floored at the "
                 "correctly rounded output's), over %d seeds per grid point; 1 capture and 4 pooled captures; admit "
                 "against the sglang template (|mean e| <= 0.25 rms e, RMS and max within 1.5x; pooled: any capture "
                 "rejects). '-': not reached on the grid (up to %.2g of the grid unit); '<= x': reached at the grid's "
                 "smallest lean already; '(magnitude)': most of the rejections at the 50%% point came from gate 1 "
                 "(the RMS, max or ulp form), not the bias gate.\n\n" % (seeds.pop(), grid[-1]))
        lim = any("limit_share_50" in c for c in cells)
        md.write("| op | lean | n | pooled | admit 50%% | admit 90%% | template 50%% | template 90%% | injected 50%%: admit, "
                 "template |%s\n|---|---|---|---|---|---|---|---|---|%s\n" % (
                     " limit, spread known: share, 1e-3 | limit, spread estimated: share, 1e-3 |" if lim else "",
                     "---|---|" if lim else ""))
        for c in cells:
            fr, tf, le, bm = c["frac"], c["template_frac"], c["realized"], c["by_magnitude"]
            g0 = c.get("g0", 2 if c["n"] >= 100000 else 0)
            by = ""
            for g in range(g0, len(fr)):
                if fr[g] >= 0.5:
                    by = " (magnitude)" if bm[g] > 0.5 else ""
                    break
            line = "| %s | %s | %d | %d | %s%s | %s | %s | %s | %s, %s |" % (
                c["op"], c["lean"], c["n"], c["pooled"],
                cross_fmt(c["admit_50"], fr[g0] >= 0.5, le[g0]), by,
                cross_fmt(c["admit_90"], fr[g0] >= 0.9, le[g0]),
                cross_fmt(c["template_50"], tf[g0] >= 0.5, le[g0]),
                cross_fmt(c["template_90"], tf[g0] >= 0.9, le[g0]),
                # rows written before the injected points existed have none
                cross_fmt(c.get("admit_50_injected"), fr[g0] >= 0.5, grid[g0]),
                cross_fmt(c.get("template_50_injected"), tf[g0] >= 0.5, grid[g0]))
            if lim:  # bench_power --limit's columns; "-" where a row has none (run without it, or a group's estimated)
                line += " %s, %s | %s, %s |" % tuple(cross_fmt(c.get(k), False, 0) for k in (
                    "limit_share_50", "limit_whole_50", "limit_est_share_50", "limit_est_whole_50"))
            md.write(line + "\n")
        md.write("\n## False alarms of lossless paths\n\n| op | path | n | samples | admit rejects | template rejects |\n"
                 "|---|---|---|---|---|---|\n")
        for r in fa:
            md.write("| %s | %s | %d | %d | %d | %d |\n" % (r["op"], r["path"], r["n"], r["samples"], r["admit"],
                                                          r["template"]))
        md.write("| all | | | %d | %d | %d |\n" % (tot, rej, trej))
    out = {"bench": "bench_power", "seeds": d["seeds"], "fa_seeds": sorted(fa_seeds), "grid": grid, "cells": cells,
           "false_alarm_rows": fa, "false_alarms": {"samples": tot, "admit": rej, "template": trej},
           "seconds": a.seconds, "cpu_seconds": round(cpu, 1), "jobs": a.jobs}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    if a.summary:
        write_summary(a.summary, cells, tot, rej, trej)
    print("power_merge.py: %d cells, false alarms: admit %d, template %d of %d lossless samples"
          % (len(cells), rej, trej, tot))


if __name__ == "__main__":
    main()
