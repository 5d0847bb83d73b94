"""One training step on long series with one token per time step: the EA-DC-Transformer's reference evolving
attention, its fused Triton kernels (tsrep.nn.fused_evolving), and torch.nn.TransformerEncoder.

Models (same width, depth, heads, FFN, dropout; mean pooling and a linear classifier on top of each):

* ``reference``: DCTransformerEncoder with DCTransformerConfig's defaults (d = 64, 3 blocks of 2 layers, 4 heads,
  p = 0.25, alpha = beta = 0.5, 3 x 3 map kernel, dropout 0.1), inside ``fused_evolving(False)``;
* ``fused``: the same model and weights inside ``fused_evolving(True)``;
* ``transformer``: nn.TransformerEncoder (d = 64, 4 heads, 6 layers, FFN 256, dropout 0.1, batch_first) after a
  linear input projection and learned positions: PyTorch's fused scaled-dot-product attention.

A step is forward, cross-entropy, backward and an Adam step, under bfloat16 autocast on CUDA (float32 on CPU);
the time is the best of --steps after --warmup steps, the memory torch.cuda.max_memory_allocated over the timed
steps (CUDA only). The ratios are fused / transformer.

    python benchmarks/long_series_gpu.py                                     # T = 512, 2048, 4096, batch 16
    python benchmarks/long_series_gpu.py --device cpu --lengths 64 --batch 2 # a smoke run (Triton's interpreter)
"""

from __future__ import annotations

import argparse
import os
import time

CHANNELS, CLASSES = 3, 4


def build(kind: str, length: int):
    from torch import nn

    from tsrep.backbones import DCTransformerConfig, DCTransformerEncoder

    config = DCTransformerConfig()
    if kind != "transformer":
        encoder = DCTransformerEncoder(CHANNELS, length, config)
        return nn.Sequential(_Backbone(encoder), nn.Linear(config.d_model, CLASSES))
    layer = nn.TransformerEncoderLayer(config.d_model, config.n_heads, config.dim_feedforward or 4 * config.d_model,
                                       config.dropout, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2 * config.n_blocks, enable_nested_tensor=False)
    return nn.Sequential(_Transformer(encoder, config.d_model, length), nn.Linear(config.d_model, CLASSES))


def _Backbone(encoder):
    from torch import nn

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, x):
            """(B, T, C) -> (B, d): the mean of the tokens"""
            return self.encoder(x).mean(1)

    return Backbone()


def _Transformer(encoder, d_model: int, length: int):
    import torch
    from torch import nn

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(CHANNELS, d_model)
            self.pos = nn.Parameter(torch.empty(length, d_model).uniform_(-0.02, 0.02))
            self.encoder = encoder

        def forward(self, x):
            """(B, T, C) -> (B, d)"""
            return self.encoder(self.proj(x) + self.pos[: x.shape[1]]).mean(1)

    return Transformer()


def measure(kind: str, length: int, batch: int, device: str, steps: int, warmup: int) -> dict:
    """ms per training step (best of steps) and peak memory in GiB (CUDA) of one model kind at one length."""
    import torch
    import torch.nn.functional as F

    from tsrep.nn.fused_evolving import fused_evolving

    torch.manual_seed(0)
    model = build(kind, length).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(batch, length, CHANNELS, device=device)
    y = torch.randint(0, CLASSES, (batch,), device=device)
    cuda = device.startswith("cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=cuda):
            loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        optimizer.step()

    mode = {"reference": False, "fused": True, "transformer": None}[kind]
    try:
        with fused_evolving(mode):
            for _ in range(warmup):
                step()
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(steps):
                start = time.perf_counter()
                step()
                if cuda:
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
    except torch.cuda.OutOfMemoryError:
        return dict(ms=float("nan"), gib=float("nan"), error="out of memory")
    finally:
        del model, optimizer
        if cuda:
            torch.cuda.empty_cache()
    gib = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
    return dict(ms=1e3 * min(times), gib=gib, error=None)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 4096])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=["reference", "fused", "transformer"],
                        choices=["reference", "fused", "transformer"])
    args = parser.parse_args(argv)
    if args.device == "cpu":
        # The kernels run on CPU tensors only in Triton's interpreter, chosen before triton is imported.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU (Triton interpreter, float32)"
    print(f"# {where}, batch {args.batch}, best of {args.steps} steps after {args.warmup}")
    print(f"{'T':>6} {'model':>12} {'ms/step':>10} {'peak GiB':>9}")
    for length in args.lengths:
        rows = {kind: measure(kind, length, args.batch, args.device, args.steps, args.warmup) for kind in args.models}
        for kind, r in rows.items():
            note = f"  {r['error']}" if r["error"] else ""
            print(f"{length:>6} {kind:>12} {r['ms']:>10.1f} {r['gib']:>9.3f}{note}")
        if "fused" in rows and "transformer" in rows:
            f, t = rows["fused"], rows["transformer"]
            print(f"{length:>6} {'fused/TE':>12} {f['ms'] / t['ms']:>9.2f}x {f['gib'] / t['gib']:>8.2f}x")


if __name__ == "__main__":
    main()
