#!/bin/sh
# tests/cli_real_corpus.sh itself, on a small corpus written here with
# tools/admit_capture.py and make_real_corpus.py's activation generator (no
# GPU, no torch): it passes on a true manifest and fails on an edited tier,
# a missing file, an unlisted capture, an unlisted candidate and a dry run's
# manifest; it skips (77) only without a manifest.
# Usage: cli_real_corpus_selftest.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work/ok" || exit 1
. "$(dirname "$0")/cli_lib.sh"
corpus_check=$src/tests/cli_real_corpus.sh
/usr/bin/python3 - "$work/ok" "$src/tools" <<'PY' || { echo "FAIL: writing the corpus"; exit 1; }
import json, os, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from admit_capture import Bits, bf16_bits_from_float32, write_capture
from make_real_corpus import dit_activations, seed_of

out = sys.argv[1]
x = dit_activations(np.random.default_rng(seed_of("selftest")), 64, 256)
q = np.abs(x)
r = q.max() / np.quantile(q, 0.99)
assert 7.0 < r < 9.0, f"max/p99 {r}"          # the DiT-like calibration (captures/synth.c: 8)
xb = bf16_bits_from_float32(x.astype(np.float32))
xv = (xb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bf16(v):
    return (bf16_bits_from_float32(np.asarray(v, np.float32)).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


c = np.sqrt(2 / np.pi)
exact = 0.5 * xv * (1 + np.tanh(c * (xv + 0.044715 * xv ** 3)))
eager = bf16(0.5 * xv * bf16(1 + np.tanh(c * (xv + 0.044715 * xv ** 3))))    # an extra bf16 rounding
trunc = (exact.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)     # toward zero
ref = Bits(bf16_bits_from_float32(eager.astype(np.float32)), "bf16")
write_capture(os.path.join(out, "gelu_small.h5"), op="gelu", params={"approximate": "tanh"},
              inputs={"x": Bits(xb, "bf16")}, reference=ref,
              candidates={"same": ref, "rounded_once": Bits(bf16_bits_from_float32(exact.astype(np.float32)), "bf16"),
                          "truncated": Bits(trunc, "bf16")})
m = {"format": "admit-real-corpus", "version": 1, "dry_run": False, "captures": [
    {"file": "gelu_small.h5", "op": "gelu", "candidates": [
        {"name": "same", "class": "identity", "expected": "exact"},
        {"name": "rounded_once", "class": "fused", "expected": "lossless"},
        {"name": "truncated", "class": "truncation", "expected": "high"}]}]}
json.dump(m, open(os.path.join(out, "MANIFEST.json"), "w"))
PY

expect 0 "rounded_once                   lossless  lossless" "truncated                      high      high" \
    "cli_real_corpus: 0 failure(s)" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/ok"

# variant NAME PYTHON: a copy of the corpus whose manifest m the statement edits
variant() {
    rm -rf "${work:?}/$1" && cp -r "$work/ok" "$work/$1" &&
        /usr/bin/python3 -c "import json, sys; p = sys.argv[1]; m = json.load(open(p)); $2; json.dump(m, open(p, 'w'))" \
            "$work/$1/MANIFEST.json"
}
variant tier "m['captures'][0]['candidates'][1]['expected'] = 'exact'"
expect 1 "gelu_small.h5/rounded_once (fused): verdict lossless, manifest exact" -- \
    "$corpus_check" "$admit" "$work/w" "$src" "$work/tier"
variant tier2 "m['captures'][0]['candidates'][2]['expected'] = 'lossless'"
expect 1 "gelu_small.h5/truncated (truncation): verdict high, manifest lossless" "truncation-like" -- \
    "$corpus_check" "$admit" "$work/w" "$src" "$work/tier2"
variant missing "m['captures'].append({'file': 'gone.h5', 'candidates': [{'name': 'a', 'expected': 'high'}]})"
expect 1 "lists gone.h5, which is not in" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/missing"
variant unlisted "pass" && cp "$work/ok/gelu_small.h5" "$work/unlisted/extra.h5"
expect 1 "extra.h5 is not in the manifest" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/unlisted"
variant cand "m['captures'][0]['candidates'].pop()"
expect 1 "gelu_small.h5/truncated: a candidate of the capture that the manifest does not list" -- \
    "$corpus_check" "$admit" "$work/w" "$src" "$work/cand"
variant empty "m['captures'] = []" && rm "$work/empty/gelu_small.h5"
expect 1 "lists no captures" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/empty"
variant dry "m['dry_run'] = True"
expect 1 "a dry run's manifest" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/dry"
expect 0 "cli_real_corpus: 0 failure(s)" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/dry" --allow-dry-run
variant none "pass" && rm "$work/none/MANIFEST.json"
expect 77 "SKIP: no" -- "$corpus_check" "$admit" "$work/w" "$src" "$work/none"
finish cli_real_corpus_selftest
