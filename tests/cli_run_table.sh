#!/bin/sh
# admit-kernel run (registry and plugin implementations) and table (the
# bundled fusion table, a lying table, schema errors, --strict).
# Usage: cli_run_table.sh ADMIT WORKDIR SRCDIR PLUGINDIR
set -u
admit=$1 work=$2 src=$3 plug=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
g=$src/captures/data/flux_fc1_gelu_small.h5
# run: registry implementations, with claims
expect 0 "fused_epilogue         lossless  lossless" "truncate               -         high" \
    -- "$admit" run "$g" --reference eager --candidate fused_epilogue --candidate truncate --claim fused_epilogue=lossless
expect 1 "looser than the claim (unsafe)" -- "$admit" run "$g" --reference eager --candidate bf16_accum --claim bf16_accum=lossless
expect 0 "linear+gelu" "fused_epilogue" "[reference]" -- "$admit" run --list
# the example plugin, admitted through the ABI; the broken ones refused
expect 0 "lossless" -- "$admit" run "$g" --reference eager --candidate "$plug/adm_plugin_example.so:example_fused_gelu" \
    --claim "$plug/adm_plugin_example.so:example_fused_gelu=lossless"
# a claim names a plugin kernel by its full spelling or by its short name;
# one that names no candidate, or two kernels of one short name, is refused
ex=$plug/adm_plugin_example.so:example_fused_gelu
expect 1 " exact     lossless" "looser than the claim (unsafe)" \
    -- "$admit" run "$g" --reference eager --candidate "$ex" --claim example_fused_gelu=exact
expect 0 " lossless  lossless" \
    -- "$admit" run "$g" --reference eager --candidate "$ex" --candidate fused_epilogue --claim example_fused_gelu=lossless
expect 2 "--claim: no candidate named 'nosuch'" \
    -- "$admit" run "$g" --reference eager --candidate "$ex" --candidate fused_epilogue --claim nosuch=exact
expect 2 "--claim example_fused_gelu: ambiguous" -- "$admit" run "$g" --reference eager --candidate "$ex" \
    --candidate "$plug/adm_plugin_v1.so:example_fused_gelu" --claim example_fused_gelu=lossless
expect 2 "no symbol 'adm_plugin_query'" -- "$admit" run "$g" --reference eager --candidate "$plug/adm_plugin_no_symbol.so:example_fused_gelu"
expect 2 "plugin ABI version 99" -- "$admit" run "$g" --reference eager --candidate "$plug/adm_plugin_broken_version.so:example_fused_gelu"
expect 2 "smaller than version 1's" -- "$admit" run "$g" --reference eager --candidate "$plug/adm_plugin_broken_size.so:example_fused_gelu"
expect 2 "cannot load" -- "$admit" run "$g" --reference eager --candidate "$work/missing.so:k"
expect 2 "no implementation 'nope'" -- "$admit" run "$g" --reference eager --candidate nope
expect 2 "expected CAPTURE, --reference" -- "$admit" run "$g" --candidate fused_epilogue
# Where run's oracle runs (issue 17), as replay's --device: cpu says so; the
# default (auto) without a usable GPU runs on the CPU and says why; cuda
# without one is a refusal that writes no report.
expect 2 "--device: expected auto, cpu, cuda or cuda:N, got 'gpu'" -- "$admit" run "$g" --reference eager \
    --candidate fused_epilogue --device gpu
expect 0 "fused_epilogue" -- "$admit" run "$g" --reference eager --candidate fused_epilogue --device cpu --json "$work/dev.json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["run"]["device"]; assert d=="oracle and gates: the CPU", d' \
    "$work/dev.json" || { echo "FAIL: run's report does not say where the oracle ran"; fails=$((fails + 1)); }
checks=$((checks + 1))
# run's phases' wall times (issue 17)
/usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timings"]
assert list(t) == ["read", "implementations", "oracle", "probes_views", "statistics", "other_gates"], t
assert all(isinstance(x, float) and x >= 0 for x in t.values()), t
assert t["read"] > 0 and t["implementations"] > 0 and t["oracle"] > 0 and t["probes_views"] > 0, t' "$work/dev.json" ||
    { echo "FAIL: run's report has no phase timings"; fails=$((fails + 1)); }
checks=$((checks + 1))
if ! "$admit" version 2>&1 | grep -q 'device .*(sm_'; then
    expect 2 "run --device cuda: " "(--device cpu runs the oracle on the CPU)" -- \
        "$admit" run "$g" --reference eager --candidate fused_epilogue --device cuda --json "$work/nogpu.json"
    [ -e "$work/nogpu.json" ] && { echo "FAIL: a refused run --device cuda wrote a report"; fails=$((fails + 1)); }
    expect 0 "fused_epilogue" -- "$admit" run "$g" --reference eager --candidate fused_epilogue --json "$work/auto.json"
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["run"]["device"]
assert d.startswith("oracle and gates: the CPU (no usable GPU: "), d' "$work/auto.json" ||
        { echo "FAIL: run's default did not say why it ran on the CPU"; fails=$((fails + 1)); }
    checks=$((checks + 1))
fi
# table: the bundled fusion table holds (every declared tier agrees)
expect 0 "flux1_ff_linear_gelu_epilogue" "ideogram_bf16_gate_rmsnorm         bf16_stats          high      high      holds" \
    "summary: 14 entries: 12 hold, 2 promotable, 0 unsafe, 0 errors. Every claim holds." \
    -- "$admit" table "$src/fusions/dit.json" --json "$work/t.json" --junit "$work/t.xml" --html "$work/html"
h=$work/html/index.html
check "an HTML report" grep -q "<table>" "$h"
check "the page opens with its verdict" grep -q '<div class="banner pass" role="status"><p class="headline">pass: every claim holds</p>' "$h"
check "the page shows the entry's description" grep -q "FLUX.1 / Qwen-Image FFN up-projection" "$h"
check "the page shows flux1's flips" grep -q '<th scope="row">flips</th><td class="num">340</td><td class="num">0</td>' "$h"
check "no flip rate where no reader is declared" sh -c "! grep -q 'not applicable' '$h'"
[ "$(grep -o "<svg" "$work/html/index.html" | wc -l)" = 14 ] || { echo "FAIL: not one error histogram per entry"; fails=$((fails + 1)); }
checks=$((checks + 1))
/usr/bin/python3 - "$work/t.json" <<'PY' || { echo "FAIL: table JSON"; fails=$((fails + 1)); }
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert len(r) == 14, len(r)
assert all(x["claim_holds"] for x in r)
high = sorted(x["source"] for x in r if x["verdict"] == "high")
assert high == sorted(["flux2_nvfp4_fc1_swiglu_quant", "ideogram_bf16_gate_rmsnorm", "sana_video_bf16_linear_attention",
                       "splitk_bf16_partials"]), high
# the summary every format states, each row's claim, what the table says of the entry (issue 18)
s = json.load(open(sys.argv[1]))["summary"]
assert (s["results"], s["holds"], s["promotable"], s["unsafe"], s["errors"], s["insufficient_evidence"]) == \
    (14, 12, 2, 0, 0, 0), s
assert s["passed"] and s["text"] == "14 entries: 12 hold, 2 promotable, 0 unsafe, 0 errors. Every claim holds.", s
assert sorted(x["claim_status"] for x in r) == ["holds"] * 12 + ["promotable"] * 2
f = [x for x in r if x["source"] == "flux1_ff_linear_gelu_epilogue"][0]
assert f["description"].startswith("FLUX.1 / Qwen-Image FFN up-projection"), f["description"]
assert f["static"] == {"accumulator": "fp32", "operand": "bf16", "intermediate": "fp32", "transcendental_ulps": 2,
                       "stable": True}, f["static"]
assert f["reader"] == "fp8_e4m3" and f["numbers"]["flips_reference"] == 340, f["numbers"]
ideo = [x for x in r if x["source"] == "ideogram_bf16_gate_rmsnorm"][0]
assert ideo["numbers"]["max_ratio_judged"] < ideo["numbers"]["max_ratio"]
mag = [g["reason"] for g in ideo["gates"] if g["gate"] == "magnitude"][0]
assert "Max error is %.3gx" % ideo["numbers"]["max_ratio_judged"] in mag, mag
PY
checks=$((checks + 1))
# --strict: the entries that measure stricter than declared are promotable
expect 1 "stricter than declared (promotable)" -- "$admit" table "$src/fusions/dit.json" --strict
# a high-tier fusion declared lossless: exit 1, and why
sed 's/"declared": "high"/"declared": "lossless"/' "$src/fusions/dit.json" | sed "s#\.\./captures#$src/captures#g" > "$work/lying.json"
# (names whole: they were cut at 30 characters, "sana_video_bf16_linear_attenti")
expect 1 "sana_video_bf16_linear_attention   bf16_gemm           lossless  high      unsafe" "looser than declared (unsafe)" \
    "summary: 14 entries: 8 hold, 2 promotable, 4 unsafe, 0 errors. 4 claims are violated." \
    "magnitude: RMS error" -- "$admit" table "$work/lying.json"
# schema errors: line, column and field
printf '{"fusions": [\n  {"name": "a",\n   "op": "linear",\n   "reference": "eager",\n   "candidate": "splitk_fp32",\n   "declared": "looseless",\n   "captures": ["x.h5"]}\n]}\n' > "$work/bad1.json"
expect 2 "bad1.json:6:4: fusions[0].declared: 'looseless' is not exact, lossless or high" -- "$admit" table "$work/bad1.json"
printf '{"fusions": [\n  {"name": "a", "op": "linear", "candidate": "x", "declared": "high", "captures": ["x.h5"]}\n]}\n' > "$work/bad2.json"
expect 2 "bad2.json:2:3: fusions[0].reference: required" -- "$admit" table "$work/bad2.json"
printf '{"fusions": [\n  {"name": "a", "op": "cubic", "reference": "e", "candidate": "x", "declared": "high", "captures": ["x.h5"]}\n]}\n' > "$work/bad3.json"
expect 2 "fusions[0].op: 'cubic' is not in the catalog" -- "$admit" table "$work/bad3.json"
printf '{"fusions": [ {"name": "a",, } ]}\n' > "$work/bad4.json"
expect 2 "bad4.json:1:" "not valid JSON" -- "$admit" table "$work/bad4.json"
printf '{"fusions": [{"name": "a", "op": "linear", "reference": "eager", "candidate": "splitk_fp32", "declared": "high", "captures": ["%s"]}]}\n' "$g" > "$work/bad7.json"
expect 2 "the capture's op is 'linear+gelu', the entry's 'linear'" -- "$admit" table "$work/bad7.json"
printf '{"fusions": [{"name": "a", "op": "linear+gelu", "reference": "eager", "candidate": "bf16_accum", "declared": "high",\n  "static": {"accumulator": "fp32"}, "captures": ["%s"]}]}\n' "$g" > "$work/bad8.json"
expect 2 "bad8.json:2:3: fusions[0].static: declares accumulator fp32, but implementation 'bf16_accum' is bf16" \
    -- "$admit" table "$work/bad8.json"
printf '{"fusions": [{"name": "a", "op": "linear+gelu", "reference": "eager", "candidate": "eager", "declared": "high",\n  "static": {"precision": "fp32"}, "captures": ["%s"]}]}\n' "$g" > "$work/bad9.json"
expect 2 "fusions[0].static: unknown key 'precision'" -- "$admit" table "$work/bad9.json"
printf '{"fusions": []}\n' > "$work/bad5.json"
expect 2 "non-empty array" -- "$admit" table "$work/bad5.json"
printf '{"fusions": [{"name": "a", "op": "linear", "reference": "eager", "candidate": "splitk_fp32", "declared": "high", "captures": ["nowhere.h5"]}]}\n' > "$work/bad6.json"
expect 2 "nowhere.h5: cannot open" -- "$admit" table "$work/bad6.json" --json "$work/never.json"
# a capture that cannot be read fails its entry; the table's report says so
grep -q '"verdict": "error"' "$work/never.json" || { echo "FAIL: the entry of a missing capture is not an error row"; fails=$((fails + 1)); }
# An entry's "params" the capture's inputs cannot satisfy (R1: modulate on a
# layernorm capture without shift/scale crashed), and errors found while
# measuring an entry name the table file, the line and the field (R9).
"$admit" capture synth -o "$work/ln.h5" --op layernorm --params '{}' --tokens 8 --channels 32 --with-outputs >/dev/null
printf '{"fusions":[{"name":"ln","op":"layernorm","reference":"eager","candidate":"fused_affine_folded",\n "declared":"lossless","params":{"modulate":true},"captures":["ln.h5"]}]}\n' > "$work/r1.json"
expect 2 "r1.json:2:24: fusions[0].params: entry 'ln': $work/ln.h5: the inputs do not fit op 'layernorm'" \
    "input 'shift' is required when 'modulate' is true" -- "$admit" table "$work/r1.json"
"$admit" capture synth -o "$work/rms.h5" --op rmsnorm --tokens 8 --channels 32 --with-outputs >/dev/null
"$admit" capture synth -o "$work/gn.h5" --op groupnorm --params '{"groups":2,"channels_last":true}' --tokens 64 --channels 8 --with-outputs >/dev/null
printf '{"fusions":[{"name":"my_entry","op":"rmsnorm",\n "reference":"nope","candidate":"fused_fp32","declared":"lossless","captures":["rms.h5"]}]}\n' > "$work/r9a.json"
expect 2 "r9a.json:2:2: fusions[0].reference: entry 'my_entry': op 'rmsnorm' has no implementation 'nope'" -- "$admit" table "$work/r9a.json"
printf '{"fusions":[{"name":"gn_entry","op":"groupnorm","reference":"eager","candidate":"fused_twopass","declared":"lossless",\n "params":{"groups":2,"channels_last":false},"captures":["gn.h5"]}]}\n' > "$work/r9b.json"
expect 2 "r9b.json:2:2: fusions[0].params: entry 'gn_entry': $work/gn.h5: the inputs do not fit" "input 'weight' has shape [8], expected [64]" \
    -- "$admit" table "$work/r9b.json"
printf '{"fusions":[{"name":"two","op":"rmsnorm","reference":"eager","candidate":"fused_fp32","declared":"lossless",\n "captures":["rms.h5",\n "gn.h5"]}]}\n' > "$work/r9c.json"
expect 2 "r9c.json:2:2: fusions[0].captures[1]: entry 'two': $work/gn.h5: the capture's op is 'groupnorm', the entry's 'rmsnorm'" \
    -- "$admit" table "$work/r9c.json"
expect 2 "--reference: op 'rmsnorm' has no implementation 'nope'" -- "$admit" run "$work/rms.h5" --reference nope --candidate fused_fp32

# Reports are all or nothing (R10): the HTML folder cannot be made, so
# neither the JSON nor the JUnit report is left.
printf '{"fusions":[{"name":"rms","op":"rmsnorm","reference":"eager","candidate":"fused_fp32","declared":"lossless","captures":["rms.h5"]}]}\n' > "$work/r10.json"
expect 2 "/proc/version/index.html: cannot create a temporary file" -- "$admit" table "$work/r10.json" --json "$work/r10.out.json" --junit "$work/r10.out.xml" --html /proc/version
[ -e "$work/r10.out.json" ] || [ -e "$work/r10.out.xml" ] && { echo "FAIL: a failed table left reports"; fails=$((fails + 1)); }
expect 2 "cannot create the report folder" -- "$admit" table "$work/r10.json" --json "$work/r10.out.json" --html "$work/no/such/dir"
[ -e "$work/r10.out.json" ] && { echo "FAIL: a failed table left its JSON report"; fails=$((fails + 1)); }
expect 0 "rms" -- "$admit" table "$work/r10.json" --json "$work/r10.out.json" --junit "$work/r10.out.xml" --html "$work/r10html"
[ -e "$work/r10.out.json" ] && [ -e "$work/r10.out.xml" ] && [ -e "$work/r10html/index.html" ] || { echo "FAIL: reports missing"; fails=$((fails + 1)); }
checks=$((checks + 3))

# Entry names follow the format's alphabet (R4).
printf '{"fusions":[{"name":"a b","op":"rmsnorm","reference":"eager","candidate":"fused_fp32","declared":"lossless","captures":["rms.h5"]}]}\n' > "$work/r4.json"
expect 2 "r4.json:1:14: fusions[0].name: entry name 'a b' may hold only letters" -- "$admit" table "$work/r4.json"

# Not a regular file (R2): a FIFO as the table, as a capture of an entry,
# as a plugin: refused at once.
mkfifo "$work/fifo.json" "$work/fifo.h5" "$work/fifo.so"
expect 2 "fifo.json: the fusion table must be a regular file, this is a FIFO" -- timeout 20 "$admit" table "$work/fifo.json"
printf '{"fusions": [{"name": "a", "op": "linear+gelu", "reference": "eager", "candidate": "fused_epilogue", "declared": "high", "captures": ["fifo.h5"]}]}\n' > "$work/fifocap.json"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" table "$work/fifocap.json"
expect 2 "fifo.so: the plugin must be a regular file, this is a FIFO" -- timeout 20 "$admit" run "$g" --reference eager --candidate "$work/fifo.so:k"
# Control characters from a table are escaped in the one-line message (R11).
printf '{"fusions":[{"name":"rms","op":"rms\\rnorm","reference":"eager","candidate":"fused_fp32","declared":"lossless","captures":["a\\nb.h5"]}]}' > "$work/ctl.json"
expect 2 "fusions[0].op: 'rms\\rnorm' is not in the catalog" -- "$admit" table "$work/ctl.json"
sed 's/rms\\rnorm/rmsnorm/' "$work/ctl.json" > "$work/ctl2.json"
expect 2 'a\nb.h5: cannot open' -- "$admit" table "$work/ctl2.json"
[ "$("$admit" table "$work/ctl2.json" 2>&1 | grep -c '^b\.h5')" = 0 ] || { echo "FAIL: a newline in a capture path splits the message"; fails=$((fails + 1)); }
checks=$((checks + 1))
finish cli_run_table
