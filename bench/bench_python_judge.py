#!/usr/bin/env python3
"""admit.judge on tensors in memory against `admit-kernel replay` of the
same capture, less replay's read of the file.

    bench_python_judge.py CAPTURE [REPS] [--json OUT]
    bench_python_judge.py make INPUTS OUT


CAPTURE is made by `admit-kernel capture synth -o CAPTURE --with-outputs`
(the full-size case: --tokens 1024 --channels 3072 --out-features 12288,
FLUX.1's MLP up-projection: x 1024 x 3072 bf16, w 12288 x 3072, bias,
tanh-GELU, every registered implementation as a candidate and the special
cases; at full size its bf16-accumulation candidate alone takes about
15 CPU-minutes to synthesize). `make` is the quicker way to a capture of
the same size: INPUTS from `capture synth` without --with-outputs (x, w
and bias only), OUT the same inputs with the eager path's output as the
reference (the GEMM and bias in fp32, rounded to bf16, then GELU in fp32,
rounded) and the fused epilogue's as the one candidate (one rounding at
the end), written uncompressed with admit.write_capture. Its tensors are read once with h5py into NumPy arrays (a user's
tensors in memory; not timed), then, REPS times (default 3), alternating:

    admit.judge(...)                          in this process, perf_counter around the call
    admit-kernel replay CAPTURE --json F      a whole process, wall clock
    admit-kernel capture validate CAPTURE     a whole process: the sandboxed read of the
                                              file and the catalog checks replay makes first

and reports the medians of wall and CPU time (CPU: this process's for
admit.judge, its threads included; the children's, the sandboxed reader
included, for the CLI), replay less validate (replay's work past its read
of the file) and admit.judge against it; on a shared machine the CPU
times are the steadier. The verdicts of both paths
are checked equal (every field of the JSON rows but the source).
Needs the package on PYTHONPATH (BUILD/python) and ADMIT_KERNEL (default
BUILD/admit-kernel beside that package)."""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

import admit

_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
            "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "float4_e2m1fn": "fp4_e2m1"}
_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _tensor(ds):
    dt = _text(ds.attrs["dtype"])
    dt = _ALIASES.get(dt, dt)
    a = ds[()]
    return a if dt in ("fp32", "fp64") else admit.Bits(a.view(_WIDTH[a.dtype.itemsize]), dt)


def _group(g):
    return {k: _tensor(g[k]) for k in g} if g is not None else {}


def read(path, outputs=True):
    """judge()'s arguments from a capture file, read with h5py."""
    with h5py.File(path, "r") as f:
        if not outputs:
            return dict(op=_text(f.attrs["op"]), params=_text(f.attrs.get("op_params", "{}")),
                        inputs=_group(f["inputs"]))
        special = {}
        for case in (f["special"] if "special" in f else {}):
            cg = f["special"][case]
            spec = {"inputs": _group(cg.get("inputs"))}
            if "reference" in cg:
                spec["reference"] = _tensor(cg["reference"])
            if "reference_refused" in cg.attrs:
                spec["refused"] = _text(cg.attrs["reference_refused"])
            if "candidates" in cg:
                spec["candidates"] = _group(cg["candidates"])
            special[case] = spec
        return dict(op=_text(f.attrs["op"]), params=_text(f.attrs.get("op_params", "{}")), inputs=_group(f["inputs"]),
                    reference=_tensor(f["reference"]), candidates=_group(f["candidates"]), special=special or None)


def _bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def _f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _gelu_tanh(v):
    v = v.astype(np.float32)
    return (np.float32(0.5) * v * (np.float32(1) + np.tanh(np.float32(0.7978845608028654) *
                                                        (v + np.float32(0.044715) * v * v * v)))).astype(np.float32)


def make(inputs, out):
    kw = read(inputs, outputs=False)
    if kw["op"] != "linear+gelu":
        sys.exit(f"{inputs}: a linear+gelu capture from capture synth, not {kw['op']}")
    x, w, b = (kw["inputs"][k].array for k in ("x", "w", "bias"))
    acc = _f32(x) @ _f32(w).T + _f32(b)
    ref = _bf16(_gelu_tanh(_f32(_bf16(acc))))
    fused = _bf16(_gelu_tanh(acc))
    admit.write_capture(out, "linear+gelu", params=kw["params"], inputs=kw["inputs"], reference=admit.Bits(ref, "bf16"),
                        candidates={"fused_epilogue": admit.Bits(fused, "bf16")}, model="synthetic",
                        source=f"bench_python_judge.py make {inputs}", compression=False)
    print(f"wrote {out}")


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _wall(cmd):
    """(wall seconds, CPU seconds of the process and the children it waited for)"""
    t0, c0 = time.perf_counter(), _children_cpu()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt, dc = time.perf_counter() - t0, _children_cpu() - c0
    if r.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
    return dt, dc


def main(argv):
    args, out = list(argv), None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    if len(args) == 3 and args[0] == "make":
        make(args[1], args[2])
        return 0
    if not args or args[0].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    path, reps = args[0], int(args[1]) if len(args) > 1 else 3
    kernel = os.environ.get("ADMIT_KERNEL") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(admit.__file__))), "..", "admit-kernel")
    t0 = time.perf_counter()
    kw = read(path)
    t_read = time.perf_counter() - t0
    x = kw["inputs"]["x"]
    shape = f"x {'x'.join(map(str, np.shape(x.array if isinstance(x, admit.Bits) else x)))}, " \
            f"w {'x'.join(map(str, np.shape(kw['inputs']['w'].array)))}, {len(kw['candidates'])} candidates"
    print(f"{path}: {kw['op']} {shape}; read into memory with h5py in {t_read:.2f} s (not timed below)", flush=True)
    wall = {"judge": [], "replay": [], "validate": []}
    cpu = {"judge": [], "replay": [], "validate": []}
    with tempfile.TemporaryDirectory() as tmp:
        rep_json = os.path.join(tmp, "replay.json")
        for r in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            got = admit.judge(**kw)
            wall["judge"].append(time.perf_counter() - t0)
            cpu["judge"].append(time.process_time() - c0)
            for k, cmd in (("replay", [kernel, "replay", path, "--json", rep_json]),
                           ("validate", [kernel, "capture", "validate", path])):
                w, c = _wall(cmd)
                wall[k].append(w)
                cpu[k].append(c)
            print(f"rep {r + 1}: admit.judge {wall['judge'][-1]:.3f} s ({cpu['judge'][-1]:.3f} CPU), "
                  f"replay {wall['replay'][-1]:.3f} s ({cpu['replay'][-1]:.3f} CPU), "
                  f"validate {wall['validate'][-1]:.3f} s ({cpu['validate'][-1]:.3f} CPU)", flush=True)
        with open(rep_json) as f:
            want = json.load(f)["results"]
    same = len(want) == len(got) and all(dict(got[w["candidate"]].raw, source=w["source"]) == w for w in want)
    med = {k: statistics.median(v) for k, v in wall.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    beyond_read = med["replay"] - med["validate"]
    cbeyond = cmed["replay"] - cmed["validate"]
    result = {
        "capture": os.path.abspath(path), "op": kw["op"], "shape": shape, "reps": reps,
        "wall_s": wall, "cpu_s": cpu, "median_wall_s": med, "median_cpu_s": cmed,
        "replay_less_read_wall_s": beyond_read, "replay_less_read_cpu_s": cbeyond,
        "judge_over_replay_less_read_wall": med["judge"] / beyond_read if beyond_read > 0 else None,
        "judge_over_replay_less_read_cpu": cmed["judge"] / cbeyond if cbeyond > 0 else None,
        "load_average": os.getloadavg(), "verdicts_equal": same, "verdicts": {n: v.tier for n, v in got.items()},
    }
    print(f"medians, wall: admit.judge {med['judge']:.3f} s; replay {med['replay']:.3f} s less validate "
          f"{med['validate']:.3f} s = {beyond_read:.3f} s; ratio {result['judge_over_replay_less_read_wall']:.3f}")
    print(f"medians, CPU:  admit.judge {cmed['judge']:.3f} s; replay {cmed['replay']:.3f} s less validate "
          f"{cmed['validate']:.3f} s = {cbeyond:.3f} s; ratio {result['judge_over_replay_less_read_cpu']:.3f}")
    print(f"verdicts equal: {same}; load average at the end {os.getloadavg()}")
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
