#!/usr/bin/env python3
"""FLUX.1 MLP-sized admission on one GPU machine (issue 17), side by side in
one run: the capture with the GPU kernels' outputs (capture synth --backend
cuda), replay with the oracle on the CPU and on the GPU, run of the real
eager path against the cuBLASLt GELU_BIAS epilogue (wall time and peak RSS,
reading the file included), and the anchors: the PyTorch fp64 template (fp64
GEMM, GELU, RMS/max/mean per output, no bound, no special cases; data on the
device, CUDA-event time) and one cuBLAS DGEMM through PyTorch.

Usage: gpu_flux.py ADMIT_KERNEL OUTDIR [M K N]. Writes OUTDIR/flux.json and
prints a table. Exit 77 without torch or a GPU, saying so. With
GPU_FLUX_TRACE=1, replay --device cuda and run go once more each with
ADM_CUDA_TRACE=1 (core/adm_trace.h) after the timed runs, and their adm-trace
lines are printed (device work synchronized at each part: not the timed runs)."""
import json, os, platform, subprocess, sys, time, datetime

admit, outdir = sys.argv[1], sys.argv[2]
M, K, N = (int(v) for v in (sys.argv[3:6] if len(sys.argv) >= 6 else (4096, 3072, 12288)))
os.makedirs(outdir, exist_ok=True)
tmp = os.environ.get("TMPDIR", "/tmp")
cap = os.path.join(tmp, "adm_flux_%dx%dx%d.h5" % (M, K, N))
res = {"command": " ".join(sys.argv), "M": M, "K": K, "N": N,
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "host": platform.node(), "cpus": os.cpu_count(), "steps": {}}

try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no GPU")
    res["gpu"] = torch.cuda.get_device_name(0)
except Exception as e:  # the anchors need torch and a GPU
    print("gpu_flux: skipped: %s" % e)
    sys.exit(77)


def timed(name, argv, env=None):
    """wall seconds and peak RSS (MiB) of one command, its output kept"""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    with open(os.path.join(outdir, name + ".log"), "wb") as f:
        f.write(out)
    res["steps"][name] = {"argv": argv, "exit": rc, "wall_s": round(wall, 3), "peak_rss_mib": round(ru.ru_maxrss / 1024, 1)}
    print("%-28s exit %d  %8.3f s  %8.1f MiB" % (name, rc, wall, ru.ru_maxrss / 1024), flush=True)
    if env and env.get("ADM_CUDA_TRACE") == "1":
        for line in out.decode(errors="replace").splitlines():
            if line.startswith("adm-trace "):
                print("  " + line)
    return rc


base = [admit]
timed("capture_synth_cuda", base + ["capture", "synth", "-o", cap, "--tokens", str(M), "--channels", str(K),
      "--out-features", str(N), "--seed", "1", "--gzip", "0", "--with-outputs", "--backend", "cuda",
      "--model", "FLUX.1-dev (synthetic)", "--layer", "transformer_blocks.0.ff.net.0"])
if os.path.exists(cap):
    res["capture_bytes"] = os.path.getsize(cap)
    for dev in ("cpu", "cuda"):
        timed("replay_" + dev, base + ["replay", cap, "--device", dev, "--json", os.path.join(outdir, "replay_%s.json" % dev)])
    timed("run_cublas", base + ["run", cap, "--reference", "cublas_eager", "--candidate", "cublaslt_gelu_bias",
          "--json", os.path.join(outdir, "run.json")])
    # each phase's seconds from the reports, on stdout too: the JSON files may not come back from the machine
    for name in ("replay_cpu", "replay_cuda", "run"):
        try:
            with open(os.path.join(outdir, name + ".json")) as f:
                t = json.load(f).get("timings", {})
            res["steps"].get(name if name != "run" else "run_cublas", {})["timings"] = t
            print("%-28s %s" % (name + " timings", " ".join("%s %.3f" % kv for kv in t.items())), flush=True)
        except (OSError, ValueError) as e:
            print("%-28s unreadable: %s" % (name + " timings", e))
    if os.environ.get("GPU_FLUX_TRACE") == "1":
        tenv = dict(os.environ, ADM_CUDA_TRACE="1")
        timed("replay_cuda_trace", base + ["replay", cap, "--device", "cuda"], tenv)
        timed("run_cublas_trace", base + ["run", cap, "--reference", "cublas_eager", "--candidate",
              "cublaslt_gelu_bias"], tenv)
        # the admission's device work with the data resident: every kernel part of the traced replay (its
        # CUDA-event time), without the uploads, allocations and downloads around them
        kern = {"oracle." + k for k in ("widen_x", "widen_w", "row_norms", "dgemm", "cond_operand", "cond_gemm",
                                       "epilogue")} | \
               {"stats." + k for k in ("scale_blocks", "block_sums", "row_sums", "chan_sums", "scan", "chan_merge",
                                       "flip")}
        parts = {}
        with open(os.path.join(outdir, "replay_cuda_trace.log"), errors="replace") as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[0] == "adm-trace" and w[1] in kern and w[-1].startswith("gpu="):
                    parts.setdefault(w[1], []).append(float(w[-1][4:]))
        res["admission_device_parts_ms"] = {k: round(sum(v), 3) for k, v in sorted(parts.items())}
        res["admission_device_ms"] = round(sum(sum(v) for v in parts.values()), 3)
        res["admission_candidates"] = len(parts.get("stats.row_sums", []))

# the anchors, data resident on the device
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(1)
x = torch.randn(M, K, device=dev, generator=g).bfloat16()
w = (torch.randn(N, K, device=dev, generator=g) / K ** 0.5).bfloat16()
b = (torch.randn(N, device=dev, generator=g) * 0.1).bfloat16()
outs = [torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate="tanh") for _ in range(5)]


def template():
    o = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w.double(), b.double()), approximate="tanh")
    stats = []
    for c in outs:
        e = c.double() - o
        stats.append(torch.stack([e.square().mean().sqrt(), e.abs().max(), e.mean()]))
    return torch.stack(stats)


xd, wd = x.double(), w.double()


def dgemm():
    return xd @ wd.T


def median_ms(fn, reps=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


res["torch_fp64_template_ms"] = round(median_ms(template), 3)
res["torch_dgemm_ms"] = round(median_ms(dgemm), 3)
res["torch_version"] = torch.__version__
print("%-28s %8.3f ms (5 outputs, data on the device, median of 10)" % ("torch fp64 template", res["torch_fp64_template_ms"]))
print("%-28s %8.3f ms" % ("torch fp64 GEMM (cuBLAS)", res["torch_dgemm_ms"]))
if "admission_device_ms" in res:
    a = res["admission_device_ms"]
    res["admission_over_template"] = round(a / res["torch_fp64_template_ms"], 3)
    res["admission_over_dgemm"] = round(a / res["torch_dgemm_ms"], 3)
    print("%-28s %8.3f ms (%d candidates' statistics; %.2fx the template, %.2fx one DGEMM; goals 0.7x, 1.3x)" % (
        "admission, device kernels", a, res["admission_candidates"], res["admission_over_template"],
        res["admission_over_dgemm"]))
    print("  " + " ".join("%s %.3f" % kv for kv in res["admission_device_parts_ms"].items()))
with open(os.path.join(outdir, "flux.json"), "w") as f:
    json.dump(res, f, indent=1)
bad = [k for k, v in res["steps"].items() if v["exit"] != 0]
if bad:
    print("gpu_flux: failed: %s (logs in %s)" % (", ".join(bad), outdir))
    sys.exit(1)
