"""The evolving-attention step (Wang et al., "Convolution-enhanced Evolving Attention Networks", Eq. 1 / Eq. 6).

    A_in    = alpha * A_logit_prev + (1 - alpha) * S      (S alone in the first layer)
    A_logit = beta * ReLU(Conv2d(A_in)) + (1 - beta) * A_in

The attention heads are the channels of a 2-D convolution over the N x N map (rows are queries,
columns are keys). Seq2seq models (ibid., Sec. 3.1, Figure 3) need masked convolutions:

- "full":   encoder self-attention, a standard k x k convolution.
- "causal": decoder self-attention. The upper-right corner of the kernel is masked (taps whose
            column offset exceeds their row offset), then the map is shifted one step down and
            right; together: output (i, j) reads rows i-k+1..i and columns j-k+1..j only, and for
            j <= i only cells on or below the diagonal (receptive field 6 for k = 3). No query
            after i and no key after j is ever read.
- "cross":  encoder-decoder attention. Each query row evolves from its own logits over
            neighbouring encoder keys only (a 1 x k kernel): the paper's "left column, shifted by
            one" drawn in our orientation, so no later decoder position leaks into row i.

Pixels as tokens (attention-augmented convolution: N = H*W in raster order): neighbours in the
flattened order are not neighbours in the image where a row ends, (h, W-1) being followed by
(h+1, 0). With `grid=(H, W)` a "full" map convolution never mixes across a row boundary: it runs
over the (query column, key column) plane of every (query row, key row) pair, which is the k x k
convolution of the flattened map with every tap that would wrap into another image row removed.
"""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F
from torch import nn

from tsrep.nn._checks import is_integer
from tsrep.nn._compile import compiling, refuse_double_backward

MAP_CONV_MASKS = ("full", "causal", "cross")


def pair_mask(valid: torch.Tensor, query_valid: torch.Tensor | None = None) -> torch.Tensor:
    """(B, N) bool of valid keys [and (B, M) of valid queries, default: the keys] -> (B, 1, M, N) bool,
    True where query and key are both valid."""
    rows = valid if query_valid is None else query_valid
    return (rows[:, :, None] & valid[:, None, :])[:, None]


def causal_kernel_mask(kernel_size: int) -> torch.Tensor:
    """(k, k) float, 1 on the taps a decoder map convolution may use (column offset <= row offset)."""
    return torch.tril(torch.ones(kernel_size, kernel_size))


class AttentionMapEvolution(nn.Module):
    """Residual link and convolutional evolution of pre-softmax attention logits.

    Parameters
    ----------
    n_heads : int
        Number of heads K: channels of the map convolution.
    alpha : float in [0, 1]
        Weight of the previous layer's logits (0: no residual link between maps).
    beta : float in [0, 1]
        Weight of the convolved map (0: no convolution; no convolution parameters are built).
    kernel_size : int, odd
        Size k of the k x k map convolution (3 in the paper; 1 and 5 are its ablations).
    conv_mask : {"full", "causal", "cross"}
        Encoder, decoder self-attention or encoder-decoder map convolution (module docstring).
    grid : (int, int) or None
        (H, W) when the tokens are the pixels of an H x W feature map in raster order: the "full"
        map convolution then never crosses an image row boundary (module docstring).
    """

    def __init__(
        self,
        n_heads: int,
        alpha: float,
        beta: float,
        kernel_size: int = 3,
        conv_mask: str = "full",
        grid: tuple[int, int] | None = None,
    ):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"beta must be in [0, 1], got {beta!r}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"attn_kernel_size must be a positive odd integer, got {kernel_size!r}")
        if conv_mask not in MAP_CONV_MASKS:
            raise ValueError(f"conv_mask must be one of {MAP_CONV_MASKS}, got {conv_mask!r}")
        if grid is not None:
            if conv_mask != "full":
                raise ValueError(f"grid needs conv_mask='full' (pixels of a feature map), got {conv_mask!r}")
            if len(grid) != 2 or not all(is_integer(v) and v >= 1 for v in grid):
                raise ValueError(f"grid must be a pair of positive integers (height, width), got {grid!r}")
            grid = (operator.index(grid[0]), operator.index(grid[1]))
        self.conv_mask = conv_mask
        self.grid = grid
        # Heads-innermost layout for the map convolution (ConvReluBlend); None: on CPUs only, where it
        # was measured 1.2-1.45x faster for the whole evolving step (forward + backward, K = 8).
        self.channels_last: bool | None = None
        self.n_heads = n_heads
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.kernel_size = kernel_size
        self.conv = None
        if self.beta > 0:
            if conv_mask == "cross":
                self.conv = nn.Conv2d(n_heads, n_heads, (1, kernel_size), padding=(0, kernel_size // 2))
            elif conv_mask == "causal":
                # Padding (k-1 above and left, none below or right) is the paper's one-step shift.
                self.conv = nn.Conv2d(n_heads, n_heads, kernel_size, padding=0)
                self.register_buffer("kernel_mask", causal_kernel_mask(kernel_size), persistent=False)
            else:
                self.conv = nn.Conv2d(n_heads, n_heads, kernel_size, padding=kernel_size // 2)

    def fusable(self) -> bool:
        """Whether the fused GPU kernels (tsrep.nn.fused_evolving) compute this evolution: an encoder ("full")
        map convolution over tokens in sequence order, beta > 0."""
        return self.conv is not None and self.conv_mask == "full" and self.grid is None

    def _weight_and_pre_pad(self) -> tuple[torch.Tensor, tuple[int, int, int, int] | None]:
        """The map convolution's weight (masked taps zeroed: they stay zero and get no gradient) and the
        extra padding (left, right, top, bottom) applied before it (the causal one-step shift)."""
        if self.conv_mask != "causal":
            return self.conv.weight, None
        k = self.kernel_size
        return self.conv.weight * self.kernel_mask, (k - 1, 0, k - 1, 0)

    def _convolve(self, a_in: torch.Tensor) -> torch.Tensor:
        """The map convolution with stock autograd ops (the reference of ConvReluBlend's)."""
        weight, pre_pad = self._weight_and_pre_pad()
        x = F.pad(a_in, pre_pad) if pre_pad else a_in
        return F.conv2d(x, weight, self.conv.bias, padding=self.conv.padding)

    def _convolve_and_blend(self, a_in: torch.Tensor, owned: bool = False) -> torch.Tensor:
        """beta * ReLU(conv(A_in)) + (1 - beta) * A_in, keeping for backward only A_in and the ReLU's sign;
        owned: A_in may be overwritten by the result."""
        if compiling():
            return torch.lerp(a_in, F.relu(self._convolve(a_in)), self.beta)
        weight, pre_pad = self._weight_and_pre_pad()
        bias = self.conv.bias
        device = a_in.device.type
        cast = False
        if torch.is_autocast_enabled(device):
            # The fused step runs with autocast off; it takes the dtype autocast would give the conv.
            dtype = torch.get_autocast_dtype(device)
            cast = a_in.dtype != dtype  # then A_in below is a copy, and the result must have its dtype
            a_in, weight, bias = a_in.to(dtype), weight.to(dtype), bias.to(dtype)
        with torch.autocast(device, enabled=False):
            channels_last = self.channels_last if self.channels_last is not None else device == "cpu"
            return ConvReluBlend.apply(
                a_in, weight, bias, self.conv.padding, pre_pad, self.beta, channels_last, owned and not cast
            )

    def forward(
        self,
        logits: torch.Tensor,
        prev_logits: torch.Tensor | None = None,
        valid: torch.Tensor | None = None,
        query_valid: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """
        logits:      (B, K, M, N) this layer's Q K^T / sqrt(d_head), finite (M = N for self-attention)
        prev_logits: (B, K, M, N) the previous layer's evolved logits, or None in the first layer
        valid:       (B, N) bool, False at padded keys, or None when nothing is padded
        query_valid: (B, M) bool of valid queries when they differ from the keys (cross-attention);
                     None: the rows follow `valid` for self-attention, all valid for cross-attention
        returns:     (B, K, M, N) evolved logits, finite, zero in padded rows and columns
        """
        if prev_logits is not None and self.alpha > 0:
            # lerp: one pass over the map instead of three, and nothing saved for backward.
            a_in = torch.lerp(logits, prev_logits, self.alpha)
        else:
            a_in = logits
        return self._evolve(a_in, valid, query_valid, owned=a_in is not logits)

    def from_queries_keys(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        scale: float,
        prev_logits: torch.Tensor | None = None,
        valid: torch.Tensor | None = None,
        query_valid: torch.Tensor | None = None,
        logit_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """forward(scale * q @ k^T + logit_bias, prev_logits, valid, query_valid) for q (B, K, M, d),
        k (B, K, N, d), logit_bias broadcastable to (B, K, M, N) or None.

        The map of Q K^T is made here, so the residual link and the blend may overwrite it: at
        most one (B, K, M, N) map is allocated per step of Eq. 1 (attention layers call this).
        """
        a_in = query_key_product(q * scale, k)  # keeps q and k for backward, not its output
        if logit_bias is not None:
            a_in = a_in.add_(logit_bias)
        if prev_logits is not None and self.alpha > 0:
            # In place where the map is this step's own; the stock path's vmap has no rule for lerp_.
            a_in = torch.lerp(a_in, prev_logits, self.alpha) if compiling() else a_in.lerp_(prev_logits, self.alpha)
        return self._evolve(a_in, valid, query_valid, owned=True)

    def _evolve(
        self, a_in: torch.Tensor, valid: torch.Tensor | None, query_valid: torch.Tensor | None, owned: bool
    ) -> torch.Tensor:
        """Masking, convolution and blend of Eq. 1 on A_in (B, K, M, N); owned: A_in may be overwritten."""
        # Padded rows/columns are zeroed before every convolution so that they look like the
        # convolution's own zero padding: a padded batch then matches each series run alone.
        keep = None
        if valid is not None or query_valid is not None:
            b, _, m, n = a_in.shape
            if valid is None:
                valid = torch.ones(b, n, dtype=torch.bool, device=a_in.device)
            if query_valid is None and m != n:
                query_valid = torch.ones(b, m, dtype=torch.bool, device=a_in.device)
            keep = pair_mask(valid, query_valid)
        if keep is not None:
            a_in = a_in.masked_fill_(~keep, 0.0) if owned else a_in.masked_fill(~keep, 0.0)
            owned = True
        if self.conv is None:
            return a_in
        if self.grid is None:
            evolved = self._convolve_and_blend(a_in, owned)
        else:
            # The blend is elementwise, so it may run on the regrouped map too; the copy is ours to overwrite.
            evolved = self._from_grid(self._convolve_and_blend(self._to_grid(a_in), owned=True), a_in.shape[0])
        if keep is not None:
            evolved = evolved.masked_fill(~keep, 0.0)
        return evolved

    def _to_grid(self, a: torch.Tensor) -> torch.Tensor:
        """(B, K, H*W, H*W) map -> (B*H*H, K, W, W): one (query column, key column) plane per (query row, key row)."""
        b, k, m, n = a.shape
        h, w = self.grid
        if m != h * w or n != h * w:
            raise ValueError(f"a map over a {h}x{w} grid must be {h * w} x {h * w}, got {m} x {n}")
        return a.view(b, k, h, w, h, w).permute(0, 2, 4, 1, 3, 5).reshape(b * h * h, k, w, w)

    def _from_grid(self, a: torch.Tensor, batch: int) -> torch.Tensor:
        """The inverse of _to_grid: (B*H*H, K, W, W) -> (B, K, H*W, H*W)."""
        h, w = self.grid
        k = a.shape[1]
        return a.view(batch, h, h, k, w, w).permute(0, 3, 1, 4, 2, 5).reshape(batch, k, h * w, h * w)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, alpha={self.alpha}, beta={self.beta}, kernel_size={self.kernel_size}, "
            f"conv_mask={self.conv_mask!r}" + (f", grid={self.grid}" if self.grid is not None else "")
        )


class QueryKeyProduct(torch.autograd.Function):
    """q @ k^T for q (..., M, d), k (..., N, d) with a backward that never multiplies by a transposed map.

    Autograd's own backward computes dk = dS^T @ q, a product with the transposed (M, N) map that runs
    about 15x slower on CPU than (q^T @ dS)^T for small head sizes (measured: 242 vs 15 ms at
    16 x 1751 x 1751, d = 2, one thread).
    """

    @staticmethod
    def forward(ctx, q, k):
        ctx.save_for_backward(q, k)
        return q @ k.transpose(-2, -1)

    @staticmethod
    def backward(ctx, grad):
        q, k = ctx.saved_tensors
        grad_q = grad @ k.to(grad.dtype) if ctx.needs_input_grad[0] else None
        grad_k = (q.to(grad.dtype).transpose(-2, -1) @ grad).transpose(-2, -1) if ctx.needs_input_grad[1] else None
        return grad_q, grad_k


def query_key_product(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(..., M, d), (..., N, d) -> (..., M, N) = q @ k^T (see QueryKeyProduct; a plain product under torch.compile)."""
    if compiling():
        return q @ k.transpose(-2, -1)
    return QueryKeyProduct.apply(q, k)


class ConvReluBlend(torch.autograd.Function):
    """out = beta * ReLU(conv2d(pad(a), w, b)) + (1 - beta) * a, in one buffer, saving a and a sign mask.

    Composed of stock ops, autograd would keep the conv's input and the ReLU's output (two fp32
    maps) and allocate three more for the blend; here the conv output is rectified and blended in
    place, and backward keeps a plus one byte per cell, calling the convolution's own backward.
    """

    @staticmethod
    def forward(ctx, a, weight, bias, padding, pre_pad, beta, channels_last=False, overwrite=False):
        x = F.pad(a, pre_pad) if pre_pad else a
        if channels_last:
            # Heads innermost: the K x K x 3 x 3 convolution vectorises over heads (about 2x faster on
            # CPU); one copy in, and the blend below reads the conv output in place of a copy out.
            x = x.contiguous(memory_format=torch.channels_last)
            weight = weight.contiguous(memory_format=torch.channels_last)
        c = F.conv2d(x, weight, bias, padding=padding)
        positive = c > 0
        # out = beta * ReLU(c) + (1 - beta) * a in a's layout, with no new map where possible: in c
        # when it has a's layout, else in a itself when a is not needed for backward (x is a copy).
        if c.is_contiguous():
            out = c.relu_().lerp_(a, 1.0 - beta)  # c + (1 - beta) * (a - c)
        elif overwrite and x is not a:
            ctx.mark_dirty(a)
            out = a.lerp_(c.relu_(), beta)
        else:
            out = torch.lerp(a, c.relu_(), beta, out=torch.empty_like(a, memory_format=torch.contiguous_format))
        ctx.save_for_backward(x, weight, positive)
        ctx.settings = (tuple(padding), pre_pad, float(beta), bias is not None)
        return out

    @staticmethod
    def backward(ctx, grad):
        refuse_double_backward("map convolution (evolving attention)")
        x, weight, positive = ctx.saved_tensors
        padding, pre_pad, beta, has_bias = ctx.settings
        # beta is applied after the (linear) convolution backward; a product with the bool mask is
        # the one pass over the map it needs (masked_fill and torch.where are slower on CPU). The
        # product takes the conv's layout.
        grad_c = torch.mul(grad, positive, out=torch.empty_like(positive, dtype=grad.dtype))
        need_a, need_w, need_b = ctx.needs_input_grad[:3]
        grad_x, grad_w, grad_b = torch.ops.aten.convolution_backward(
            grad_c, x, weight, [weight.shape[0]] if has_bias else None, [1, 1], list(padding), [1, 1],
            False, [0, 0], 1, [need_a, need_w, has_bias and need_b],
        )
        grad_a = None
        if need_a:
            if pre_pad:
                left, _, top, _ = pre_pad
                grad_x = grad_x[..., top:, left:]
            # beta * conv grad + (1 - beta) * grad of the blend, in grad's layout
            grad_a = torch.lerp(grad, grad_x, beta, out=torch.empty_like(grad, memory_format=torch.contiguous_format))
        grad_w = grad_w * beta if grad_w is not None else None
        grad_b = grad_b * beta if grad_b is not None else None
        return grad_a, grad_w, grad_b, None, None, None, None, None
