"""admit.capture: one call of a torch module's submodule recorded through a
forward hook (its inputs, parameters and output), written as a capture file
with its provenance and judged in memory."""
import os


def _snapshot(t):
    """A host copy of a tensor as it was at the call (bits kept: no dtype
    change), safe from later in-place updates."""
    t = t.detach()
    return t.to("cpu", copy=True)


def _infer(mod):
    """(op, params, inputs) for the module kinds whose op is unambiguous:
    inputs maps the op's input names to 'arg:0' (the call's first
    argument) or a parameter's name under the site."""
    import torch.nn as nn

    def affine(m, names):
        return {k: v for k, v in names.items() if getattr(m, v.split(".")[-1], None) is not None}

    if isinstance(mod, nn.Linear):
        return "linear", {}, affine(mod, {"x": "arg:0", "w": "weight", "bias": "bias"})
    if isinstance(mod, nn.Sequential) and len(mod) == 2 and isinstance(mod[0], nn.Linear) and \
            isinstance(mod[1], nn.GELU):
        lin = {"x": "arg:0", "w": "0.weight"}
        if mod[0].bias is not None:
            lin["bias"] = "0.bias"
        return "linear+gelu", {"approximate": mod[1].approximate}, lin
    if isinstance(mod, nn.GELU):
        return "gelu", {"approximate": mod.approximate}, {"x": "arg:0"}
    if isinstance(mod, nn.SiLU):
        return "silu", {}, {"x": "arg:0"}
    if isinstance(mod, nn.ReLU):
        return "relu", {}, {"x": "arg:0"}
    if isinstance(mod, nn.LayerNorm) and len(mod.normalized_shape) == 1:
        return "layernorm", {"eps": mod.eps}, affine(mod, {"x": "arg:0", "weight": "weight", "bias": "bias"})
    if type(mod).__name__ == "RMSNorm" and hasattr(mod, "eps") and len(getattr(mod, "normalized_shape", (0,))) == 1:
        params = {"eps": mod.eps} if mod.eps is not None else {}
        return "rmsnorm", params, affine(mod, {"x": "arg:0", "weight": "weight"})
    return None


class capture:
    """Records one call at a named site of a torch module and makes it a
    capture:

        with admit.capture(model, "transformer_blocks.0.ff.net.0", "fc1.h5",
                           model="FLUX.1-dev", step=12) as cap:
            model(x)
        # fc1.h5 holds the site's inputs, parameters and output (the reference)

    module      the model (any torch.nn.Module)
    site        the submodule's name as model.named_modules() gives it ("" the model itself)
    path        where to write the capture when the block ends (None: not written)
    op, params  the op it computes (admit.ops()); inferred for nn.Linear,
                nn.Sequential(Linear, GELU), GELU, SiLU, ReLU, LayerNorm and RMSNorm
    inputs      {op input: source}: "arg:K" (the call's K-th positional argument),
                a parameter's or buffer's name under the site ("0.weight"), or
                a function (module, args, output) -> tensor
    candidates  {name: tensor or function(**inputs) -> tensor}: outputs to
                judge, a function called on the recorded inputs when the block ends
    model, layer, step: provenance (layer defaults to the site; model to the module's class)
    call        which call to record, from 0 (a site called once a step)

    After the block: .inputs, .reference, .candidates (tensors), .capture
    (an admit.Capture), .judge(candidates=...), .write(path, candidates=...)."""

    def __init__(self, module, site, path=None, *, op=None, params=None, inputs=None, candidates=None, model=None,
                 layer=None, step=None, call=0, source="admit.capture (Python)"):
        import torch

        if not isinstance(module, torch.nn.Module):
            raise ValueError(f"module: expected a torch.nn.Module, got {type(module).__name__}")
        named = dict(module.named_modules())
        if not isinstance(site, str) or site not in named:
            near = [n for n in named if n][:8]
            raise ValueError(f"site: {site!r} is not a submodule of this {type(module).__name__} "
                             f"(named_modules(): {', '.join(near)}{', ...' if len(named) > 9 else ''})")
        if not isinstance(call, int) or call < 0:
            raise ValueError(f"call: expected a call index >= 0, got {call!r}")
        self.module, self.site, self.site_module = module, site, named[site]
        self.path = None if path is None else os.fspath(path)
        if op is None:
            inferred = _infer(self.site_module)
            if inferred is None:
                raise ValueError(f"op: cannot tell the op of a {type(self.site_module).__name__} at {site!r}; "
                                 "give op= and inputs=")
            op, p0, i0 = inferred
            params = p0 if params is None else params
            inputs = i0 if inputs is None else inputs
        elif inputs is None:
            raise ValueError("inputs: with op= given, say where each input comes from ({'x': 'arg:0', ...})")
        if not isinstance(inputs, dict) or not inputs:
            raise ValueError("inputs: expected a dict of op input -> source ('arg:K', a parameter name, a function)")
        self.op, self.params, self.sources = op, params, inputs
        self.candidate_sources = dict(candidates or {})
        self.model = model if model is not None else type(module).__name__
        self.layer = layer if layer is not None else site
        self.step, self.call, self.source = step, call, source
        self.inputs, self.reference, self.candidates = None, None, {}
        self.calls = 0
        self._hook = None

    # -- recording
    def _resolve(self, spec, args, output):
        import torch

        if callable(spec):
            return spec(self.site_module, args, output)
        if isinstance(spec, str) and spec.startswith("arg:"):
            k = int(spec[4:])
            if k >= len(args):
                raise ValueError(f"inputs: {spec!r} but the site was called with {len(args)} positional arguments")
            return args[k]
        if isinstance(spec, str):
            found = dict(self.site_module.named_parameters())
            found.update(dict(self.site_module.named_buffers()))
            if spec in found:
                return found[spec]
            raise ValueError(f"inputs: {spec!r} is not a parameter or buffer of the site "
                             f"({', '.join(found) or 'none'})")
        if isinstance(spec, torch.Tensor):
            return spec
        raise ValueError(f"inputs: {spec!r} is not 'arg:K', a parameter's name or a function")

    def _on_forward(self, module, args, output):
        import torch

        k = self.calls
        self.calls += 1
        if k != self.call:
            return
        if not isinstance(output, torch.Tensor):
            if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
                output = output[0]
            else:
                self._error = ValueError(f"site: {self.site!r} returned a {type(output).__name__}, not a tensor")
                return
        try:
            self.inputs = {name: _snapshot(self._resolve(spec, args, output)) for name, spec in self.sources.items()}
            self.reference = _snapshot(output)
        except Exception as e:  # raised when the block ends, not inside the model's forward
            self._error = e

    def __enter__(self):
        self._error = None
        self._hook = self.site_module.register_forward_hook(self._on_forward)
        return self

    def __exit__(self, kind, value, tb):
        self._hook.remove()
        self._hook = None
        if kind is not None:
            return False
        if self._error is not None:
            raise self._error
        if self.inputs is None:
            raise RuntimeError(f"admit.capture: the site {self.site!r} was called {self.calls} time(s) in the block; "
                               f"call {self.call} was to be recorded")
        import torch

        with torch.no_grad():
            for name, c in self.candidate_sources.items():
                self.candidates[name] = _snapshot(c(**self.inputs) if callable(c) else c)
        if self.path is not None:
            self.write(self.path)
        return False

    # -- using what was recorded
    def _capture(self, candidates):
        from . import Capture

        if self.inputs is None:
            raise RuntimeError("admit.capture: nothing recorded yet (use it in a with block around the model's call)")
        cands = dict(self.candidates)
        cands.update(candidates or {})
        return Capture(self.op, self.params, self.inputs, self.reference, cands, model=self.model or "",
                       layer=self.layer or "", step=self.step, source=self.source)

    @property
    def capture(self):
        return self._capture(None)

    def write(self, path, candidates=None):
        """Writes the recorded call (with these candidates, if any) as a capture file."""
        return self._capture(candidates).write(path)

    def judge(self, candidates=None):
        """{name: Verdict} for the candidates against the recorded reference."""
        return self._capture(candidates).judge()
