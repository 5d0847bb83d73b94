"""Memory of an EA-DC-Transformer's training, estimated before any weight is built.

The N x N attention maps dominate: every layer keeps a few (B, K, N, N) maps for backward (the
logits, the evolved and softmaxed maps, the dropout mask), so memory grows with the square of the
tokens per series, linearly in the layers, and a 6000-step series of per-step tokens needs tens of
gigabytes per map alone. Past the machine's memory the process is killed by the operating system
or dies in an allocator error deep in torch; refusing first, with the figure and what lowers it,
is kinder.

The estimate counts float32 bytes:

- weights, gradients and two optimiser moments: 4 copies of every parameter;
- per layer and case, MAP_COPIES maps of K * N * N values (one carried map and MAP_COPIES of the
  recomputed layer with ``checkpointing``) and ACTIVATION_COPIES vectors of the layer's widths
  (d_model + dim_feedforward) per token;
- with a convolutional stem (tsrep.nn.conv_stem), which runs before the tokens at full resolution,
  STEM_COPIES feature maps of its width per step and case.

The copy counts come from the peak resident memory of one training epoch on a CPU (batches of 8
series of 512 steps, d_model 16, 2 heads): 64 MiB more per layer with 16 MiB maps (4 maps per
layer) for evolving attention from 2 to 8 layers, about 4.3 for vanilla attention, plus a few maps
of workspace that the estimate leaves out; width-bound models (d_model 512, 64 steps) measured
326 MiB against an estimate of 317 MiB. The stem's forward and backward peaked at 7.1-7.2 times
its feature map (batch x width x steps floats) without padding and 10.4 times with a padding mask
(batches of 8, 50 000 and 100 000 steps, 64 channels). The estimate leans low: it refuses what
cannot fit, never a run that might.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from tsrep.backbones.dc_transformer import split_width
from tsrep.estimators._common import resolve_device
from tsrep.exceptions import InsufficientMemoryError
from tsrep.nn.patching import n_tokens

#: (B, K, N, N) maps each layer keeps for backward (logits, evolved map, softmax, dropout mask).
MAP_COPIES = 4
#: (B, N, d_model + dim_feedforward) activations each layer keeps for backward.
ACTIVATION_COPIES = 3
#: Copies of every parameter during training: weights, gradients, two optimiser moments.
PARAMETER_COPIES = 4
#: (B, width, T) feature maps of a convolutional stem alive at the peak of a training step.
STEM_COPIES = 7
FLOAT_BYTES = 4


def available_memory(device: torch.device) -> int | None:
    """Free bytes of `device`, or None if unknown (then nothing is refused).

    GPU: torch.cuda.mem_get_info. CPU: what the operating system can give without swapping
    (psutil when installed; else Linux's MemAvailable; else the total RAM, which never refuses a
    run that could fit).
    """
    if device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except (RuntimeError, AssertionError):  # pragma: no cover - a device torch cannot query
            return None
    if device.type != "cpu":
        return None
    try:
        import psutil  # optional: counts reclaimable caches as available, as the OOM killer does

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows without psutil): no check
        return None


def n_maps(attention: str, n_heads: int) -> int:
    """Attention maps per layer and case: h*h for interacting heads, two branches for crossed co-attention."""
    if str(attention).startswith("interacting"):
        return n_heads * n_heads
    return 2 * n_heads if attention == "crossed" else n_heads


def training_memory(
    *, n_tokens_max: int, batch_size: int, in_features: int, d_model: int, n_blocks: int, n_heads: int, p: float,
    kernel_size: int, dim_feedforward: int | None, attention: str, checkpointing: bool,
    stem_channels: int = 0, n_steps_max: int = 0,
) -> dict:
    """Estimated bytes of one training step: {"total", "maps", "activations", "stem", "parameters"}.

    stem_channels: width of a convolutional stem (0: none), run on series of n_steps_max steps."""
    d_model, n_blocks, n_heads = int(d_model), int(n_blocks), int(n_heads)
    n_layers = 2 * n_blocks
    d_attn, d_conv = split_width(d_model, p)
    d_ff = int(dim_feedforward or 4 * d_model)
    per_layer_params = 4 * d_model * d_attn + d_model * d_conv * int(kernel_size) + 2 * d_model * d_ff
    parameters = PARAMETER_COPIES * FLOAT_BYTES * (n_layers * per_layer_params + (n_tokens_max + in_features) * d_model)
    map_values = n_maps(attention, n_heads) * n_tokens_max * n_tokens_max if d_attn else 0
    kept_maps = (n_layers + MAP_COPIES) if checkpointing else n_layers * MAP_COPIES
    maps = FLOAT_BYTES * batch_size * kept_maps * map_values
    activations = FLOAT_BYTES * batch_size * n_layers * ACTIVATION_COPIES * n_tokens_max * (d_model + d_ff)
    stem = FLOAT_BYTES * batch_size * STEM_COPIES * int(stem_channels) * int(n_steps_max)
    return {"total": parameters + maps + activations + stem, "maps": maps, "activations": activations,
            "stem": stem, "parameters": parameters}


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def check_training_memory(
    *, max_len: int, stride: int | None, n_cases: int, batch_size: int, in_features: int, d_model: int,
    n_blocks: int, n_heads: int, p: float, kernel_size: int, dim_feedforward: int | None, attention: str,
    checkpointing: bool, device: torch.device, what: str = "training",
    options: tuple[str, ...] = ("patch_len", "checkpointing", "batch_size"), concurrent: int = 1,
    stem_channels: int = 0,
) -> None:
    """Raise InsufficientMemoryError when the estimate exceeds the memory `device` has free.

    stride: steps per token of a patch/downsample front end (None: one token per step).
    stem_channels: width of the convolutional stem (0: none).
    options: the parameters of the caller that lower the maps' memory, named in the message.
    concurrent: fits of this size running at once on the device (ensemble members under n_jobs).
    """
    free = available_memory(device)
    if free is None:
        return
    tokens = n_tokens(max_len, stride) if stride else int(max_len)
    batch = max(1, min(int(batch_size), int(n_cases)))
    need = training_memory(
        n_tokens_max=tokens, batch_size=batch, in_features=in_features, d_model=d_model, n_blocks=n_blocks,
        n_heads=n_heads, p=p, kernel_size=kernel_size, dim_feedforward=dim_feedforward, attention=attention,
        checkpointing=checkpointing, stem_channels=stem_channels, n_steps_max=int(max_len),
    )
    if need["total"] * concurrent <= free:
        return
    helps = []
    stem_bound = need["stem"] >= max(need["maps"], need["activations"], need["parameters"])
    maps_bound = need["maps"] >= need["parameters"]
    if stem_bound:
        helps.append(f"conv_stem=None or a narrower conv_stem (now {stem_channels}: it runs on all {max_len} steps)")
    if concurrent > 1:
        helps.append(f"a smaller n_jobs ({concurrent} ensemble members train at once, each needing the estimate)")
    if maps_bound:
        if not stride and "patch_len" in options:
            helps.append("patch_len (tokens of several steps: the maps shrink with the square of the stride)")
        if not checkpointing and "checkpointing" in options:
            helps.append("checkpointing=True (one map per layer kept instead of about four)")
    if (maps_bound or stem_bound) and batch > 2 and "batch_size" in options:
        helps.append(f"a smaller batch_size (now {batch_size}; the maps grow linearly with it)")
    if need["parameters"] + need["activations"] > need["maps"] or not helps:
        helps.append(f"a smaller d_model (now {d_model}) or n_blocks (now {n_blocks})")
    at_once = f"{concurrent} members at once x " if concurrent > 1 else ""
    raise InsufficientMemoryError(
        f"{what} would need about {at_once}{_gib(need['total'])} of memory (attention maps {_gib(need['maps'])}, "
        f"activations {_gib(need['activations'])}, "
        + (f"convolutional stem {_gib(need['stem'])}, " if need["stem"] else "")
        + f"weights and optimiser state {_gib(need['parameters'])}: "
        f"{tokens} tokens per series, batches of {batch}, {2 * int(n_blocks)} layers, d_model={d_model}), "
        f"but {device} has {_gib(free)} free. Options that help: " + "; ".join(helps)
    )


def check_estimator_memory(est, n_cases: int, concurrent: int = 1) -> None:
    """check_training_memory for an EA-DC-Transformer estimator whose preprocessing is fitted
    (max_len_, n_channels_, patch_len_/patch_stride_, or encoder_config_ of a pretrained encoder);
    concurrent: members of a seed ensemble that train at once."""
    config = getattr(est, "encoder_config_", None)
    # Patches cannot be combined with pretraining or a pretrained encoder (one token per step).
    options = ("checkpointing", "batch_size") if config is not None or est.pretrain_epochs else (
        "patch_len", "checkpointing", "batch_size")
    if config is not None:  # the checkpoint's architecture, one token per step
        arch = {k: config.get(k, default) for k, default in (
            ("d_model", 64), ("n_blocks", 3), ("n_heads", 8), ("p", 0.25), ("kernel_size", 3),
            ("dim_feedforward", None), ("attention", "evolving"))}
        stride, in_features, stem = None, int(config["in_channels"]), 0
    else:
        arch = {k: getattr(est, k) for k in (
            "d_model", "n_blocks", "n_heads", "p", "kernel_size", "dim_feedforward", "attention")}
        patch_len = getattr(est, "patch_len_", None)
        stride = getattr(est, "patch_stride_", None) or patch_len or est.downsample
        stem = getattr(est, "conv_stem_", None) or 0  # its tokens are window means of the stem's features
        in_features = stem or est.n_channels_ * (patch_len or 1)
    check_training_memory(
        max_len=est.max_len_, stride=stride, n_cases=n_cases, batch_size=est.batch_size, in_features=in_features,
        checkpointing=bool(est.checkpointing), device=resolve_device(est.device), options=options,
        concurrent=concurrent, stem_channels=stem, **arch,
    )
