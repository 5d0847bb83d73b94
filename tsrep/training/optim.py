"""Optimisers by name: torch.optim's, then torch-optimizer's."""

from __future__ import annotations

import torch


def resolve_optimizer(name) -> type[torch.optim.Optimizer]:
    """"radam" / "adamw" / any torch.optim or torch_optimizer class name (case-insensitive), or a class."""
    if isinstance(name, type) and issubclass(name, torch.optim.Optimizer):
        return name
    if not isinstance(name, str):
        raise ValueError(f"optimizer must be a name or a torch.optim.Optimizer subclass, got {name!r}")
    wanted = name.lower()
    for attr in dir(torch.optim):
        obj = getattr(torch.optim, attr)
        if attr.lower() == wanted and isinstance(obj, type) and issubclass(obj, torch.optim.Optimizer):
            return obj
    try:
        import torch_optimizer
    except ImportError:  # pragma: no cover - torch-optimizer is a declared dependency
        torch_optimizer = None
    if torch_optimizer is not None:
        try:
            return torch_optimizer.get(wanted)
        except ValueError:
            pass
    raise ValueError(
        f"unknown optimizer {name!r}: give a class name from torch.optim (e.g. 'RAdam', 'AdamW') "
        "or from torch-optimizer (e.g. 'Lamb', 'Ranger')"
    )


def build_optimizer(
    name, params, lr: float, extra_kwargs: dict | None = None, weight_decay: float = 0.0, member_axis: bool = False
) -> torch.optim.Optimizer:
    """The optimiser `name` over `params`; with weight_decay > 0, decay applies to weight matrices and
    kernels only (parameters of 2 or more dimensions): biases and norm scales keep none. member_axis: each
    parameter stacks the weights of ensemble members along its first axis (tsrep.training.members), which the
    rule does not count.

    Weight decay is decoupled from the gradient step (Loshchilov and Hutter, "Decoupled Weight Decay
    Regularization", ICLR 2019) for AdamW and for RAdam (its ``decoupled_weight_decay`` option); other
    optimisers get their own ``weight_decay`` argument.
    """
    cls = resolve_optimizer(name)
    params = list(params)
    kwargs = {"lr": lr}
    if cls is torch.optim.RAdam:
        kwargs["betas"] = (0.9, 0.99)  # the paper's setting (Sec. 4.1)
        if weight_decay:
            kwargs["decoupled_weight_decay"] = True
    kwargs.update(extra_kwargs or {})
    if weight_decay:
        trained = [p for p in params if p.requires_grad]
        kernel = 3 if member_axis else 2
        groups = [
            {"params": [p for p in trained if p.ndim >= kernel], "weight_decay": weight_decay},
            {"params": [p for p in trained if p.ndim < kernel], "weight_decay": 0.0},
        ]
        params = [group for group in groups if group["params"]]
    elif cls is torch.optim.AdamW:
        kwargs.setdefault("weight_decay", 0.0)  # AdamW's own default is 0.01: weight_decay=0 means none
    if cls in (torch.optim.Adam, torch.optim.AdamW) and not {"fused", "foreach"} & kwargs.keys():
        # One fused kernel per step instead of a dozen ops per parameter (CPU and CUDA float weights).
        kwargs["fused"] = _can_fuse(params)
    return cls(params, **kwargs)


def _can_fuse(params) -> bool:
    tensors = [p for group in params for p in group["params"]] if params and isinstance(params[0], dict) else params
    return bool(tensors) and all(
        p.device.type in ("cpu", "cuda") and p.dtype in (torch.float32, torch.float64) for p in tensors
    )
