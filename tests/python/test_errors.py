"""Wrong arguments raise ValueError naming the argument; failures inside
libadmit raise admit.Error with admit's message; nothing crashes the
interpreter (every case here runs in this process); assert_tier's message
is the reasons."""
import os

import numpy as np
import pytest

import admit
from admit import _lib
from conftest import SOURCE, small_linear


@pytest.fixture
def lin():
    x, w, b, ref, cand = small_linear(seed=2)
    return dict(inputs={"x": (x, "bf16"), "w": (w, "bf16"), "bias": (b, "bf16")}, reference=(ref, "bf16"),
                candidates={"c": (cand, "bf16")})


def _with(kw, **over):
    d = dict(kw)
    d.update(over)
    return d


@pytest.mark.parametrize("op, params, change, match", [
    ("lnear", None, {}, r"^op: 'lnear' is not in admit's catalog \(row_sum, .*linear.*\); an op of your own needs oracle="),
    (7, None, {}, r"^op: expected an op name"),
    ("linear", {"approximate": "tanh"}, {}, r"^params: .*approximate"),
    ("linear+gelu", {"approximate": "fast"}, {}, r"^params: .*approximate"),
    ("linear", "[1, 2]", {}, r"^params: expected a dict"),
    ("linear", "{not json", {}, r"^params: not JSON"),
    ("linear", {"eps": float("nan")}, {}, r"^params: "),
    ("linear", None, {"inputs": {}}, r"^inputs: an op needs its inputs"),
    ("linear", None, {"inputs": [1, 2]}, r"^inputs: expected a dict"),
    ("linear", None, {"inputs": {"x": None}}, r"^inputs\['x'\]: cannot tell the admit dtype of a object array"),
    ("linear", None, {"inputs": {"y": np.zeros((4, 4), np.float32)}}, r"^inputs: op 'linear' has no input 'y' \(its inputs: x, w, bias\?"),
    ("linear", None, {"inputs": {"x": np.zeros((4, 4), np.float32)}}, r"^inputs: .*'w'"),
    ("linear", None, {"inputs": {"x": np.zeros((4, 4), np.float32), "w": np.zeros((3, 5), np.float32)}}, r"^inputs: "),
    ("linear", None, {"inputs": {"x": np.zeros((4, 4), np.int32), "w": np.zeros((3, 4), np.float32)}}, r"^inputs\['x'\]: cannot tell the admit dtype of a int32 array"),
    ("linear", None, {"inputs": {"x": np.zeros((4, 4), np.uint16), "w": np.zeros((3, 4), np.float32)}}, r"^inputs\['x'\]: a uint16 array needs its admit dtype named"),
    ("linear", None, {"inputs": {"x": (np.zeros((4, 4), np.uint16), "bf17")}}, r"^inputs\['x'\]: unknown admit dtype 'bf17'"),
    ("linear", None, {"inputs": {"x": (np.zeros((4, 4), np.uint8), "bf16")}}, r"^inputs\['x'\]: bf16 patterns are 2-byte integers"),
    ("linear", None, {"inputs": {"x": (np.full((4, 4), 16, np.uint8), "fp4_e2m1")}}, r"^inputs\['x'\]: fp4_e2m1 patterns are 0 to 15"),
    ("linear", None, {"inputs": {"x": np.zeros((1,) * 9, np.float32)}}, r"^inputs\['x'\]: rank 9 is above admit's 8"),
    ("linear", None, {"inputs": {"x/y": np.zeros((4, 4), np.float32)}}, r"^inputs: .*name"),
    ("linear", None, {"reference": None}, r"^reference: required"),
    ("linear", None, {"reference": np.zeros((3, 3), np.float32)}, r"^reference: shape \[3, 3\], expected \[32, 16\]"),
    ("linear", None, {"candidates": {}}, r"^candidates: required"),
    ("linear", None, {"candidates": {"bad name": np.zeros((32, 16), np.float32)}}, r"^candidates: .*name"),
    ("linear", None, {"candidates": {"c": np.zeros((16, 32), np.float32)}}, r"^candidates\['c'\]: shape \[16, 32\], expected \[32, 16\]"),
    ("linear", None, {"oracle": np.zeros((32, 16), np.float32)}, r"^oracle: must be fp64"),
    ("linear", None, {"special": {"s": {"inputs": {"x": np.zeros((2, 64), np.float32)}, "refused": "NOPE"}}}, r"^special\['s'\]\['refused'\]: 'NOPE' is not a status"),
    ("linear", None, {"special": {"s": {"inputs": {"x": np.zeros((2, 64), np.float32)}, "reference": np.zeros(1), "refused": "ADM_ERR_SHAPE"}}}, r"^special\['s'\]: give a reference or a refusal"),
    ("linear", None, {"special": {"s": {"inputs": {"x": np.zeros((2, 63), np.float32), "w": np.zeros((16, 64), np.float32)}}}}, r"^special\['s'\]\['inputs'\]: "),
    ("my_op", None, {}, r"^op: 'my_op' is not in admit's catalog"),
])
def test_value_errors(lin, op, params, change, match):
    with pytest.raises(ValueError, match=match):
        admit.judge(op, params, **_with(lin, **change))


def test_user_op_needs_matching_oracle(lin):
    ref = lin["reference"][0]
    with pytest.raises(ValueError, match=r"^candidates\['c'\]: shape \[2, 2\], expected \[32, 16\]"):
        admit.judge("my_op", inputs={"x": np.zeros(3)}, reference=lin["reference"],
                    candidates={"c": np.zeros((2, 2), np.float32)}, oracle=np.zeros(ref.shape))
    v = admit.judge("my_op", inputs={"x": np.zeros(3)}, reference=lin["reference"], candidates=lin["candidates"],
                    oracle=np.zeros(ref.shape) + 0.5)
    assert v["c"].oracle["certified"] is False


def test_library_errors(lin, monkeypatch, tmp_path):
    # refused by replay's work budget before anything is computed
    monkeypatch.setenv("ADM_MAX_WORK", "1000")
    with pytest.raises(admit.Error, match=r"work budget") as e:
        admit.judge("linear", **lin)
    assert e.value.status == "ADM_ERR_RANGE"
    monkeypatch.setenv("ADM_MAX_WORK", "lots")
    with pytest.raises(admit.Error, match=r"ADM_MAX_WORK") as e:
        admit.judge("linear", **lin)
    assert e.value.status == "ADM_ERR_INVALID"
    monkeypatch.delenv("ADM_MAX_WORK")
    # far too large for memory: refused, not attempted (2^38 outputs from stride-0 views)
    x = np.broadcast_to(np.float32(1), (1 << 19, 1 << 4))
    w = np.broadcast_to(np.float32(1), (1 << 19, 1 << 4))
    y = np.broadcast_to(np.float32(16), (1 << 19, 1 << 19))
    with pytest.raises(admit.Error, match=r"memory budget|work budget"):
        admit.judge("linear", inputs={"x": x, "w": w}, reference=y, candidates={"c": y})
    # files
    with pytest.raises(admit.Error) as e:
        admit.table(tmp_path / "missing.json")
    assert e.value.status == "ADM_ERR_IO" and "missing.json" in str(e.value)
    (tmp_path / "t.json").write_text('{"admit_fusion_table": 1, "fusions": [{"name": "x"}]}')
    with pytest.raises(admit.Error, match=r"t\.json") as e:
        admit.table(tmp_path / "t.json")
    assert e.value.status == "ADM_ERR_JSON"
    with pytest.raises(admit.Error, match=r"no-such-dir"):
        admit.write_capture(tmp_path / "no-such-dir" / "x.h5", "linear", lin["inputs"])
    with pytest.raises(ValueError, match=r"^path: "):
        admit.table(None)


def test_assert_tier_message(lin):
    x, w, b, ref, cand = small_linear(seed=2)
    trunc = ref & np.uint16(0xFFF0)                        # mantissa bits dropped
    with pytest.raises(AssertionError) as e:
        admit.assert_tier("linear", inputs=lin["inputs"], reference=lin["reference"],
                          candidates={"trunc": (trunc, "bf16"), "c": (cand, "bf16")}, tier="lossless")
    msg = str(e.value)
    assert msg.startswith("trunc (linear) measured high, claimed lossless (RMS ")
    v = admit.judge("linear", **_with(lin, candidates={"trunc": (trunc, "bf16")}))["trunc"]
    assert v.reasons and all(r in msg for r in v.reasons)
    assert "\nc (linear)" not in msg                      # the candidate that holds is not named
    # a verdict or judge()'s result, strict
    ok = admit.assert_tier(admit.judge("linear", **lin), tier="lossless")
    assert ok["c"].tier in ("exact", "lossless")
    with pytest.raises(AssertionError, match=r"claimed exactly high"):
        admit.assert_tier(ok["c"], tier="high", strict=True)
    with pytest.raises(ValueError, match=r"^tier: 'fast'"):
        admit.assert_tier(ok["c"], tier="fast")


def test_constants_match_the_headers():
    """The structs and constants the package mirrors, against the C headers."""
    core = open(os.path.join(SOURCE, "core", "adm_core.h")).read()
    ops = open(os.path.join(SOURCE, "oracle", "adm_ops.h")).read()
    assert f"#define ADM_MAX_DIMS {_lib.MAX_DIMS}\n" in core
    assert f"#define ADM_OP_MAX_INPUTS {_lib.OP_MAX_INPUTS}\n" in ops
    enum = core[core.index("typedef enum adm_dtype"):core.index("} adm_dtype;")]
    names = ["ADM_BF16", "ADM_FP16", "ADM_FP32", "ADM_FP64", "ADM_E4M3", "ADM_E5M2", "ADM_E2M1"]
    order = sorted(names, key=enum.index)
    assert order == names and [_lib.DTYPES[k][0] for k in _lib.DTYPES] == list(range(1, 8))
    tensor = core[core.index("typedef struct adm_tensor {"):core.index("} adm_tensor;")]
    fields = [f for f, _ in _lib.Tensor._fields_]
    assert sorted(fields, key=lambda f: tensor.index(f" {f}") if f" {f}" in tensor else tensor.index(f"*{f}")) == fields
    shapes = ops[ops.index("typedef struct adm_op_shapes {"):ops.index("} adm_op_shapes;")]
    assert [f for f, _ in _lib.OpShapes._fields_] == ["present", "ndim", "shape"]
    assert shapes.index("present[") < shapes.index("ndim[") < shapes.index("shape[")
