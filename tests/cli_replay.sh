#!/bin/sh
# admit-kernel replay on the bundled captures: verdicts, claims, reports.
# Usage: cli_replay.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
g=$src/captures/data/flux_fc1_gelu_small.h5
l=$src/captures/data/flux_fc1_linear_small.h5
# The claims that hold: exit 0.
expect 0 "fused_epilogue         lossless  lossless" "bf16_accum             -         high" \
    -- "$admit" replay "$g" "$l" --claim fused_epilogue=lossless --claim splitk4=lossless --claim bias_epilogue=lossless \
       --json "$work/r.json" --junit "$work/r.xml"
/usr/bin/python3 - "$work/r.json" "$work/r.xml" <<'PY' || { echo "FAIL: reports do not parse"; fails=$((fails + 1)); }
import json, sys, xml.etree.ElementTree as ET
r = json.load(open(sys.argv[1]))
# the GPU, asked for when the report is finished, fills the place held for it
gpu = r["run"]["GPU"]
assert gpu in ("none (built without CUDA)", "none usable") or gpu.endswith(")") and " (sm_" in gpu, gpu
rows = {(x["source"].split("/")[-1], x["candidate"]): x for x in r["results"]}
assert len(rows) == 6 + 7, rows.keys()
f = rows[("flux_fc1_gelu_small.h5", "fused_epilogue")]
assert f["verdict"] == "lossless" and f["claim"] == "lossless" and f["claim_holds"], f
assert f["oracle"]["certified"] and f["oracle"]["max_bound"] < 1e-9, f["oracle"]
# the GELU's bounds rest on the libm assumption, the plain linear's are proven
assert f["oracle"]["bounds"] == "assumed" and "exp within 1 ulp" in f["oracle"]["assumption"], f["oracle"]
lin = [v for k, v in rows.items() if k[0] == "flux_fc1_linear_small.h5"][0]
assert lin["oracle"]["bounds"] == "proven" and lin["oracle"]["assumption"] is None, lin["oracle"]
assert f["numbers"]["rms_ratio"] < 1.0, f["numbers"]
t = rows[("flux_fc1_gelu_small.h5", "truncate")]
assert t["verdict"] == "high" and [g for g in t["gates"] if g["gate"] == "bias"][0]["passed"] is False
x = ET.parse(sys.argv[2]).getroot()
suite = x.find("testsuite")
assert suite.get("tests") == "13" and suite.get("failures") == "0", suite.attrib
assert "oracle: assuming libm's exp within 1 ulp" in ET.tostring(x, encoding="unicode")
PY
checks=$((checks + 1))
# A high-tier fusion declared lossless: exit 1, says why, JUnit failure.
expect 1 "looser than the claim" "magnitude: RMS error" -- "$admit" replay "$g" --claim bf16_accum=lossless --junit "$work/f.xml"
grep -q '<failure message="claimed lossless, measured high">' "$work/f.xml" || { echo "FAIL: no JUnit failure"; fails=$((fails + 1)); }
checks=$((checks + 1))
expect 1 "looser than the claim" -- "$admit" replay "$g" --claim fused_epilogue=exact
# An op not in the catalog, with the user's own fp64 evaluation: judged,
# and reported as uncertified.
/usr/bin/python3 - "$work/user.h5" "$src/tools" <<'PY' || { echo "FAIL: writing the user-oracle capture"; fails=$((fails + 1)); }
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from admit_capture import write_capture, bf16_bits_from_float32, Bits
rng = np.random.default_rng(3)
x = rng.standard_normal((64, 32)).astype(np.float32)
exact = np.cbrt(x.astype(np.float64))                        # a "cube root" op admit does not know
ref = Bits(bf16_bits_from_float32(exact.astype(np.float32)), "bf16")
trunc = (exact.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)   # truncated to bf16
write_capture(sys.argv[1], op="user_cbrt", inputs={"x": x}, reference=ref, oracle=exact,
              candidates={"rounded": ref, "truncated": Bits(trunc, "bf16")})
PY
checks=$((checks + 1))
expect 0 "rounded                -         exact" "[user oracle, uncertified]" "truncated              -         high" \
    -- "$admit" replay "$work/user.h5"

# Reasons are whole sentences in every format (the bias reason of the
# linear attention capture was cut at 480 bytes: "...against the r"), and
# the terminal table wraps them at word boundaries within the terminal's
# width (COLUMNS; it was a fixed 110 columns whatever the terminal).
sana=$src/captures/data/sana_linear_attention.h5
COLUMNS=80 "$admit" replay "$sana" --json "$work/sana.json" > "$work/sana.txt"
/usr/bin/python3 - "$work/sana.json" <<'PY' || { echo "FAIL: a reason is cut"; fails=$((fails + 1)); }
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    for g in r["gates"]:
        if not g["passed"]:
            assert g["reason"].endswith("."), g["reason"]
bias = [g for g in json.load(open(sys.argv[1]))["results"][0]["gates"] if g["gate"] == "bias"][0]["reason"]
assert "a scale error confined to tokens (a per-token statistic rounded)." in bias, bias
PY
checks=$((checks + 1))
check "terminal lines fit in 80 columns" sh -c "! awk 'length(\$0) > 80' '$work/sana.txt' | grep -q ."
check "the terminal keeps the whole bias reason" sh -c "tr -s '\\n ' '  ' < '$work/sana.txt' | grep -q 'a scale error confined to tokens (a per-token statistic rounded)\\.'"

# Text from inputs in the reports (R4): a capture path with markup, a
# control character and bytes that are not UTF-8 keeps every field of the
# JSON report and leaves the JUnit XML and the HTML well-formed.
odd="$work/we<ird&'$(printf '\001\377').h5"
cp "$g" "$odd"
expect 0 "lossless" -- "$admit" replay "$odd" --json "$work/odd.json" --junit "$work/odd.xml"
/usr/bin/python3 - "$work/odd.json" "$work/odd.xml" <<'PY' || { echo "FAIL: reports of an odd path"; fails=$((fails + 1)); }
import json, sys, xml.dom.minidom
r = json.load(open(sys.argv[1]))["results"]
assert len(r) == 6 and all("candidate" in x and "source" in x for x in r), r
assert r[0]["source"].endswith("we<ird&'\\x01\\xff.h5"), r[0]["source"]
xml.dom.minidom.parse(sys.argv[2])
PY
checks=$((checks + 1))
expect 2 "--claim: candidate name 'a b' may hold only letters" -- "$admit" replay "$g" --claim "a b=lossless"

# The command line: --opt=VALUE as well as --opt VALUE, options after the
# operands, -- ends the options, -h and --help, usage errors exit 2.
expect 0 "fused_epilogue         lossless  lossless" -- "$admit" replay --json="$work/eq.json" "$g" --claim=fused_epilogue=lossless
check "--json=FILE wrote the report" test -s "$work/eq.json"
expect 0 "fused_epilogue" -- "$admit" replay -- "$g"
expect 0 "usage: admit-kernel replay" -- "$admit" replay -h
expect 0 "usage: admit-kernel table" -- "$admit" table --help
expect 0 "usage: admit-kernel run" -- "$admit" run -h
expect 2 "replay: unknown option '--frob'" -- "$admit" replay "$g" --frob
expect 2 "replay: option '--json' needs a value" -- "$admit" replay "$g" --json
expect 2 "table: option '--html' needs a value" -- "$admit" table x.json --html
expect 2 "--mpfr-budget: expected a number of terms" -- "$admit" run "$g" --reference eager --candidate fused_epilogue --mpfr-budget=x

# Bad input and usage: exit 2, no report written.
expect 2 "no candidate named 'nope'" -- "$admit" replay "$g" --claim nope=lossless --json "$work/never.json"
[ -e "$work/never.json" ] && { echo "FAIL: a refused replay wrote a report"; fails=$((fails + 1)); }
expect 2 "unknown tier 'extra-high'" -- "$admit" replay "$g" --claim fused_epilogue=extra-high
expect 2 "expected NAME=TIER" -- "$admit" replay "$g" --claim fused_epilogue
"$admit" capture synth -o "$work/noref.h5" --op gelu --tokens 8 --channels 16 >/dev/null
expect 2 "no dataset '/reference'" -- "$admit" replay "$work/noref.h5"
expect 2 "expected at least one CAPTURE" -- "$admit" replay
expect 2 "cannot create a temporary file" -- "$admit" replay "$g" --json /nonexistent-admit-dir/r.json
# Reports are all or nothing (R10): a later one that cannot be written
# leaves none of the others.
expect 2 "/nonexistent-admit-dir/r.xml: cannot create a temporary file" -- "$admit" replay "$g" --json "$work/half.json" --junit /nonexistent-admit-dir/r.xml
[ -e "$work/half.json" ] && { echo "FAIL: a failed replay left its JSON report"; fails=$((fails + 1)); }
checks=$((checks + 1))
# Where the oracle runs (issue 17): --device cpu is the default's verdicts;
# --device cuda without a usable GPU is a refusal naming why, not a quiet
# run on the CPU, and writes no report.
expect 0 "fused_epilogue         -         lossless" -- "$admit" replay "$g" --device cpu --json "$work/dev.json"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); d=r["run"]["device"]; assert d=="oracle and gates: the CPU", d' \
    "$work/dev.json" || { echo "FAIL: the report does not say where the oracle ran"; fails=$((fails + 1)); }
# the phases' wall times (issue 17): read, oracle, statistics, other gates
/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timings"]
assert list(t) == ["read", "oracle", "statistics", "other_gates"], t
assert all(isinstance(x, float) and x >= 0 for x in t.values()), t
assert t["statistics"] > 0 and t["read"] > 0, t' "$work/dev.json" ||
    { echo "FAIL: the report has no phase timings"; fails=$((fails + 1)); }
checks=$((checks + 1))
expect 2 "--device: expected auto, cpu, cuda or cuda:N, got 'gpu'" -- "$admit" replay "$g" --device gpu
expect 2 "--device: expected auto, cpu, cuda or cuda:N, got 'cuda:x'" -- "$admit" replay "$g" --device cuda:x
if ! "$admit" version 2>&1 | grep -q 'device .*(sm_'; then
    expect 2 "replay --device cuda: " "(--device cpu runs the oracle on the CPU)" -- \
        "$admit" replay "$g" --device cuda --json "$work/nogpu.json"
    [ -e "$work/nogpu.json" ] && { echo "FAIL: a refused replay --device cuda wrote a report"; fails=$((fails + 1)); }
    expect 2 "replay --device cuda:N: " -- "$admit" replay "$g" --device cuda:0 --json "$work/nogpu.json"
    [ -e "$work/nogpu.json" ] && { echo "FAIL: a refused replay --device cuda:0 wrote a report"; fails=$((fails + 1)); }
    # the default (auto) without a usable GPU: the CPU, and the report says why
    expect 0 "fused_epilogue         -         lossless" -- "$admit" replay "$g" --json "$work/auto.json"
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["run"]["device"]
assert d.startswith("oracle and gates: the CPU (no usable GPU: "), d' "$work/auto.json" ||
        { echo "FAIL: replay's default did not say why it ran on the CPU"; fails=$((fails + 1)); }
    checks=$((checks + 1))
fi
finish cli_replay
