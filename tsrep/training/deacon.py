"""The DEACON constrained update for PCA layers (Ampazis and Sakketou, "Diversifying Multi-Head
Attention in the Transformer Model", MAKE 2024, Sec. 2.2 and 4).

Per step, with G = dLoss/dW (from backward) and F the Hebbian direction below, both m x n_in (the
orientation of tsrep.nn.deacon.PCALayer.weight, the paper's W^T):

    I_GG = <G,G>,  I_FF = <F,F>,  I_GF = <G,F>
    dQ   = -xi * dP * sqrt(I_GG)
    l2   = 0.5 * sqrt((I_FF I_GG - I_GF^2) / (I_GG dP^2 - dQ^2))
    l1   = (I_GF - 2 l2 dQ) / I_GG
    dW   = -(l1 / (2 l2)) G + (1 / (2 l2)) F

so that ||dW|| = dP and <G, dW> = dQ < 0 (the loss falls to first order), and dW is the step with
those two properties most aligned with F. Degenerate cases: G = 0 -> dW = dP F / ||F|| (no loss
constraint to meet; 0 if F = 0 too); F = 0 or F parallel to G -> dW = -dP G / ||G||.

F is Sanger's GHA update on the batch, from the second moment C = mean_r x_r x_r^T of the layer's
valid input rows:

    F(W) = W C - LT(W C W^T) W          (= mean_r [y_r x_r^T - LT(y_r y_r^T) W], y_r = W x_r)

The paper's inner loop ("for each batch ... an inner loop that iteratively updates the quantity F
alone", i = 500) lets F track the batch's principal components. It runs here on a copy of W:
`inner_steps` GHA-only updates W' += eta F(W') (eta = gha_lr / trace(C) for rows of length up to 1,
smaller for longer ones: gha_steps), and F of the constrained step is the displacement W_i - W they reach. dW depends on F only
through its direction, so one inner step gives Sanger's F(W) itself (the same step as none). The
inner loop only steers the step: W moves by dW alone (and the rescaling below), so ||dW|| = dP and
<G, dW> = dQ < 0 hold for the step taken on every batch.

Unit-length rows. The step above has a fixed norm and spends most of it on -G, so by itself nothing
bounds the rows' lengths: in a default fit they grew to about 3 within 40 batches, where the GHA inner
loop diverged. The paper keeps them at length 1 ("Oja's modification addresses this stability problem by
normalizing the weights to have a unit length", Sec. 2; its Fig. 6 shows PCA weights of norm one after
training), so here G and F are first projected onto the changes that keep each row's length (each row
minus its component along the row of W), the step is taken there, and each row of W + dW is scaled back
to length 1. The recorded step still has ||dW|| = dP and <G, dW> = dQ < 0; rescaling the rows changes
W + dW by O(dP^2) only (1 - 1 / sqrt(1 + ||dw_i||^2) per row).

A layer whose weight has no gradient (no loss reaches it) follows the inner loop's GHA updates, with
no loss constraint to keep; a frozen layer (weight.requires_grad False) is never changed.
The update depends on G only through its direction, so gradient clipping does not change it.
Only the PCA weights are trained this way; `with_deacon` builds the ordinary optimiser for every
other parameter and returns one object that steps both.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
import torch
from torch import nn

from tsrep.nn.deacon import PCALayer


def sanger_update(weight: torch.Tensor, moment: torch.Tensor) -> torch.Tensor:
    """Sanger's rule averaged over a batch, from the input second moment: F = W C - LT(W C W^T) W.

    weight: (m, n) (rows: components), moment: (n, n) -> (m, n)
    """
    wc = weight @ moment
    return wc - torch.tril(wc @ weight.T) @ weight


def deacon_step(
    grad: torch.Tensor, hebb: torch.Tensor, dP: float, xi: float, eps: float = 1e-10
) -> torch.Tensor:
    """The DEACON weight change dW from G (grad) and F (hebb); computed in float64."""
    g, f = grad.double(), hebb.double()
    igg, iff, igf = float((g * g).sum()), float((f * f).sum()), float((g * f).sum())
    tiny = 1e-300
    if igg <= tiny:  # no gradient: nothing to decrease, move along F
        return dP * f / math.sqrt(iff) if iff > tiny else torch.zeros_like(f)
    disc = iff * igg - igf * igf  # >= 0 by Cauchy-Schwarz
    if iff <= tiny or disc <= eps * iff * igg:  # F = 0 or F parallel to G: steepest descent of norm dP
        return -dP * g / math.sqrt(igg)
    dq = -xi * dP * math.sqrt(igg)
    lam2 = 0.5 * math.sqrt(disc / (igg * dP * dP - dq * dq))
    lam1 = (igf - 2.0 * lam2 * dq) / igg
    return -(lam1 / (2.0 * lam2)) * g + f / (2.0 * lam2)


def gha_steps(weight: torch.Tensor, moment: torch.Tensor, n_steps: int, gha_lr: float) -> torch.Tensor:
    """n_steps GHA-only updates W += eta F(W), eta = gha_lr / (trace(C) max(1, max_i ||w_i||^2)).
    Returns the new weight (float64).

    A row's squared norm s moves by about 2 eta (w^T C w)(1 - s) per update, with w^T C w <= s trace(C):
    the update is stable while eta trace(C) s < 1. Dividing by the largest squared row norm keeps it so
    for rows of any length (with eta = gha_lr / trace(C) alone, rows of norm 1.6 already diverge)."""
    w, c = weight.detach().double().cpu().numpy(), moment.detach().double().cpu().numpy()
    trace = float(np.trace(c))
    if n_steps > 0 and trace > 0:
        # numpy, not torch: the matrices are h x h, where a torch call's overhead is five times numpy's and
        # the paper's 500 updates per batch and layer dominated a DEACON fit.
        for _ in range(n_steps):
            wc = w @ c
            eta = gha_lr / (trace * max(1.0, float((w * w).sum(1).max())))
            w = w + eta * (wc - np.tril(wc @ w.T) @ w)  # Sanger's F(W), as sanger_update
    return torch.from_numpy(w).to(weight.device)


def tangent(direction: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The part of `direction` (m, n) that leaves every row of `weight` (m, n) at its length to first
    order: each row minus its component along the matching row of `weight`."""
    rows = weight / weight.norm(dim=1, keepdim=True).clamp_min(1e-300)
    return direction - (direction * rows).sum(1, keepdim=True) * rows


def unit_rows(weight: torch.Tensor) -> torch.Tensor:
    """`weight` with every row scaled to length 1 (a zero row stays zero)."""
    return weight / weight.norm(dim=1, keepdim=True).clamp_min(1e-300)


def hebbian_direction(weight: torch.Tensor, moment: torch.Tensor, n_steps: int, gha_lr: float) -> torch.Tensor:
    """F of the constrained step (float64): Sanger's F(W) for n_steps = 0, else the displacement
    gha_steps(W) - W of the inner loop run on a copy of W."""
    if n_steps <= 0:
        return sanger_update(weight.double(), moment.double())
    return gha_steps(weight, moment, n_steps, gha_lr) - weight.double()


def pca_layers(model: nn.Module) -> list[PCALayer]:
    return [m for m in model.modules() if isinstance(m, PCALayer)]


class DeaconOptimizer(torch.optim.Optimizer):
    """Trains the weights of PCA layers by the DEACON rule; nothing else.

    Parameters
    ----------
    layers : iterable of tsrep.nn.deacon.PCALayer
        Each must have run a training forward pass (it records its input moment) and a backward
        pass (its weight's gradient is G) before `step`. A layer without a gradient gets the
        GHA-only updates; a layer without a recorded moment, or whose weight does not require a
        gradient (frozen), is left as it is.
    dP, xi, inner_steps, gha_lr : optional overrides of each layer's own settings.
    """

    def __init__(
        self,
        layers: Iterable[PCALayer],
        dP: float | None = None,
        xi: float | None = None,
        inner_steps: int | None = None,
        gha_lr: float | None = None,
    ):
        layers = list(layers)
        if not layers:
            raise ValueError("DeaconOptimizer needs at least one PCA layer")
        groups = []
        for layer in layers:
            groups.append(
                {
                    "params": [layer.weight],
                    "dP": layer.dP if dP is None else dP,
                    "xi": layer.xi if xi is None else xi,
                    "inner_steps": layer.inner_steps if inner_steps is None else inner_steps,
                    "gha_lr": layer.gha_lr if gha_lr is None else gha_lr,
                }
            )
        super().__init__(groups, defaults={})
        self._layers = {id(layer.weight): layer for layer in layers}
        self.last_steps: list[torch.Tensor] = []  # the dW applied by the latest step, per layer with a gradient

    @torch.no_grad()
    def step(self, closure: Callable | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.last_steps = []
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:  # frozen (e.g. a pretrained encoder): no update of any kind
                    continue
                layer = self._layers.get(id(p))
                moment = layer.input_moment if layer is not None else None
                if moment is None:
                    continue
                # h x h arithmetic: on the CPU in float64 (hundreds of tiny kernels would cost more on a GPU).
                moment = moment.detach().to("cpu", torch.float64)
                w = p.detach().to("cpu", torch.float64)
                if p.grad is None:  # no loss depends on W: nothing to keep, W follows GHA alone
                    w = unit_rows(gha_steps(w, moment, group["inner_steps"], group["gha_lr"]))
                else:
                    # The constrained step among the changes that keep the rows' lengths (to first order),
                    # then the rows back to length 1: <G, dW> = <G_t, dW> because dW is tangent.
                    grad = tangent(p.grad.detach().to("cpu", torch.float64), w)
                    hebb = tangent(hebbian_direction(w, moment, group["inner_steps"], group["gha_lr"]), w)
                    dw = deacon_step(grad, hebb, group["dP"], group["xi"])
                    self.last_steps.append(dw)
                    w = unit_rows(w + dw)
                p.copy_(w.to(device=p.device, dtype=p.dtype))
        return loss


class OptimizerWithDeacon:
    """An ordinary optimiser for every parameter but the PCA weights, and DeaconOptimizer for those.

    step() and zero_grad() act on both; param_groups, state_dict and lr schedulers refer to the
    ordinary optimiser (`base`); `deacon` is the DEACON part.
    """

    def __init__(self, base: torch.optim.Optimizer, deacon: DeaconOptimizer):
        self.base = base
        self.deacon = deacon

    @property
    def param_groups(self):
        return self.base.param_groups

    @property
    def state(self):
        return self.base.state

    def zero_grad(self, set_to_none: bool = True):
        self.base.zero_grad(set_to_none=set_to_none)
        self.deacon.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Callable | None = None):
        loss = self.base.step(closure)
        self.deacon.step()
        return loss

    def state_dict(self):
        return {"base": self.base.state_dict(), "deacon": self.deacon.state_dict()}

    def load_state_dict(self, state):
        self.base.load_state_dict(state["base"])
        self.deacon.load_state_dict(state["deacon"])


def with_deacon(model: nn.Module, make_optimizer: Callable[[list], torch.optim.Optimizer], **deacon_overrides):
    """make_optimizer(params) over every parameter of `model`, or, when the model holds PCA layers,
    make_optimizer(the other parameters) combined with a DeaconOptimizer for the PCA weights.

    Without PCA layers this is exactly make_optimizer(list(model.parameters())).
    """
    layers = pca_layers(model)
    if not layers:
        return make_optimizer(list(model.parameters()))
    pca_ids = {id(layer.weight) for layer in layers}
    others = [p for p in model.parameters() if id(p) not in pca_ids]
    return OptimizerWithDeacon(make_optimizer(others), DeaconOptimizer(layers, **deacon_overrides))
