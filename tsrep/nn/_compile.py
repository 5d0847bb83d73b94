"""When the hand-fused steps give way to stock ops: under torch.compile's tracing, and inside `stock_ops()`.

The evolving attention saves memory in eager mode with custom autograd Functions that overwrite their own
outputs (the Q K^T map, the convolution-and-blend, softmax-dropout-values). torch.compile cannot trace an in-place
update of such an output, and it plans the graph's memory and fuses element-wise work itself; under it the same
equations run as plain torch ops (the Functions' stock references). The fused Functions' backward passes are
not themselves differentiable: second derivatives (gradient penalties, Hessian-vector products, meta-learning)
need the stock ops too, which `with tsrep.nn.stock_ops():` selects for the forward passes it encloses.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import torch


# torch.compiler.is_compiling from torch 2.3; torch._dynamo's before. Looked up once: compiling() runs in every layer.
_is_compiling = getattr(torch.compiler, "is_compiling", None) or torch._dynamo.is_compiling
_state = threading.local()


@contextmanager
def thread_setting(state: threading.local, name: str, value, default=None):
    """Set ``state.<name>`` to `value` for the block, in this thread; then back to what it was (`default` if unset)."""
    before = getattr(state, name, default)
    setattr(state, name, value)
    try:
        yield
    finally:
        setattr(state, name, before)


@contextmanager
def stock_ops():
    """Run tsrep's layers with stock PyTorch operations only (twice differentiable; more memory than the
    fused steps). Forward passes inside the block build graphs that ``torch.autograd.grad(...,
    create_graph=True)`` and ``gradgradcheck`` can differentiate again."""
    with thread_setting(_state, "stock", True, default=False):
        yield


@contextmanager
def stacked_members():
    """Stock ops for ensemble members run as one network under torch.func.vmap (tsrep.training.members), with
    the cheaper dropout masks of tsrep.nn.map_dropout.keep_mask, which vmap batches (nothing is compiled there)."""
    with stock_ops(), thread_setting(_state, "cheap_masks", True, default=False):
        yield


def cheap_masks() -> bool:
    """True inside `stacked_members()` (not under torch.compile): the stock ops draw tsrep's cheaper dropout masks."""
    return getattr(_state, "cheap_masks", False) and not _is_compiling()


def compiling() -> bool:
    """True while torch.compile traces the calling code, or inside `stock_ops()`: use the stock ops."""
    return bool(_is_compiling()) or getattr(_state, "stock", False)


def refuse_double_backward(what: str) -> None:
    """RuntimeError when a fused step's backward runs with create_graph=True (its result would have no, or a
    wrong, graph): second derivatives need the stock ops."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"second derivatives through tsrep's fused {what} are not available (its backward is not itself "
            "differentiable); run the forward pass inside `with tsrep.nn.stock_ops():` to differentiate twice"
        )
