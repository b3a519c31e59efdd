"""admit.replay and admit.judge give what `admit-kernel replay` gives: the
same rows (verdicts, every number, the power, the pooled rows) for every
bundled capture and every capture of the real-kernel corpus, read here
with h5py and judged from the arrays in memory."""
import glob
import os

import pytest

import admit
from conftest import SOURCE, read_capture, replay_json

DATA = sorted(glob.glob(os.path.join(SOURCE, "captures", "data", "*.h5")))
REAL = sorted(glob.glob(os.path.join(SOURCE, "captures", "real", "*.h5")))


def _differences(got, want, path=""):
    """Where two JSON values differ (exactly: floats compare bit for bit)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got)):
            out += _differences(got.get(k, "<missing>"), want.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {got!r} (admit.replay) != {want!r} (admit-kernel replay)"]


@pytest.mark.parametrize("corpus", ["data", "real"])
def test_replay_equals_cli(corpus):
    paths = DATA if corpus == "data" else REAL
    assert len(paths) >= 10, f"captures/{corpus} has {len(paths)} captures"
    want = replay_json(*paths)
    got = admit.replay([read_capture(p) for p in paths], labels=paths)
    assert len(got) == len(want), [r["source"] for r in want]
    pooled = 0
    for g, w in zip(got, want):
        diff = _differences(g.raw, w)
        assert not diff, f"{w['source']} {w['candidate']}:\n" + "\n".join(diff[:20])
        pooled += w["source"].startswith("pooled")
    assert pooled >= 2, "the corpus has candidates in several captures of one op: replay pools them"


def test_judge_equals_cli_one_capture():
    path = os.path.join(SOURCE, "captures", "data", "flux_fc1_gelu_small.h5")
    want = {w["candidate"]: w for w in replay_json(path)}
    c = read_capture(path)
    got = admit.judge(c.op, c.params, inputs=c.inputs, reference=c.reference, candidates=c.candidates,
                      special=c.special)
    assert list(got) == list(want)
    for name, v in got.items():
        raw = dict(v.raw, source=want[name]["source"])
        assert not _differences(raw, want[name]), name
        assert v.tier == want[name]["verdict"]
        assert v.power == want[name]["power"] and v.power["rms_ratio"] > 0
    assert got["fused_epilogue"].tier == "lossless" and got["truncate"].tier == "high"
    assert got["truncate"].reasons, "a high verdict says why"


def test_judge_pooled_equals_cli():
    paths = [p for p in REAL if os.path.basename(p).startswith("softmax_")]
    assert len(paths) == 2
    want = [w for w in replay_json(*paths) if w["source"].startswith("pooled")]
    got = admit.judge_pooled([read_capture(p) for p in paths], labels=paths)
    assert {w["candidate"] for w in want} <= set(got)
    for w in want:
        v = got[w["candidate"]]
        assert not _differences(v.raw, w), w["candidate"]
        assert len(v.per_capture) == int(w["source"].split("(")[1].split()[0])
        assert v.evidence["captures"] == len(v.per_capture)
    # a candidate in one capture only: its own verdict
    single = [n for n, v in got.items() if len(v.per_capture) == 1]
    assert single and all(got[n].raw == got[n].per_capture[0].raw for n in single)
