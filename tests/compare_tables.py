#!/usr/bin/env python3
"""The fusion table on the CUDA twins judges as the table on the CPU
emulations (issue 17): for each entry of CPU_JSON (admit-kernel table
fusions/dit.json --json) the entry of the same name in GPU_JSON (table
fusions/dit_gpu.json) has the candidate cuda_<name> and the same verdict,
claim outcome, gate outcomes and deciding numbers: a twin gives its
emulation's bits, and both tables run the oracle on the CPU, so nothing may
differ. Usage: compare_tables.py CPU_JSON GPU_JSON. Exit 1 on a difference
or a missing entry."""
import json, sys

cpu, gpu = (json.load(open(p))["results"] for p in sys.argv[1:3])
g = {x["source"]: x for x in gpu}
bad = 0
for x in cpu:
    y = g.get(x["source"])
    if y is None:
        print("FAIL: %s: not in the GPU table" % x["source"]); bad += 1; continue
    diffs = []
    if y["candidate"] != "cuda_" + x["candidate"]:
        diffs.append("candidate %s, not cuda_%s" % (y["candidate"], x["candidate"]))
    for k in ("verdict", "claim", "claim_holds", "gates", "numbers"):
        if x.get(k) != y.get(k):
            diffs.append("%s: CPU %s, GPU %s" % (k, json.dumps(x.get(k))[:200], json.dumps(y.get(k))[:200]))
    print("%-40s %-22s %-9s %s" % (x["source"], y["candidate"], y["verdict"], "same" if not diffs else "DIFFERS"))
    for d in diffs:
        print("    " + d)
    bad += bool(diffs)
print("compare_tables: %d entries, %d differ" % (len(cpu), bad))
sys.exit(1 if bad or not cpu else 0)
