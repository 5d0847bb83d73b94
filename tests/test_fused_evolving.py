"""The fused evolving-attention kernels (tsrep.nn.fused_evolving) against the reference ops, on CPU tensors run by
Triton's interpreter.

TRITON_INTERPRET=1 must be set before triton is imported, so the kernels run in one child process (this file
run as a script) for the whole module; the references run here, in the test process, which never imports
triton: no other test module sees the interpreter.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.evolving import AttentionMapEvolution
from tsrep.nn.map_dropout import attend_values

ROOT = Path(__file__).resolve().parents[1]
TOL = dict(rtol=1e-5, atol=1e-5)

# name: (batch, heads, tokens, d_head, kernel, previous layer's logits, padding, gradient on the logits)
CASES = {
    "first-layer-padded": (2, 3, 24, 5, 3, False, True, False),
    "later-layer-padded": (2, 2, 24, 8, 3, True, True, True),
    "later-layer-kernel5-one-tile": (2, 4, 8, 4, 5, True, False, True),
}
DROP = 0.25


# ----------------------------------------------------------------------------- inputs and references (here)
def _case_inputs(case: str) -> dict:
    b, heads, n, d, ks, with_prev, padded, logit_grad = CASES[case]
    gen = torch.Generator().manual_seed(len(case))
    evolution = AttentionMapEvolution(heads, 0.5, 0.5, ks)
    with torch.no_grad():  # larger weights than the default init, so that the convolution matters
        evolution.conv.weight.copy_(torch.randn(evolution.conv.weight.shape, generator=gen) / ks)
        evolution.conv.bias.copy_(torch.randn(heads, generator=gen) * 0.5)
    valid = None
    if padded:
        valid = torch.ones(b, n, dtype=torch.bool)
        valid[0, n - 5:] = False  # a padded tail
        valid[1, 3] = False  # a padded step inside the series
    return dict(
        q=torch.randn(b, heads, n, d, generator=gen), k=torch.randn(b, heads, n, d, generator=gen),
        v=torch.randn(b, heads, n, d, generator=gen),
        prev=torch.randn(b, heads, n, n, generator=gen) if with_prev else None, valid=valid,
        weight=evolution.conv.weight.detach().clone(), bias=evolution.conv.bias.detach().clone(),
        scale=1 / math.sqrt(d), alpha=0.5, beta=0.5,
        grad_out=torch.randn(b, heads, n, d, generator=gen),
        grad_logits=torch.randn(b, heads, n, n, generator=gen) if logit_grad else None,
    )


def _reference(inputs: dict, dtype=torch.float32, keep: torch.Tensor | None = None) -> dict:
    """The reference path (AttentionMapEvolution, then the masked softmax and @ V) on the case's inputs;
    keep: a dropout mask (B, K, N, N) to apply after the softmax, with the 1 / (1 - p) scale."""
    heads, ks = inputs["weight"].shape[0], inputs["weight"].shape[-1]
    evolution = AttentionMapEvolution(heads, inputs["alpha"], inputs["beta"], ks)
    with torch.no_grad():
        evolution.conv.weight.copy_(inputs["weight"])
        evolution.conv.bias.copy_(inputs["bias"])
    evolution.to(dtype)
    names = [n for n in ("q", "k", "v", "prev") if inputs[n] is not None]
    leaves = {n: inputs[n].detach().to(dtype).requires_grad_() for n in names}
    valid = inputs["valid"]
    logits = evolution.from_queries_keys(leaves["q"], leaves["k"], inputs["scale"], leaves.get("prev"), valid)
    scores = logits if valid is None else logits.masked_fill(~valid[:, None, None, :], float("-inf"))
    if keep is None:
        out = attend_values(scores, leaves["v"], 0.0)
    else:
        out = (torch.softmax(scores.float(), -1) * keep / (1 - DROP)) @ leaves["v"]
    loss = (out.float() * inputs["grad_out"]).sum()
    if inputs["grad_logits"] is not None:
        loss = loss + (logits.float() * inputs["grad_logits"]).sum()
    loss.backward()
    grads = {f"grad_{n}": t.grad for n, t in leaves.items()}
    return dict(out=out, logits=logits, grad_weight=evolution.conv.weight.grad, grad_bias=evolution.conv.bias.grad,
                **grads)


def _module_stack() -> tuple[list[MultiHeadAttention], torch.Tensor, torch.Tensor]:
    """Two evolving attention layers (the second reads the first's logits), an input and a padding mask."""
    torch.manual_seed(5)
    layers = [MultiHeadAttention(12, 12, 3, alpha=0.5, beta=0.5) for _ in range(2)]
    x = torch.randn(2, 20, 12)
    valid = torch.ones(2, 20, dtype=torch.bool)
    valid[1, 14:] = False
    return layers, x, valid


def _run_stack(layers, x, valid) -> dict:
    x = x.clone().requires_grad_()
    h, logits = layers[0](x, valid)
    out, logits = layers[1](h, valid, logits)
    (out[valid].square().sum() + logits.sum()).backward()
    grads = {f"{i}.{n}": p.grad.clone() for i, layer in enumerate(layers) for n, p in layer.named_parameters()}
    for layer in layers:
        layer.zero_grad()
    return dict(out=out.detach(), logits=logits.detach(), grad_x=x.grad, **grads)


# ----------------------------------------------------------------------------- the child process (kernels)
def _child_function(inputs: dict, dtype=torch.float32) -> dict:
    from tsrep.nn.fused_evolving import fused_evolving_attention

    names = [n for n in ("q", "k", "v", "prev") if inputs[n] is not None]
    leaves = {n: inputs[n].detach().to(dtype).requires_grad_() for n in names}
    weight, bias = inputs["weight"].clone().requires_grad_(), inputs["bias"].clone().requires_grad_()
    out, logits = fused_evolving_attention(
        leaves["q"], leaves["k"], leaves["v"], weight, bias, inputs["scale"], inputs["alpha"], inputs["beta"],
        leaves.get("prev"), inputs["valid"], block=16,
    )
    loss = (out.float() * inputs["grad_out"]).sum()
    if inputs["grad_logits"] is not None:
        loss = loss + (logits.float() * inputs["grad_logits"]).sum()
    loss.backward()
    grads = {f"grad_{n}": t.grad for n, t in leaves.items()}
    return dict(out=out, logits=logits, grad_weight=weight.grad, grad_bias=bias.grad, **grads)


def _child_dropout() -> dict:
    from tsrep.nn.fused_evolving import fused_evolving_attention

    inputs = _case_inputs("first-layer-padded")
    b, heads, n_keys, _ = inputs["q"].shape
    identity = torch.eye(n_keys).expand(b, heads, n_keys, n_keys)

    def weights(seed):
        # v = I: the output rows are the dropped and rescaled attention weights themselves (q and k padded
        # with zero features to v's width leave the map unchanged)
        q, k = (torch.nn.functional.pad(inputs[n], (0, n_keys - inputs[n].shape[-1])) for n in ("q", "k"))
        torch.manual_seed(seed)
        out, _ = fused_evolving_attention(q, k, identity, inputs["weight"], inputs["bias"],
                                          inputs["scale"], 0.0, 0.5, None, inputs["valid"], DROP, block=16)
        return out

    big = torch.randn(2, 2, 64, 64) * 0.2  # 16384 weights for the share of drops
    torch.manual_seed(1)
    wide, _ = fused_evolving_attention(big, big, torch.eye(64).expand(2, 2, 64, 64), inputs["weight"][:2, :2],
                                       inputs["bias"][:2], 0.5, 0.0, 0.5, None, None, DROP, block=16)
    # gradients with dropout, under the seed whose mask weights(7) shows
    leaves = {n: inputs[n].clone().requires_grad_() for n in ("q", "k", "v")}
    weight, bias = inputs["weight"].clone().requires_grad_(), inputs["bias"].clone().requires_grad_()
    torch.manual_seed(7)
    out, logits = fused_evolving_attention(leaves["q"], leaves["k"], leaves["v"], weight, bias, inputs["scale"],
                                           0.0, 0.5, None, inputs["valid"], DROP, block=16)
    (out * inputs["grad_out"]).sum().backward()
    return dict(seed7=weights(7), seed7_again=weights(7), seed8=weights(8), wide=wide, out=out, logits=logits,
                grad_weight=weight.grad, grad_bias=bias.grad, **{f"grad_{n}": t.grad for n, t in leaves.items()})


def _child_dispatch() -> dict:
    layers, x, valid = _module_stack()
    # Default mode on CPU tensors: the reference path, without importing triton or the kernels' module.
    default = _run_stack(layers, x, valid)
    untouched = "triton" not in sys.modules and "tsrep.nn.fused_evolving" not in sys.modules
    from tsrep.nn import fused_evolving

    calls = []
    kernel = fused_evolving.fused_evolving_attention

    def counted(*args, **kwargs):
        calls.append(1)
        return kernel(*args, **kwargs)

    fused_evolving.fused_evolving_attention = counted
    with fused_evolving.fused_evolving(True):
        fused = _run_stack(layers, x, valid)
    forced_calls = len(calls)
    with fused_evolving.fused_evolving(False):
        _run_stack(layers, x, valid)
    _run_stack(layers, x, valid)  # default mode again, the module now imported
    return dict(default=default, fused=fused, untouched=untouched, forced_calls=forced_calls, calls=len(calls))


def _interpret_bf16_products() -> None:
    """Triton 3.9's interpreter multiplies bfloat16 operands of tl.dot as their raw uint16 bit patterns (its
    create_dot widens only 8-bit floats): widen them to float32 first, as a GPU's bf16 product with fp32
    accumulation does. The kernels' code is unchanged."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    dot = interpreter.InterpreterBuilder.create_dot

    def widened(handle):
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        data = (handle.data.astype(np.uint32) << 16).view(np.float32)
        return interpreter.TensorHandle(data, tl.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return dot(self, widened(a), widened(b), d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot


def _child(in_path: str, out_path: str) -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1"
    torch.set_num_threads(1)  # as the test process (conftest): the reference's reductions run in the same order
    results = {"dispatch": _child_dispatch()}  # first: it checks that nothing imported triton before it
    for case in CASES:
        results[case] = _child_function(_case_inputs(case))
    _interpret_bf16_products()
    results["bf16"] = _child_function(_case_inputs("later-layer-padded"), torch.bfloat16)
    results["dropout"] = _child_dropout()
    torch.save(results, out_path)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("fused") / "results.pt"
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, __file__, "-", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return torch.load(out, weights_only=True)  # tensors, numbers and strings only


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("case", list(CASES))
def test_kernels_match_the_reference_outputs_logits_and_gradients(kernels, case):
    inputs = _case_inputs(case)
    expected, got = _reference(inputs), kernels[case]
    assert set(got) == set(expected)
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], **TOL, msg=lambda m: f"{name}: {m}")
    # the carried logits are zero in padded rows and columns, as the reference's
    if inputs["valid"] is not None:
        pad = ~(inputs["valid"][:, :, None] & inputs["valid"][:, None, :])
        assert (got["logits"].transpose(0, 1)[:, pad] == 0).all()


def test_bf16_kernels_are_as_close_to_float32_as_the_reference_in_bf16(kernels):
    """bf16 inputs: outputs, logits and gradients within twice the reference bf16 path's own distance to the
    float32 result (plus 1e-2 of the tensor's largest magnitude), in bf16 dtypes."""
    inputs = _case_inputs("later-layer-padded")
    exact, ref16, got = _reference(inputs), _reference(inputs, torch.bfloat16), kernels["bf16"]
    assert got["out"].dtype == got["logits"].dtype == got["grad_prev"].dtype == torch.bfloat16
    for name in exact:
        target = exact[name].float()
        allowed = 2 * (ref16[name].float() - target).abs().max() + 1e-2 * target.abs().max()
        error = (got[name].float() - target).abs().max()
        assert error <= allowed, f"{name}: {error} > {allowed}"


def test_dropout_drops_a_share_p_rescales_and_replays_from_the_seed(kernels):
    got = kernels["dropout"]
    wide = got["wide"]
    dropped = (wide == 0).float().mean().item()
    assert abs(dropped - DROP) < 0.02, dropped  # 16384 draws: 6 standard deviations
    # kept weights are rescaled by 1 / (1 - p): each row sums to 1 in expectation
    assert abs(wide.sum(-1).mean().item() - 1.0) < 0.02
    inputs = _case_inputs("first-layer-padded")
    inputs["alpha"] = 0.0
    identity = torch.eye(24).expand(2, 3, 24, 24)
    probs = _reference(dict(inputs, v=identity, grad_out=torch.zeros_like(identity)))["out"].detach()
    keep = got["seed7"] != 0
    torch.testing.assert_close(got["seed7"], torch.where(keep, probs / (1 - DROP), 0.0), **TOL)
    assert torch.equal(got["seed7"], got["seed7_again"])  # torch.manual_seed replays the mask
    assert not torch.equal(got["seed7"] != 0, got["seed8"] != 0)  # another seed, another mask
    # masks differ across heads and batch elements (one Philox stream per (batch, head))
    assert not torch.equal(keep[0, 0], keep[0, 1]) and not torch.equal(keep[0, 0], keep[1, 0])
    # forward and backward under that same mask match the reference with the mask applied
    expected = _reference(inputs, keep=keep)
    for name in ("out", "logits", "grad_q", "grad_k", "grad_v", "grad_weight", "grad_bias"):
        torch.testing.assert_close(got[name], expected[name], **TOL, msg=lambda m: f"{name}: {m}")


def test_attention_layers_dispatch_to_the_kernels_only_when_asked_on_cpu(kernels):
    got = kernels["dispatch"]
    assert got["untouched"], "the CPU default path imported triton or tsrep.nn.fused_evolving"
    assert got["forced_calls"] == 2 and got["calls"] == 2  # fused_evolving(False) and the CPU default: none
    layers, x, valid = _module_stack()
    expected = _run_stack(layers, x, valid)
    # the default CPU path in the child is the reference, bit for bit
    for name in expected:
        assert torch.equal(got["default"][name], expected[name]), name
    for name in expected:
        torch.testing.assert_close(got["fused"][name], expected[name], **TOL, msg=lambda m: f"{name}: {m}")


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])


@pytest.mark.parametrize("enabled", ["yes", 1, 0.0])
def test_the_switch_takes_only_true_false_or_none(enabled):
    from tsrep.nn.fused_evolving import fused_evolving

    with pytest.raises(TypeError, match="fused_evolving\\(enabled\\) takes True, False or None"):
        with fused_evolving(enabled):
            pass
