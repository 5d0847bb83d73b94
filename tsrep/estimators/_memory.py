"""Memory of an EA-DC-Transformer's or a baseline's training, estimated before any weight is built.

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
  STEM_COPIES feature maps of its width per step and case;
- the left padding of the causal dilated convolutions (tsrep.nn.dilated_conv): block i pads its
  d_model-wide input by (kernel_size - 1) * 2**i steps, whatever the series' length, so the padded
  copies double with every block and dominate from about a dozen blocks on. Each layer keeps its padded
  input for backward (with ``checkpointing`` only the recomputed layer's), and PAD_WORKSPACE_COPIES more
  copies of the largest are alive at the peak (padding_memory).

The copy counts come from the peak resident memory of one training epoch on a CPU (batches of 8
series of 512 steps, d_model 16, 2 heads): 64 MiB more per layer with 16 MiB maps (4 maps per
layer) for evolving attention from 2 to 8 layers, about 4.3 for vanilla attention, plus a few maps
of workspace that the estimate leaves out; width-bound models (d_model 512, 64 steps) measured
326 MiB against an estimate of 317 MiB. The stem's forward and backward peaked at 7.1-7.2 times
its feature map (batch x width x steps floats) without padding and 10.4 times with a padding mask
(batches of 8, 50 000 and 100 000 steps, 64 channels). The estimate leans low: it refuses what
cannot fit, never a run that might. The dilated convolutions' padding is the exception, an upper
bound: with 16 to 19 blocks of a 12-step series (d_model 8 to 32, kernel 2 or 3), in units of the
last layer's padding, the layers keep about 4 and training peaked at 6.2 to 7.1 (the rest: the
gradient of the largest and the blocked copies oneDNN makes on a CPU), at 3.5 to 4.9 with
``checkpointing``, where the estimate counts 8 and 5. 17 blocks, d_model 8, batches of 16: 401 MiB
measured, 518 MiB estimated; 19 blocks: 1554 MiB and 2054 MiB. Without the padding term 22 blocks
passed the check at an estimate of 8 MiB and need about 12 GiB (the peak doubles with every block).

The baselines of tsrep.estimators.baselines are estimated by backbone_training_memory: their
parameters counted on the meta device, and activations per block calibrated the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from tsrep.backbones.dc_transformer import split_width
from tsrep.exceptions import InsufficientMemoryError
from tsrep.nn.attention_kinds import attention_kind
from tsrep.nn.patching import n_tokens

#: (B, K, N, N) maps each layer keeps for backward (logits, evolved map, softmax, dropout mask).
MAP_COPIES = 4
#: (B, N, d_model + dim_feedforward) activations each layer keeps for backward.
ACTIVATION_COPIES = 3
#: Copies of every parameter during training: weights, gradients, two optimiser moments.
PARAMETER_COPIES = 4
#: (B, width, T) feature maps of a convolutional stem alive at the peak of a training step.
STEM_COPIES = 7
#: The stem's kinds (tsrep.nn.conv_stem.STEM_KINDS) against "conv": the inception stem keeps five maps of
#: twice the width (its four branches concatenated, norm, ReLU, mask) and four of the width, where "conv"
#: keeps eight of the width: 1.75x, rounded up.
STEM_KIND_FACTORS = {"conv": 1, "inception": 2}
#: (B, T, width) activations each block of a baseline (tsrep.estimators.baselines) keeps for backward, per
#: step and case: a recurrent layer, a ResNet block of three convolutions and a shortcut, a T-Loss block of
#: two causal convolutions (its padding apart: padding_memory).
BASELINE_BLOCK_COPIES = {"lstm": 13, "gru": 13, "resnet": 18, "dilated-conv": 10}
#: (B, T, width) copies around a baseline's blocks: its input and output, the pooling and their gradients.
BASELINE_IO_COPIES = 4
#: (B, h, T, T) maps of workspace at the peak of the transformer baseline's backward (the softmax's gradients).
MAP_WORKSPACE_COPIES = 2
#: Copies of the largest padded input of a causal dilated convolution alive at the peak besides those
#: kept for backward: its gradient and the blocked-layout copies of both (measured: 2.2 to 3.9 of them).
PAD_WORKSPACE_COPIES = 4
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


def padding_memory(
    *, batch_size: int, width: int, kernel_size: int, n_blocks: int, convs_per_block: int = 2,
    checkpointing: bool = False,
) -> int:
    """Bytes of the left padding of causal convolutions of dilation 2**i in block i (0 <= i < n_blocks),
    each padding a `width`-channel input by (kernel_size - 1) * 2**i steps: the padded copy every
    convolution keeps for backward (only the recomputed one with checkpointing) and
    PAD_WORKSPACE_COPIES copies of the largest. Only the padding steps count: the copy of the series
    itself is one of the activations the caller counts."""
    n_blocks, taps = int(n_blocks), int(kernel_size) - 1
    if n_blocks < 1 or taps < 1 or width < 1:
        return 0
    largest = taps * 2 ** (n_blocks - 1)
    kept = largest if checkpointing else int(convs_per_block) * taps * (2**n_blocks - 1)
    return FLOAT_BYTES * int(batch_size) * int(width) * (kept + PAD_WORKSPACE_COPIES * largest)


def training_memory(
    *, n_tokens_max: int, batch_size: int, in_features: int, d_model: int, n_blocks: int, n_heads: int, p: float,
    kernel_size: int, dim_feedforward: int | None, attention: str, checkpointing: bool,
    stem_channels: int = 0, n_steps_max: int = 0, stem_kind: str = "conv",
) -> dict:
    """Estimated bytes of one training step: {"total", "maps", "activations", "padding", "stem", "parameters"}.

    stem_channels: width of a convolutional stem (0: none) of kind `stem_kind`, run on series of n_steps_max
    steps."""
    d_model, n_blocks, n_heads = int(d_model), int(n_blocks), int(n_heads)
    n_layers = 2 * n_blocks
    d_attn, d_conv = split_width(d_model, p)
    d_ff = int(dim_feedforward or 4 * d_model)
    per_layer_params = 4 * d_model * d_attn + d_model * d_conv * int(kernel_size) + 2 * d_model * d_ff
    parameters = PARAMETER_COPIES * FLOAT_BYTES * (n_layers * per_layer_params + (n_tokens_max + in_features) * d_model)
    map_values = attention_kind(attention).n_maps(n_heads) * n_tokens_max * n_tokens_max if d_attn else 0
    kept_maps = (n_layers + MAP_COPIES) if checkpointing else n_layers * MAP_COPIES
    maps = FLOAT_BYTES * batch_size * kept_maps * map_values
    activations = FLOAT_BYTES * batch_size * n_layers * ACTIVATION_COPIES * n_tokens_max * (d_model + d_ff)
    stem = FLOAT_BYTES * batch_size * STEM_COPIES * STEM_KIND_FACTORS[stem_kind] * int(stem_channels) * int(n_steps_max)
    # Both layers of a block pad their d_model-wide input (the convolution branch reads all of x).
    padding = padding_memory(
        batch_size=batch_size, width=d_model, kernel_size=kernel_size, n_blocks=n_blocks, checkpointing=checkpointing,
    ) if d_conv else 0
    return {"total": parameters + maps + activations + padding + stem, "maps": maps, "activations": activations,
            "padding": padding, "stem": stem, "parameters": parameters}


def backbone_training_memory(
    *, backbone: str, n_parameters: int, n_steps: int, batch_size: int, d_model: int, n_blocks: int,
    n_heads: int, kernel_size: int, dim_feedforward: int | None,
) -> dict:
    """Estimated bytes of one training step of a baseline (tsrep.backbones.baselines):
    {"total", "maps", "activations", "padding", "parameters"}.

    n_parameters: the network's parameters (counted on the meta device by the caller), PARAMETER_COPIES
    each. Activations per block and step are BASELINE_BLOCK_COPIES of the block's width (ResNet's
    blocks after the first are 2 * d_model wide) and BASELINE_IO_COPIES of the encoder's; the
    transformer's 2 * n_blocks layers keep MAP_COPIES attention maps and ACTIVATION_COPIES widths
    as an EA-DC-Transformer's layers, with MAP_WORKSPACE_COPIES maps of workspace; the dilated conv
    pads as the EA-DC-Transformer's convolutions do (padding_memory). A backbone registered elsewhere
    is estimated by its weights alone: nothing is known of its activations.

    Measured peak resident memory of one epoch on a CPU (16 MiB of allocator overhead included)
    against the estimate, an upper bound throughout: LSTM and GRU of width 128 on 500 steps, batches
    of 32, 1 and 3 layers, 97-265 MiB against 134-341 MiB; ResNet of width 64 on 1000 steps, 1 and 3
    blocks, 151 and 707 MiB (96 and 427 MiB of live tensors, the rest fragmentation of glibc's heap)
    against 173 and 774 MiB, and of width 384 on 16 steps (weights first) 300 MiB against 321 MiB; the
    dilated conv of width 64, 2 and 4 blocks, 118 and 222 MiB against 188 and 346 MiB, and with 16
    and 17 blocks on 12 steps (width 8, batches of 16) 200 and 393 MiB against 257 and 513 MiB; the
    transformer of width 64 with 4 heads on 256 steps, 1 and 2 blocks, 360 and 676 MiB against 390
    and 707 MiB.
    """
    d_model, n_blocks, batch = int(d_model), int(n_blocks), int(batch_size)
    per_step = FLOAT_BYTES * batch * int(n_steps)
    parameters = PARAMETER_COPIES * FLOAT_BYTES * int(n_parameters)
    maps = padding = activations = 0
    if backbone == "transformer":  # TST: 2 * n_blocks post-norm layers of plain attention
        n_layers = 2 * n_blocks
        d_ff = int(dim_feedforward or 4 * d_model)
        map_values = int(n_heads) * int(n_steps) ** 2
        maps = FLOAT_BYTES * batch * (n_layers * MAP_COPIES + MAP_WORKSPACE_COPIES) * map_values
        activations = per_step * (n_layers * ACTIVATION_COPIES * (d_model + d_ff) + BASELINE_IO_COPIES * d_model)
    elif backbone in BASELINE_BLOCK_COPIES:
        widths = [d_model] + [2 * d_model if backbone == "resnet" else d_model] * (n_blocks - 1)
        activations = per_step * (BASELINE_BLOCK_COPIES[backbone] * sum(widths) + BASELINE_IO_COPIES * widths[-1])
        if backbone == "dilated-conv":
            padding = padding_memory(batch_size=batch, width=d_model, kernel_size=kernel_size, n_blocks=n_blocks)
    return {"total": parameters + maps + activations + padding, "maps": maps, "activations": activations,
            "padding": padding, "parameters": parameters}


def check_backbone_memory(
    *, backbone: str, n_parameters: int, max_len: int, n_cases: int, batch_size: int, d_model: int,
    n_blocks: int, n_heads: int, kernel_size: int, dim_feedforward: int | None, device: torch.device,
    concurrent: int = 1,
) -> None:
    """Raise InsufficientMemoryError when backbone_training_memory exceeds the memory `device` has free
    (concurrent: fits of this size running at once, ensemble members under n_jobs)."""
    free = available_memory(device)
    if free is None:
        return
    batch = max(1, min(int(batch_size), int(n_cases)))
    need = backbone_training_memory(
        backbone=backbone, n_parameters=n_parameters, n_steps=max_len, batch_size=batch, d_model=d_model,
        n_blocks=n_blocks, n_heads=n_heads, kernel_size=kernel_size, dim_feedforward=dim_feedforward,
    )
    if need["total"] * concurrent <= free:
        return
    largest = max(("padding", "maps", "activations", "parameters"), key=need.__getitem__)
    helps = []
    if largest == "padding":
        helps.append(_padding_help(n_blocks, kernel_size))
    if concurrent > 1:
        helps.append(f"a smaller n_jobs ({concurrent} ensemble members train at once, each needing the estimate; "
                     "with train_members_together=True: False)")
    if largest in ("maps", "activations") and batch > 2:
        grows = "the attention maps grow" if largest == "maps" else "the activations grow"
        helps.append(f"a smaller batch_size (now {batch_size}; {grows} linearly with it)")
    if largest in ("activations", "parameters") or not helps:
        helps.append(f"a smaller d_model (now {d_model}) or n_blocks (now {n_blocks})")
    at_once = f"{concurrent} members at once x " if concurrent > 1 else ""
    raise InsufficientMemoryError(
        f"training would need about {at_once}{_gib(need['total'])} of memory (activations {_gib(need['activations'])}, "
        + (f"attention maps {_gib(need['maps'])}, " if need["maps"] else "")
        + (f"dilated convolutions' padding {_gib(need['padding'])}, " if 10 * need["padding"] >= need["total"] else "")
        + f"weights and optimiser state {_gib(need['parameters'])}: backbone {backbone!r} with {int(n_parameters):,} "
        f"parameters, series of {max_len} steps, batches of {batch}), but {device} has {_gib(free)} free. "
        "Options that help: " + "; ".join(helps)
    )


def _gib(n_bytes: float) -> str:
    try:
        return f"{n_bytes / 2**30:.1f} GiB"
    except OverflowError:  # hundreds of blocks of doubling padding: past any float
        return f"2^{int(n_bytes).bit_length() - 31} GiB"


def _padding_help(n_blocks: int, kernel_size: int) -> str:
    last = (int(kernel_size) - 1) * 2 ** (int(n_blocks) - 1)
    return (
        f"fewer n_blocks (now {n_blocks}: block i's dilated convolution pads its input by (kernel_size - 1) * 2**i "
        f"steps, {last} in the last block, so the padding doubles with every block) or a smaller kernel_size "
        f"(now {kernel_size})"
    )


def check_training_memory(
    *, max_len: int, stride: int | None, n_cases: int, batch_size: int, in_features: int, d_model: int,
    n_blocks: int, n_heads: int, p: float, kernel_size: int, dim_feedforward: int | None, attention: str,
    checkpointing: bool, device: torch.device, what: str = "training",
    options: tuple[str, ...] = ("patch_len", "checkpointing", "batch_size"), concurrent: int = 1,
    stem_channels: int = 0, stem_kind: str = "conv",
) -> None:
    """Raise InsufficientMemoryError when the estimate exceeds the memory `device` has free.

    stride: steps per token of a patch/downsample front end (None: one token per step).
    stem_channels, stem_kind: width and kind of the convolutional stem (0: none).
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
        checkpointing=checkpointing, stem_channels=stem_channels, n_steps_max=int(max_len), stem_kind=stem_kind,
    )
    if need["total"] * concurrent <= free:
        return
    helps = []
    stem_bound = need["stem"] >= max(need["maps"], need["activations"], need["parameters"], need["padding"])
    padding_bound = need["padding"] >= max(need["maps"], need["activations"], need["parameters"], need["stem"])
    # Under doubling padding the maps' options are named only when the maps alone would not fit either.
    maps_bound = need["maps"] >= need["parameters"] and (not padding_bound or need["maps"] * concurrent > free)
    if padding_bound:
        helps.append(_padding_help(n_blocks, kernel_size))
    if stem_bound:
        helps.append(f"conv_stem=None or a narrower conv_stem (now {stem_channels}: it runs on all {max_len} steps)")
    if concurrent > 1:
        helps.append(f"a smaller n_jobs ({concurrent} ensemble members train at once, each needing the estimate; "
                     "with train_members_together=True: False)")
    if maps_bound:
        if not stride and "patch_len" in options:
            helps.append("patch_len (tokens of several steps: the maps shrink with the square of the stride)")
        if not checkpointing and "checkpointing" in options:
            helps.append("checkpointing=True (one map per layer kept instead of about four)")
    if (maps_bound or stem_bound) and batch > 2 and "batch_size" in options:
        helps.append(f"a smaller batch_size (now {batch_size}; the maps grow linearly with it)")
    if (need["parameters"] + need["activations"] > need["maps"] and not padding_bound) or not helps:
        helps.append(f"a smaller d_model (now {d_model}) or n_blocks (now {n_blocks})")
    at_once = f"{concurrent} members at once x " if concurrent > 1 else ""
    raise InsufficientMemoryError(
        f"{what} would need about {at_once}{_gib(need['total'])} of memory (attention maps {_gib(need['maps'])}, "
        f"activations {_gib(need['activations'])}, "
        + (f"convolutional stem {_gib(need['stem'])}, " if need["stem"] else "")
        # Always a few bytes: named once it is a part worth lowering.
        + (f"dilated convolutions' padding {_gib(need['padding'])}, " if 10 * need["padding"] >= need["total"] else "")
        + f"weights and optimiser state {_gib(need['parameters'])}: "
        f"{tokens} tokens per series, batches of {batch}, {2 * int(n_blocks)} layers, d_model={d_model}), "
        f"but {device} has {_gib(free)} free. Options that help: " + "; ".join(helps)
    )
