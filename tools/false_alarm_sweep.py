#!/usr/bin/env python3
"""False-alarm sweep: real kernels of every lossless class of the corpus
(tools/make_real_corpus.py) on many shapes and seeds, each judged by
`admit-kernel replay`; how many are rejected (goal 0) and how close the
rest come to each gate's limit. Writes a markdown table for bench/results/.

Run on the GPU machine, from the repository root, with the admit binary of
a build folder (as bench/gpu_run.sh does):

    export LD_LIBRARY_PATH=$PWD/build/rt:$PWD/build
    python3 tools/false_alarm_sweep.py --admit build/admit-kernel --per-class 50 --out sweep.md

Every sample is a fresh capture in a temporary folder (uncompressed,
deleted after its replay unless --keep): the family's reference path and
all its lossless candidates on one shape and seed (the SDPA backends share
their samples). The replays run in parallel (--jobs, one OpenMP thread
each) while the GPU makes the next captures; torch.compile compiles each
family once with dynamic shapes. --include-high adds the high classes (they
should all be rejected). --deadline stops making new samples (the table
then says how many each class got). --device cpu is the dry run of
make_real_corpus.py (stand-ins, for testing the plumbing without a GPU).

Columns: the worst (largest) RMS, max and ulp ratios over the samples of a
class (the magnitude gate's limit is 1.5), and for the bias statistics the
worst excess of the candidate's component over the reference path's, in
units of the gate's materiality floor 0.1 D (the gate fails above 1 when
the difference is also beyond 5 standard errors; D is the reference's RMS
error floored at the correctly rounded output's).
"""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_real_corpus as mrc  # noqa: E402

BIAS = ("mean", "sign", "gain", "channel", "row")


def bias_excess(n):
    """Each bias statistic's excess over the reference's, in units of the
    materiality floor 0.1 D (harness/gates.c, gate 2)."""
    D = max(n.get("rms_error_reference") or 0.0, n.get("rms_error_rounded") or 0.0)
    if not D > 0:
        return {k: None for k in BIAS}
    f = 0.1 * D
    g = lambda k: n.get(k) or 0.0  # noqa: E731  (null: not finite)
    orms = n.get("rms_oracle")
    return {
        "mean": (abs(g("mean_error_candidate")) - abs(g("mean_error_reference"))) / f,
        "sign": (abs(g("sign_mean_candidate")) - abs(g("sign_mean_reference"))) / f,
        "gain": ((abs(g("gain_candidate")) - abs(g("gain_reference"))) * orms / f) if orms is not None else None,
        "channel": (g("channel_bias_candidate") - g("channel_bias_reference")) / f,
        "row": (g("row_bias_candidate") - g("row_bias_reference")) / f,
    }


def failed_gates(r):
    """Short names of the failed gates; the magnitude gate split by which
    of its three statistics failed."""
    out = []
    for g in r.get("gates", []):
        if not g["applicable"] or g["passed"] or g["gate"] == "exact":
            continue
        if g["gate"] == "magnitude":
            why = g["reason"]
            if re.search(r"RMS error [-+0-9.]", why):
                out.append("magnitude:rms")
            if "Max error" in why:
                out.append("magnitude:max")
            if "ulp" in why:
                out.append("magnitude:ulp")
        else:
            out.append(g["gate"])
    return out


def replay(admit, path, threads):
    """admit-kernel replay --json on one capture; (results, error text)."""
    js = path + ".json"
    env = dict(os.environ, OMP_THREAD_LIMIT=str(threads), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    p = subprocess.run([admit, "replay", path, "--json", js], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, env=env)
    if p.returncode != 0 or not os.path.exists(js):
        return None, f"exit {p.returncode}: {p.stdout.strip()[-400:]}"
    with open(js) as f:
        d = json.load(f)
    os.unlink(js)
    return d, None


def shape_summary(shapes):
    """Ranges of the shape parameters over a class's samples."""
    keys = []
    for sh in shapes:
        for k in sh:
            if k != "tag" and k not in keys:
                keys.append(k)
    parts = []
    for k in keys:
        vals = [sh[k] for sh in shapes if k in sh]
        if all(isinstance(v, bool) for v in vals):
            parts.append(f"{k} {sum(vals)}/{len(vals)}")
        elif len(set(vals)) <= 4:
            parts.append(f"{k} {{{','.join(str(v) for v in sorted(set(vals)))}}}")
        else:
            parts.append(f"{k} {min(vals)}..{max(vals)}")
    return ", ".join(parts)


def fmt(x, spec=".3g"):
    return "-" if x is None else format(x, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--admit", required=True, help="the admit-kernel binary")
    ap.add_argument("--per-class", type=int, default=50, help="samples (shape and seed) per family (50)")
    ap.add_argument("--seed", type=int, default=1, help="base seed (1)")
    ap.add_argument("--out", default="-", help="markdown output file (default: stdout)")
    ap.add_argument("--json", default="", help="also write every judged candidate as JSON lines here")
    ap.add_argument("--include-high", action="store_true", help="add the high classes (should all be rejected)")
    ap.add_argument("--only", default="", help="comma-separated families (make_real_corpus.py --list)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel replays (CPU cores)")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per replay (1)")
    ap.add_argument("--deadline", type=float, default=420, help="stop making samples after this many seconds (420)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: the dry run's stand-ins")
    ap.add_argument("--keep", default="", help="keep the captures in this folder")
    a = ap.parse_args(argv)

    admit = os.path.abspath(a.admit)
    if not os.access(admit, os.X_OK):
        print(f"error: --admit {a.admit}: not an executable", file=sys.stderr)
        return 2
    fams = mrc.FAMILIES
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in {f.name for f in mrc.FAMILIES}]
        if unknown:
            print(f"error: --only: unknown families {unknown}", file=sys.stderr)
            return 2
        fams = [f for f in fams if f.name in names]
    tiers = ("lossless", "high") if a.include_high else ("lossless",)
    env = mrc.Env(a.device)
    env.dynamic = True
    st = env.settings()
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        work = a.keep
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="admit_sweep_")
        work = tmp.name
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs))
    pending = []
    rows = []                         # one per judged candidate
    samples = collections.defaultdict(list)   # class -> shapes
    skipped = collections.Counter()   # (class, why)
    errors = []
    kernels = {}
    t0 = time.time()
    stopped_at = None

    def collect(fut, fam, sh, seed, path, cands):
        d, err = fut.result()
        if not a.keep and os.path.exists(path):
            os.unlink(path)
        if err:
            errors.append((fam.name, sh["tag"], seed, err))
            return
        by_name = {r["candidate"]: r for r in d["results"]}
        for name, c, expected in cands:
            r = by_name.get(name)
            if r is None:
                errors.append((fam.name, sh["tag"], seed, f"no result for {name}"))
                continue
            rows.append({"family": fam.name, "class": c.cls, "tier": c.tier, "candidate": name, "shape": sh,
                         "seed": seed, "verdict": r["verdict"], "numbers": r["numbers"],
                         "failed": failed_gates(r), "reasons": [g["reason"] for g in r["gates"]
                                                                if g["applicable"] and not g["passed"]
                                                                and g["gate"] != "exact"],
                         "admit_version": d.get("admit_version")})

    rngs = {f.name: np.random.default_rng(mrc.seed_of("sweep", a.seed, f.name)) for f in fams}
    for i in range(a.per_class):
        if time.time() - t0 > a.deadline:
            stopped_at = i
            break
        for fam in fams:
            if not any(c.tier in tiers for c in fam.candidates.values()):
                continue
            sh = fam.sample_shape(rngs[fam.name])
            seed = mrc.seed_of("sweep", a.seed, fam.name, i)
            inp, ref, cands, skip = mrc.build(env, fam, sh, seed, want_tiers=tiers)
            for name, why in skip:
                skipped[(name, why[:120])] += 1
            if not cands:
                continue
            for name, c, _, _ in cands:
                samples[c.cls].append(sh)
                kernels[c.cls] = (c.tier, c.kernel, fam.reference_path)
            path = os.path.join(work, f"{fam.name}_{i:03d}_{sh['tag']}.h5")
            mrc.write(path, fam, sh, inp, ref, cands, "tools/false_alarm_sweep.py", compression=bool(a.keep))
            del inp, ref
            fut = pool.submit(replay, admit, path, a.threads)
            pending.append((fut, fam, sh, seed, path, [(n, c, e) for n, c, _, e in cands]))
        done = [p for p in pending if p[0].done()]
        for p in done:
            collect(*p)
            pending.remove(p)
        print(f"[{time.time() - t0:5.0f} s] round {i + 1}/{a.per_class}: {len(rows)} judged, "
              f"{len(pending)} replays pending", file=sys.stderr)
    for p in pending:
        collect(*p)
    pool.shutdown()
    elapsed = time.time() - t0
    if tmp:
        tmp.cleanup()

    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

    # ------------------------------------------------------------ the table
    by_class = collections.OrderedDict()
    for fam in fams:
        for c in fam.candidates.values():
            if env.dry_run or c.run is not None:   # not the dry run's stand-ins in a real run
                by_class.setdefault(c.cls, [])
    for r in rows:
        by_class.setdefault(r["class"], []).append(r)
    admit_version = next((r["admit_version"] for r in rows), "?")
    L = []
    L.append("# False-alarm sweep: real kernels against the path a model runs today")
    L.append("")
    cmd = " ".join(["python3", "tools/false_alarm_sweep.py"] + list(sys.argv[1:] if argv is None else argv))
    L.append(f"- command: `{cmd}`")
    mach = ", ".join(f"{k} {v}" for k, v in st.items() if k not in ("device",))
    L.append(f"- machine: {mach}; admit {admit_version}; {a.jobs} parallel replays")
    if env.dry_run:
        L.append("- **DRY RUN on the CPU: stand-ins, not the real kernels; these numbers say nothing about them**")
    L.append(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
             f"{elapsed:.0f} s; seed {a.seed}; {a.per_class} samples per family requested"
             + (f", stopped after {stopped_at} by --deadline {a.deadline:.0f}" if stopped_at is not None else ""))
    L.append("")
    L.append("Every sample is a fresh capture (a random shape in the family's range, DiT-like data of its own "
             "seed); the SDPA backends share samples. Ratios are the worst over the samples (magnitude limit "
             "1.5x). Bias columns: the worst excess of the candidate's component over the reference path's, in "
             "units of the materiality floor 0.1 D (the gate fails above 1, when also beyond 5 standard errors).")
    L.append("")
    L.append("## Lossless classes (goal: 0 rejected)")
    L.append("")
    L.append("| class | samples | exact | rejected | worst RMS ratio | worst max ratio | worst ulp ratio "
             "| mean | sign-mean | gain | per-channel | per-row | rejected by |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    high_lines = []
    for cls, rs in by_class.items():
        tier = kernels.get(cls, (None,))[0] or next((c.tier for f in fams for c in f.candidates.values()
                                                     if c.cls == cls), "")
        if tier not in tiers:
            continue
        names = sorted({r["candidate"] for r in rs})
        label = cls if names in ([], [cls]) else f"{cls} ({', '.join(names)})"
        n = len(rs)
        if n == 0:
            why = "; ".join(f"{w} ({k})" for (nm, w), k in skipped.items() if nm.endswith(cls)) or "no sample"
            if tier == "lossless":
                L.append(f"| {label} | 0 | | | | | | | | | | | not run: {why} |")
            else:
                high_lines.append(f"| {label} | 0 | | | | | not run: {why} |")
            continue
        ex = sum(r["verdict"] == "exact" for r in rs)
        hi = sum(r["verdict"] == "high" for r in rs)
        num = lambda k: [r["numbers"][k] for r in rs if r["numbers"].get(k) is not None]  # noqa: E731
        gates = collections.Counter(g for r in rs if r["verdict"] == "high" for g in r["failed"])
        gtxt = ", ".join(f"{g} {k}" for g, k in gates.most_common())
        if tier == "lossless":
            be = [bias_excess(r["numbers"]) for r in rs]
            worst = {k: max((b[k] for b in be if b[k] is not None), default=None) for k in BIAS}
            L.append(f"| {label} | {n} | {ex} | {hi} | {fmt(max(num('rms_ratio'), default=None))} "
                     f"| {fmt(max(num('max_ratio_judged'), default=None))} | {fmt(max(num('ulp_ratio'), default=None))} | "
                     + " | ".join(fmt(worst[k], ".2f") for k in BIAS) + f" | {gtxt} |")
        else:
            high_lines.append(f"| {label} | {n} | {hi} | {fmt(min(num('rms_ratio'), default=None))} "
                              f"| {fmt(min(num('max_ratio_judged'), default=None))} "
                              f"| {fmt(min(num('ulp_ratio'), default=None))} | {gtxt} |")
    if a.include_high:
        L.append("")
        L.append("## High classes (goal: every sample rejected)")
        L.append("")
        L.append("| class | samples | rejected | lowest RMS ratio | lowest max ratio | lowest ulp ratio | rejected by |")
        L.append("|---|---|---|---|---|---|---|")
        L.extend(high_lines)
    L.append("")
    L.append("## Shapes and kernels")
    L.append("")
    for cls, rs in by_class.items():
        if cls in kernels:
            tier, kern, refp = kernels[cls]
            L.append(f"- {cls} ({tier}): {kern}; reference: {refp}; shapes: {shape_summary(samples[cls])}")
    wrong = [r for r in rows if (r["tier"] == "lossless") == (r["verdict"] == "high")]
    if wrong:
        L.append("")
        L.append(f"## Verdicts against the class's tier ({len(wrong)}; the first 30)")
        L.append("")
        L.append("| class | shape | seed | verdict | rms | max | ulp | why |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in wrong[:30]:
            nm = r["numbers"]
            why = " ".join(r["reasons"]).replace("|", "/")[:300]
            L.append(f"| {r['class']} | {r['shape']['tag']} | {r['seed']} | {r['verdict']} | {fmt(nm['rms_ratio'])} "
                     f"| {fmt(nm['max_ratio_judged'])} | {fmt(nm['ulp_ratio'])} | {why} |")
    if errors or skipped:
        L.append("")
        L.append("## Not judged")
        L.append("")
        for fam, tag, seed, err in errors[:20]:
            L.append(f"- replay error: {fam} {tag} seed {seed}: {err}")
        if len(errors) > 20:
            L.append(f"- ... {len(errors) - 20} more replay errors")
        for (name, why), k in skipped.items():
            L.append(f"- skipped {name} {k}x: {why}")
    text = "\n".join(L) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)
        sys.stdout.write(text)
    lossless_rejected = sum(1 for r in rows if r["tier"] == "lossless" and r["verdict"] == "high")
    high_missed = sum(1 for r in rows if r["tier"] == "high" and r["verdict"] != "high")
    print(f"false_alarm_sweep: {len(rows)} judged in {elapsed:.0f} s; lossless rejected {lossless_rejected}; "
          f"high not rejected {high_missed}; replay errors {len(errors)}", file=sys.stderr)
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
