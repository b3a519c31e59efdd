"""admit from Python: judge a candidate kernel's output against the
reference path's, on tensors held in memory, as `admit-kernel replay`
judges a capture file; capture a live torch module's activations; read a
fusion table's results.

    import admit
    v = admit.judge("linear+gelu", params={"approximate": "tanh"},
                    inputs={"x": x, "w": fc1.weight, "bias": fc1.bias},
                    reference=y_ref, candidates={"fused": y_fused})
    v["fused"].tier                                   # "lossless"
    admit.assert_tier(v, tier="lossless")             # AssertionError with the reasons

Tensors are NumPy arrays (float16, float32, float64; bf16 and fp8 as bit
patterns with the dtype named: admit.Bits(u16, "bf16") or (u16, "bf16")) or
torch tensors of any device (moved to the host; bf16 and fp8 by their
bits). The library reads them where they lie, with their strides.
ctypes over libadmit (harness/adm_harness.h, reports/adm_report.h,
captures/adm_capture.h); the verdicts are replay's JSON rows."""
import ctypes
import json as _json
import os

from . import _lib
from ._lib import OP_PARAMS_WORDS, OpShapes
from ._tensors import Bits, array_of, describe

__all__ = ["Bits", "Capture", "Error", "TIERS", "Verdict", "assert_tier", "capture", "judge", "judge_pooled", "ops",
           "replay", "table", "write_capture", "library_path"]

TIERS = ("exact", "lossless", "high")

_L, library_path = _lib.load()


class Error(Exception):
    """A failure inside libadmit: its message, and its status name
    (ADM_ERR_FORMAT, ADM_ERR_RANGE, ...)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        self.status = status


def _check(status):
    if status != 0:
        msg = _L.adm_error_message()
        name = _L.adm_status_name(status)
        raise Error(msg.decode("utf-8", "replace") if msg else "admit: error",
                    name.decode() if name else str(status))


def _enc(s, what):
    if not isinstance(s, str):
        raise ValueError(f"{what}: expected a string, got {type(s).__name__}")
    if "\0" in s:
        raise ValueError(f"{what}: a NUL character in {s!r}")
    return s.encode("utf-8")


def _last_message():
    m = _L.adm_error_message()
    return m.decode("utf-8", "replace") if m else ""


def _name(name, what):
    b = _enc(name, what)
    if _L.adm_name_check(f"{what}: name".encode(), b) != 0:
        raise ValueError(_last_message())
    return b


def ops():
    """The names of the ops in admit's catalog, with their inputs (optional
    ones marked '?')."""
    out = {}
    for i in range(_L.adm_op_count()):
        op = _L.adm_op_at(i)
        out[_L.adm_op_name(op).decode()] = tuple(
            _L.adm_op_input_name(op, k).decode() + ("?" if _L.adm_op_input_optional(op, k) else "")
            for k in range(_L.adm_op_input_count(op)))
    return out


# ---------------------------------------------------------------- verdicts

class Verdict:
    """One candidate's verdict: a row of replay's JSON report.

    tier        "exact", "lossless" or "high"
    reasons     one sentence per failed gate (empty when every gate passed)
    numbers     the deciding numbers (rms_ratio, max_ratio_judged, ulp_ratio, ...)
    power       the smallest bias and RMS ratio its evidence would have rejected
    oracle      the oracle's certificate (certified, bounds, assumption, max_bound)
    gates, bias, evidence, histogram: the rest of the row; raw: the row itself
    per_capture a pooled verdict's captures' own verdicts (admit.judge_pooled)"""

    def __init__(self, row):
        self.raw = row
        self.candidate = row.get("candidate")
        self.op = row.get("op")
        self.source = row.get("source")
        self.tier = row.get("verdict")
        self.claim = row.get("claim")
        self.claim_holds = row.get("claim_holds")
        self.error = (row.get("error") or {}).get("message")
        self.numbers = row.get("numbers", {})
        self.gates = row.get("gates", [])
        self.oracle = row.get("oracle", {})
        self.power = row.get("power", {})
        self.bias = row.get("bias", {})
        self.evidence = row.get("evidence", {})
        self.histogram = row.get("ulp_error_histogram", {})
        self.per_capture = []
        self.reasons = [g["reason"] for g in self.gates if g.get("applicable") and not g.get("passed")]
        if self.error:
            self.reasons = [self.error]

    rms_ratio = property(lambda self: self.numbers.get("rms_ratio"))
    max_ratio = property(lambda self: self.numbers.get("max_ratio_judged"))
    ulp_ratio = property(lambda self: self.numbers.get("ulp_ratio"))

    def holds(self, tier, strict=False):
        """True when the verdict meets `tier` (exactly, with strict)."""
        if tier not in TIERS:
            raise ValueError(f"tier: {tier!r} is not one of {', '.join(TIERS)}")
        if self.tier not in TIERS:
            return False
        got, want = TIERS.index(self.tier), TIERS.index(tier)
        return got == want if strict else got <= want

    def __repr__(self):
        return (f"Verdict(candidate={self.candidate!r}, op={self.op!r}, tier={self.tier!r}, "
                f"rms_ratio={self.rms_ratio!r})")

    def __str__(self):
        head = f"{self.candidate} ({self.op}): {self.tier}"
        if self.rms_ratio is not None:
            head += f", RMS {self.rms_ratio:.3g}x and max {self.max_ratio:.3g}x the reference path's error"
        return "\n".join([head] + ["  " + r for r in self.reasons])


def _rows(report):
    text = ctypes.c_char_p()
    _check(_L.adm_report_json(report, ctypes.byref(text)))
    return _json.loads(text.value.decode("utf-8"))["results"]


# ---------------------------------------------------------------- captures in memory

def _shape_str(shape):
    return "[" + ", ".join(str(int(n)) for n in shape) + "]"


class Capture:
    """One op's tensors as a kernel saw them, in memory: judged as replay
    judges the same capture written to a file, or written as that file.

    op          an op of admit's catalog (admit.ops()), or one of your own
                with oracle= (its fp64 evaluation)
    params      the op's parameters: a dict (or JSON text)
    inputs      the op's inputs by the catalog's names: {"x": x, "w": w, ...}
    reference   the output of the path the model runs today
    candidates  {name: output} of the implementations to judge
    oracle      fp64, for an op outside the catalog
    special     {case: {"inputs": {...}, "reference": t or "refused": "ADM_ERR_SHAPE",
                        "candidates": {...}}}: special-value cases
    model, layer, step, source: provenance, written into a capture file"""

    def __init__(self, op, params=None, inputs=None, reference=None, candidates=None, oracle=None, special=None,
                 model="", layer="", step=None, source="admit (Python)"):
        self.op, self.params, self.inputs, self.reference = op, params, inputs, reference
        self.candidates, self.oracle, self.special = candidates, oracle, special
        self.model, self.layer, self.step, self.source = model, layer, step, source

    # -- checks, each naming the argument at fault
    def _params_text(self):
        p = self.params
        if p is None:
            return "{}"
        if isinstance(p, str):
            try:
                parsed = _json.loads(p)
            except ValueError as e:
                raise ValueError(f"params: not JSON: {e}") from None
        else:
            parsed = p
        if not isinstance(parsed, dict):
            raise ValueError(f"params: expected a dict of the op's parameters, got {type(parsed).__name__}")
        try:
            return _json.dumps(parsed, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"params: {e}") from None

    def _tensors(self, group, what, required):
        if group is None:
            group = {}
        if not isinstance(group, dict):
            raise ValueError(f"{what}: expected a dict of name -> tensor, got {type(group).__name__}")
        if required and not group:
            raise ValueError(f"{what}: {required}")
        out = []
        for name, value in group.items():
            b = _name(name, what)
            a, dt = array_of(value, f"{what}[{name!r}]")
            out.append((name, b, a, dt))
        return out

    def _output_shape(self, opp, params_buf, ins, what):
        shapes = OpShapes()
        for name, b, a, _ in ins:
            k = _L.adm_op_input_index(opp, b)
            if k < 0:
                names = ", ".join(ops()[self.op])
                raise ValueError(f"{what}: op '{self.op}' has no input {name!r} (its inputs: {names}; ? optional)")
            shapes.present[k] = 1
            shapes.ndim[k] = a.ndim
            for d, n in enumerate(a.shape):
                shapes.shape[k][d] = n
        ndim = ctypes.c_int()
        out = (ctypes.c_int64 * _lib.MAX_DIMS)()
        if _L.adm_op_output_shape(opp, params_buf, ctypes.byref(shapes), ctypes.byref(ndim), out) != 0:
            raise ValueError(f"{what}: {_last_message()}")
        return tuple(out[d] for d in range(ndim.value))

    @staticmethod
    def _same_shape(a, shape, what, op):
        if tuple(a.shape) != tuple(shape):
            raise ValueError(f"{what}: shape {_shape_str(a.shape)}, expected {_shape_str(shape)} "
                             f"(the output of '{op}' for these inputs)")

    def _build(self, keep):
        """A borrowed adm_capture over the arrays (kept alive in `keep`)."""
        if not isinstance(self.op, str) or not self.op:
            raise ValueError(f"op: expected an op name (admit.ops()), got {self.op!r}")
        op_b = _enc(self.op, "op")
        opp = _L.adm_op_find(op_b)
        params = self._params_text()
        params_buf = (ctypes.c_uint64 * OP_PARAMS_WORDS)()
        if opp:
            if _L.adm_op_params_parse(opp, params.encode(), params_buf) != 0:
                raise ValueError(f"params: {_last_message()}")
        elif self.oracle is None:
            raise ValueError(f"op: {self.op!r} is not in admit's catalog ({', '.join(ops())}); an op of your own "
                             "needs oracle=, its fp64 evaluation")
        ins = self._tensors(self.inputs, "inputs", "an op needs its inputs")
        orc = None
        if self.oracle is not None:
            oa, odt = array_of(self.oracle, "oracle")
            if odt != "fp64":
                raise ValueError(f"oracle: must be fp64 (float64), not {odt}")
            orc = oa
        if opp:
            out_shape = self._output_shape(opp, params_buf, ins, "inputs")
            if orc is not None:
                self._same_shape(orc, out_shape, "oracle", self.op)
        else:
            out_shape = tuple(orc.shape)
        ref = None
        if self.reference is not None:
            ref = array_of(self.reference, "reference")
            self._same_shape(ref[0], out_shape, "reference", self.op)
        cands = self._tensors(self.candidates, "candidates", None)
        for name, _, a, _ in cands:
            self._same_shape(a, out_shape, f"candidates[{name!r}]", self.op)
        specials = []
        for case, spec in (self.special or {}).items():
            what = f"special[{case!r}]"
            cb = _name(case, "special")
            if not isinstance(spec, dict):
                raise ValueError(f"{what}: expected a dict with 'inputs' and 'reference' or 'refused'")
            unknown = set(spec) - {"inputs", "reference", "refused", "candidates"}
            if unknown:
                raise ValueError(f"{what}: unknown keys {sorted(unknown)}")
            sin = self._tensors(spec.get("inputs"), f"{what}['inputs']", "a case needs its inputs")
            refused = spec.get("refused")
            if refused is not None and "reference" in spec:
                raise ValueError(f"{what}: give a reference or a refusal, not both")
            code = ctypes.c_int()
            if refused is not None and (_L.adm_status_from_name(_enc(refused, f"{what}['refused']"),
                                                                ctypes.byref(code)) != 0 or code.value == 0):
                raise ValueError(f"{what}['refused']: {refused!r} is not a status name (ADM_ERR_SHAPE, ...)")
            sref = array_of(spec["reference"], f"{what}['reference']") if "reference" in spec else None
            scands = self._tensors(spec.get("candidates"), f"{what}['candidates']", None)
            if opp and refused is None:
                sshape = self._output_shape(opp, params_buf, sin, f"{what}['inputs']")
                if sref is not None:
                    self._same_shape(sref[0], sshape, f"{what}['reference']", self.op)
                for name, _, a, _ in scands:
                    self._same_shape(a, sshape, f"{what}['candidates'][{name!r}]", self.op)
            specials.append((cb, sin, refused and code.value, sref, scands))
        step = -1 if self.step is None else self.step
        if not isinstance(step, int) or isinstance(step, bool):
            raise ValueError(f"step: expected an integer, got {self.step!r}")

        cap = ctypes.c_void_p()
        _check(_L.adm_capture_create_borrowed(op_b, params.encode(), ctypes.byref(cap)))
        keep.append(cap)
        try:
            def view(a, dt, what):
                t, held = describe(a, dt, what)
                keep.append(held)
                keep.append(t)
                return ctypes.byref(t)

            _check(_L.adm_capture_set_provenance(cap, _enc(self.model or "", "model"), _enc(self.layer or "", "layer"),
                                                 max(step, -1), _enc(self.source or "", "source")))
            for name, b, a, dt in ins:
                _check(_L.adm_capture_add_input(cap, b, view(a, dt, f"inputs[{name!r}]")))
            if ref is not None:
                _check(_L.adm_capture_set_reference(cap, view(ref[0], ref[1], "reference")))
            for name, b, a, dt in cands:
                _check(_L.adm_capture_add_candidate(cap, b, view(a, dt, f"candidates[{name!r}]")))
            if orc is not None:
                _check(_L.adm_capture_set_oracle(cap, view(orc, "fp64", "oracle")))
            for cb, sin, refusal, sref, scands in specials:
                idx = ctypes.c_int()
                _check(_L.adm_capture_add_special(cap, cb, ctypes.byref(idx)))
                for name, b, a, dt in sin:
                    _check(_L.adm_capture_special_add_input(cap, idx, b, view(a, dt, "special input")))
                if sref is not None:
                    _check(_L.adm_capture_special_set_reference(cap, idx, view(sref[0], sref[1], "special reference")))
                if refusal:
                    _check(_L.adm_capture_special_set_refusal(cap, idx, refusal))
                for name, b, a, dt in scands:
                    _check(_L.adm_capture_special_add_candidate(cap, idx, b, view(a, dt, "special candidate")))
            # the checks replay makes of what it reads (catches anything the above missed)
            status = _L.adm_capture_validate(cap)
            if status != 0:
                raise ValueError(_last_message())
        except BaseException:
            _L.adm_capture_free(cap)
            keep.remove(cap)
            raise
        return cap

    def _check_judgeable(self):
        if self.reference is None:
            raise ValueError("reference: required: candidates are judged against the reference path's output")
        if not self.candidates:
            raise ValueError("candidates: required: at least one candidate output to judge")

    def judge(self):
        """{candidate name: Verdict}, as `admit-kernel replay` judges this capture."""
        return {v.candidate: v for v in _judge_captures([self], None)[0]}

    def write(self, path, compress=True):
        """Writes the capture file (captures/FORMAT.md) atomically: a
        temporary file beside path, renamed into place when complete."""
        path = os.fspath(path)
        keep = []
        cap = self._build(keep)
        try:
            _check(_L.adm_capture_write(cap, _enc(path, "path"), 4 if compress else 0))
        finally:
            _L.adm_capture_free(cap)
        return path


def _judge_captures(captures, labels):
    """Replay's rows for the captures: (per-capture rows, pooled rows)."""
    for i, c in enumerate(captures):
        if not isinstance(c, Capture):
            raise ValueError(f"captures[{i}]: expected an admit.Capture, got {type(c).__name__}")
        c._check_judgeable()
    keep, caps = [], []
    report = ctypes.c_void_p()
    try:
        for c in captures:
            caps.append(c._build(keep))
        _check(_L.adm_report_create(b"admit (Python)", ctypes.byref(report)))
        arr = (ctypes.c_void_p * len(caps))(*[c.value for c in caps])
        lab = None
        if labels is not None:
            lab = (ctypes.c_char_p * len(caps))(*[_enc(s, "labels") for s in labels])
        _check(_L.adm_report_add_replay(report, arr, lab, len(caps)))
        rows = [Verdict(r) for r in _rows(report)]
    finally:
        if report:
            _L.adm_report_free(report)
        for c in caps:
            _L.adm_capture_free(c)
    ncap = sum(len(c.candidates) for c in captures)
    return rows[:ncap], rows[ncap:]


def replay(captures, labels=None):
    """What `admit-kernel replay CAPTURE...` reports, for captures in memory
    (admit.Capture): a list of Verdict, each capture's candidates in order
    (source: labels[i], or "capture i" from 1), then for a candidate of one
    op found in several captures its verdict on their pooled evidence
    (source "pooled (N captures)"). The rows of replay's JSON report."""
    if not isinstance(captures, (list, tuple)) or not captures:
        raise ValueError("captures: expected a non-empty list of admit.Capture")
    if labels is not None and (not isinstance(labels, (list, tuple)) or len(labels) != len(captures)):
        raise ValueError(f"labels: expected one label for each of the {len(captures)} captures")
    per, pooled = _judge_captures(list(captures), labels)
    return per + pooled


def judge(op, params=None, *, inputs, reference, candidates, oracle=None, special=None):
    """One verdict per candidate, {name: Verdict}: exactly what `admit-kernel
    replay` gives for the same tensors written to a capture. ValueError names
    the argument at fault (op, params, inputs, reference, candidates, ...);
    admit.Error carries a failure inside the library."""
    return Capture(op, params, inputs, reference, candidates, oracle, special).judge()


def judge_pooled(captures, labels=None):
    """Judges each candidate on the pooled evidence of the captures it is in
    (many layers and steps of one fusion), as replay does with several
    captures: {name: Verdict}, each with .per_capture, the captures' own
    verdicts (a candidate in one capture: its verdict). captures: Capture
    objects or dicts of judge()'s arguments, all of one op."""
    if not isinstance(captures, (list, tuple)) or not captures:
        raise ValueError("captures: expected a non-empty list of admit.Capture or dicts of judge()'s arguments")
    caps = []
    for i, c in enumerate(captures):
        if isinstance(c, dict):
            try:
                c = Capture(**c)
            except TypeError as e:
                raise ValueError(f"captures[{i}]: {e}") from None
        if not isinstance(c, Capture):
            raise ValueError(f"captures[{i}]: expected an admit.Capture or a dict, got {type(c).__name__}")
        caps.append(c)
    if len({c.op for c in caps}) > 1:
        raise ValueError(f"captures: a pool is of one op's captures, got {sorted({str(c.op) for c in caps})}")
    if labels is not None and len(labels) != len(caps):
        raise ValueError(f"labels: {len(labels)} labels for {len(caps)} captures")
    per, pooled = _judge_captures(caps, labels)
    out = {}
    for v in per:
        out.setdefault(v.candidate, []).append(v)
    result = {}
    for name, vs in out.items():
        p = next((v for v in pooled if v.candidate == name), vs[0] if len(vs) == 1 else None)
        p = Verdict(p.raw)
        p.per_capture = vs
        result[name] = p
    return result


def assert_tier(*args, tier, strict=False, **kwargs):
    """Asserts that every candidate meets `tier` (with strict, exactly it):
    AssertionError whose message is each failing candidate's reasons.
    Takes judge()'s arguments, or a Verdict, or judge()'s result. Returns
    the verdicts."""
    if tier not in TIERS:
        raise ValueError(f"tier: {tier!r} is not one of {', '.join(TIERS)}")
    if len(args) == 1 and not kwargs and isinstance(args[0], (Verdict, dict)):
        verdicts = args[0] if isinstance(args[0], dict) else {args[0].candidate: args[0]}
        if not all(isinstance(v, Verdict) for v in verdicts.values()):
            raise ValueError("assert_tier: expected a Verdict, judge()'s result, or judge()'s arguments")
    else:
        verdicts = judge(*args, **kwargs)
    bad = [v for v in verdicts.values() if not v.holds(tier, strict)]
    if bad:
        lines = []
        for v in bad:
            what = "exactly " if strict else ""
            lines.append(f"{v.candidate} ({v.op}) measured {v.tier}, claimed {what}{tier}" +
                         (f" (RMS {v.rms_ratio:.4g}x, max {v.max_ratio:.4g}x the reference path's error)"
                          if v.rms_ratio is not None and v.max_ratio is not None else ""))
            lines += ["  " + r for r in v.reasons] or ["  (every gate passed: the verdict is stricter than claimed)"]
        raise AssertionError("\n".join(lines))
    return verdicts


def write_capture(path, op, inputs, params=None, reference=None, candidates=None, oracle=None, special=None,
                  model="", layer="", step=None, source="admit (Python)", compression=True):
    """Writes one capture file (captures/FORMAT.md) with libadmit's writer:
    the arguments of tools/admit_capture.py's write_capture."""
    return Capture(op, params, inputs, reference, candidates, oracle, special, model, layer, step,
                   source).write(path, compress=compression)


# ---------------------------------------------------------------- fusion tables

def table(path, strict=False):
    """Measures every entry of a fusion table (fusions/FORMAT.md) as
    `admit-kernel table` does: a list of Verdict, each with .candidate
    (the entry's candidate), .source (its name), .claim (its declared tier),
    .claim_holds, or .error for an entry that could not be measured.
    admit.Error when the table itself is refused."""
    try:
        p = os.fspath(path)
    except TypeError:
        raise ValueError(f"path: expected a path, got {type(path).__name__}") from None
    tr = _lib.TableResult()
    report = ctypes.c_void_p()
    _check(_L.adm_harness_table(_enc(p, "path"), None, None, ctypes.byref(tr)))
    try:
        _check(_L.adm_report_create(b"admit table (Python)", ctypes.byref(report)))
        _L.adm_report_set_strict(report, 1 if strict else 0)
        _check(_L.adm_report_add_table(report, ctypes.byref(tr)))
        return [Verdict(r) for r in _rows(report)]
    finally:
        if report:
            _L.adm_report_free(report)
        _L.adm_table_result_free(ctypes.byref(tr))


from ._torch import capture  # noqa: E402  (torch is imported when a capture is made)
