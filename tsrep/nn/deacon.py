"""DEACON head mixing: a PCA layer over attention heads (Ampazis and Sakketou, "Diversifying Multi-Head
Attention in the Transformer Model", MAKE 2024, Sec. 3).

The h head outputs Z_1..Z_h (each N x d_k) are reshaped so that every (step, channel) pair is one
h-dimensional row (M_r, Fig. 1), batch-normalised, and multiplied by the PCA layer W (h x m):

    direct     rows of M_r (h features)                    -> BN -> W -> (N, m*d_k) -> W^O (m*d_k -> d)
    average    BN(M_r), mean over d_k: rows of S (h)       ->       W -> (N, m)     -> W^O (m -> d)
    nonlinear  [Z_i, Z_i^2, Z_i Z_j (i<j)] (h + h(h+1)/2)  -> BN -> W -> (N, m*d_k) -> W^O (m*d_k -> d)

m < h prunes heads: the output projection W^O is sized by m. The PCA weight is trained only by the
DEACON rule (tsrep.training.deacon.DeaconOptimizer), which needs the second moment of the layer's
inputs; the layer records it (valid steps only) on every training forward pass.

Choices where the paper is silent:
- BN is not affine: GHA needs zero-mean inputs (the paper's words), a learned shift would undo that;
  the output projection W^O learns any scale. Its statistics skip padded steps.
- The PCA weight starts semi-orthogonal (random orthonormal rows), a point GHA's fixed points share.
- The average form averages the batch-normalised values (the paper's Eq. 26 averages Z~, the BN output).
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from tsrep.nn._checks import is_integer
from tsrep.nn.norm import MaskedBatchNorm1d

HEAD_MIXINGS = ("deacon-direct", "deacon-average", "deacon-nonlinear")

# The paper's DEACON settings: the norm dP of every step, the share xi of the largest first-order loss
# decrease each step must reach, and i GHA-only updates per batch: the defaults wherever a DEACON setting
# is left out, and the defaults of the deacon_dp, deacon_xi and deacon_inner_steps fields of
# tsrep.backbones.config.DCTransformerConfig (hence of the estimators' parameters).
DEACON_DP = 0.2
DEACON_XI = 0.8
DEACON_INNER_STEPS = 500
#: GHA-only step size, in units of 1 / trace(moment) (see PCALayer).
GHA_LR = 0.5


def pca_input_width(kind: str, n_heads: int) -> int:
    """Width of the PCA layer's input: h (direct, average) or h + h(h+1)/2 (nonlinear)."""
    if kind not in HEAD_MIXINGS:
        raise ValueError(f"head_mixing must be one of {HEAD_MIXINGS} or None, got {kind!r}")
    return n_heads + n_heads * (n_heads + 1) // 2 if kind == "deacon-nonlinear" else n_heads


def max_deacon_m(kind: str, n_heads: int) -> int:
    """Largest number of retained components m: h, or h + h(h+1)/2 for the nonlinear form."""
    return pca_input_width(kind, n_heads)


def polynomial_features(z: torch.Tensor) -> torch.Tensor:
    """(..., h) -> (..., h + h(h+1)/2): [z_1..z_h, z_1^2..z_h^2, z_i z_j for i < j] (paper Eq. 31)."""
    h = z.shape[-1]
    i, j = torch.triu_indices(h, h, offset=1, device=z.device)
    return torch.cat([z, z * z, z[..., i] * z[..., j]], dim=-1)


class PCALayer(nn.Module):
    """y = x W^T with W of shape (m, n_in) (the paper's w is W^T), no bias.

    In training, each forward pass records `input_moment` = sum_r x_r x_r^T / R over the valid rows
    (detached): the DEACON optimiser computes Sanger's update from it. The DEACON settings are kept
    here so that any training loop can build the optimiser from the model alone.

    The attributes keep the paper's symbols: dP, xi, inner_steps, gha_lr.

    Parameters
    ----------
    n_in, m : int
        Input width and retained components (1 <= m <= n_in).
    deacon_dp : float > 0
        Norm dP of every DEACON step (paper: 0.2).
    deacon_xi : float in (0, 1)
        Fraction xi of the largest first-order loss decrease demanded per step (paper: 0.8).
    deacon_inner_steps : int >= 0
        GHA-only updates per batch (paper: 500), run on a copy of the weight: where they lead is the
        Hebbian direction of the constrained step, which alone changes the weight.
    gha_lr : float in (0, 1)
        GHA-only step size, in units of 1 / trace(moment) (so eta * lambda_max <= gha_lr: stable).
    """

    def __init__(
        self,
        n_in: int,
        m: int,
        deacon_dp: float = DEACON_DP,
        deacon_xi: float = DEACON_XI,
        deacon_inner_steps: int = DEACON_INNER_STEPS,
        gha_lr: float = GHA_LR,
    ):
        super().__init__()
        if not 1 <= m <= n_in:
            raise ValueError(f"deacon_m must be in [1, {n_in}] here, got {m!r}")
        validate_deacon_settings(deacon_dp, deacon_xi, deacon_inner_steps, gha_lr)
        self.n_in, self.m = n_in, m
        self.dP, self.xi = float(deacon_dp), float(deacon_xi)
        self.inner_steps, self.gha_lr = int(deacon_inner_steps), float(gha_lr)
        self.weight = nn.Parameter(torch.empty(m, n_in))
        nn.init.orthogonal_(self.weight)
        self.input_moment: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, R, n_in); valid: (B, R) bool or None -> (B, R, m)"""
        if self.training and torch.is_grad_enabled():
            with torch.no_grad():
                rows = (x[valid] if valid is not None else x.reshape(-1, self.n_in)).double()
                self.input_moment = rows.T @ rows / max(rows.shape[0], 1)
        return x @ self.weight.T

    def extra_repr(self) -> str:
        return f"n_in={self.n_in}, m={self.m}, dP={self.dP}, xi={self.xi}, inner_steps={self.inner_steps}"


def validate_deacon_settings(deacon_dp, deacon_xi, deacon_inner_steps, gha_lr=GHA_LR):
    if isinstance(deacon_dp, bool) or not (isinstance(deacon_dp, numbers.Real) and deacon_dp > 0):
        raise ValueError(f"deacon_dp must be a positive number, got {deacon_dp!r}")
    if isinstance(deacon_xi, bool) or not (isinstance(deacon_xi, numbers.Real) and 0 < deacon_xi < 1):
        raise ValueError(f"deacon_xi must be in (0, 1), got {deacon_xi!r}")
    if not is_integer(deacon_inner_steps) or deacon_inner_steps < 0:
        raise ValueError(f"deacon_inner_steps must be a non-negative integer, got {deacon_inner_steps!r}")
    if isinstance(gha_lr, bool) or not (isinstance(gha_lr, numbers.Real) and 0 < gha_lr < 1):
        raise ValueError(f"gha_lr must be in (0, 1), got {gha_lr!r}")


class DeaconHeadMixing(nn.Module):
    """Head outputs (B, H, N, d_k) -> BN -> PCA layer -> (B, N, out_features), ready for W^O.

    Parameters
    ----------
    kind : {"deacon-direct", "deacon-average", "deacon-nonlinear"}
    n_heads : int
        Number of head outputs H that are mixed (h, or h*h for interacting pairs).
    head_dim : int
        d_k (d_v) of each head.
    m : int or None
        Retained components (None: H, or H for nonlinear too, the paper's Non-Linear-h).
    **pca_settings : deacon_dp, deacon_xi, deacon_inner_steps, gha_lr of the PCA layer (PCALayer)
    """

    def __init__(self, kind: str, n_heads: int, head_dim: int, m: int | None = None, **pca_settings):
        super().__init__()
        n_in = pca_input_width(kind, n_heads)
        m = n_heads if m is None else m
        if not is_integer(m) or not 1 <= m <= n_in:
            raise ValueError(
                f"deacon_m={m!r} must be an integer in [1, {n_in}] for head_mixing={kind!r} with {n_heads} heads"
                + (" (h + h(h+1)/2 for the nonlinear form)" if kind == "deacon-nonlinear" else "")
            )
        self.kind, self.n_heads, self.head_dim, self.m = kind, n_heads, head_dim, int(m)
        self.bn = MaskedBatchNorm1d(n_in, affine=False)
        self.pca = PCALayer(n_in, self.m, **pca_settings)

    @property
    def out_features(self) -> int:
        return self.m if self.kind == "deacon-average" else self.m * self.head_dim

    def forward(self, heads: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """heads: (B, H, N, d_k); valid: (B, N) bool or None -> (B, N, out_features)"""
        b, h, n, dk = heads.shape
        rows = heads.permute(0, 2, 3, 1).reshape(b, n * dk, h)  # M_r: one row per (step, channel)
        row_valid = valid[:, :, None].expand(b, n, dk).reshape(b, n * dk) if valid is not None else None
        if self.kind == "deacon-nonlinear":
            rows = polynomial_features(rows)
        z = self.bn(rows, row_valid)
        if self.kind == "deacon-average":
            s = z.view(b, n, dk, h).mean(2)  # S: (B, N, h)
            return self.pca(s, valid)  # (B, N, m)
        y = self.pca(z, row_valid)  # (B, N*d_k, m)
        return y.view(b, n, dk, self.m).transpose(2, 3).reshape(b, n, self.m * dk)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, n_heads={self.n_heads}, head_dim={self.head_dim}, m={self.m}"
