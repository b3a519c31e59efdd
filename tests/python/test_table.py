"""admit.table gives the rows `admit-kernel table --json` gives."""
import json
import os
import subprocess

import admit
from conftest import KERNEL, SOURCE


def test_table_equals_cli(tmp_path):
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"admit_fusion_table": 1, "fusions": [
        {"name": "sum", "op": "row_sum", "reference": "pairwise", "candidate": "warp", "declared": "lossless",
         "captures": [os.path.join(SOURCE, "captures", "data", "row_sum_fp32.h5")]},
        {"name": "seq", "op": "row_sum", "reference": "pairwise", "candidate": "sequential", "declared": "lossless",
         "captures": [os.path.join(SOURCE, "captures", "data", "row_sum_fp32.h5")]},
        {"name": "corrupt", "op": "linear", "reference": "eager", "candidate": "splitk_fp32", "declared": "lossless",
         "captures": [os.path.join(SOURCE, "tests", "data", "corrupt", "r7_000081_linear.h5")]}]}))
    out = tmp_path / "cli.json"
    r = subprocess.run([KERNEL, "table", str(table), "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr                     # the corrupt entry
    want = json.loads(out.read_text())["results"]
    got = admit.table(table)
    assert [g.raw for g in got] == want
    assert [(g.source, g.claim, g.claim_holds) for g in got[:2]] == [("sum", "lossless", True),
                                                                     ("seq", "lossless", False)]
    assert got[1].tier == "high" and got[1].reasons
    assert got[2].tier == "error" and "r7_000081_linear.h5" in got[2].error
    assert got[0].evidence["per_capture"][0]["verdict"] == got[0].tier
