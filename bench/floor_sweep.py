#!/usr/bin/env python3
"""Which verdicts a different materiality floor of a group statistic would
change: reads `admit-kernel replay --json` and recomputes each per-row (or
per-channel) bias statistic's failure at other floors, from the four tests
the JSON records (the spread across the groups and the variance ratio, in
D and in ulps: GATES.md, gate 2) and the excess over the credited
reference. A floor above the one in force (the relative part of a floor,
where it decides, is kept) leaves fewer failures; one below fails what is
significant and in excess of it.

  bench/floor_sweep.py REPLAY.json [--scope row|channel] [--floors 0.25,0.2,0.15,0.1]

Prints, for each floor, the statistics whose failure it changes (capture,
candidate, the verdict in force, the statistic, its excess in D) and how
many candidates judged exact or lossless would be failed. Exit 1 where the
recomputed failures at the floor in force differ from the JSON's."""
import argparse
import json
import sys


def significant(b):
    s = b["difference"] > b["t"] * b["standard_error"]
    s = s or b.get("variance_ratio", 0) > b.get("variance_ratio_quantile", float("inf"))
    u = b.get("ulps")
    if u:
        s = s or u["difference"] > u["t"] * u["standard_error"]
        s = s or u["variance_ratio"] > u["variance_ratio_quantile"]
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("replay_json")
    ap.add_argument("--scope", choices=("row", "channel"), default="row")
    ap.add_argument("--floors", default="0.25,0.2,0.15,0.1")
    a = ap.parse_args()
    try:
        with open(a.replay_json) as f:
            rows = json.load(f)["results"]
        floors = [float(x) for x in a.floors.split(",")]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("floor_sweep.py: %s: not a replay report (%s: %s)" % (a.replay_json, type(e).__name__, e), file=sys.stderr)
        sys.exit(2)
    base = 0.25 if a.scope == "row" else 0.1
    mismatch = 0
    print("| floor (D) | statistics changed | candidates not high that would fail | which (capture, candidate, verdict, "
          "statistic, excess) |")
    print("|---|---|---|---|")
    for fl in floors:
        changed, verdicts = [], set()
        for r in rows:
            for k in ("mean", "sign", "gain"):
                b = r.get("bias", {}).get(a.scope, {}).get(k)
                if not b or not b.get("applicable"):
                    continue
                if fl == floors[0] and (significant(b) and b["excess"] > b["floor"]) != b["failed"]:
                    mismatch += 1
                floor = b["floor"] if b["floor"] > base * (1 + 1e-12) else fl  # the relative part decides
                fails = significant(b) and b["excess"] > floor
                if fails != b["failed"]:
                    changed.append("%s %s (%s) %s %.3g" % (r["source"].split("/")[-1], r["candidate"], r["verdict"], k,
                                                          b["excess"]))
                    if fails and r["verdict"] != "high":  # a new failure makes it high
                        verdicts.add((r["source"], r["candidate"]))
        print("| %.3g | %d | %d | %s |" % (fl, len(changed), len(verdicts), "; ".join(changed)))
    if mismatch:
        sys.exit("floor_sweep.py: %d statistics whose failure the four tests do not reproduce at the floor in force" %
                 mismatch)


if __name__ == "__main__":
    main()
