"""One backbone, many attention kinds: build and validate the attention module of a layer by name.

    attention      module                                      evolving step (alpha, beta)
    "evolving"     MultiHeadAttention                          as given (alpha = beta = 0: plain)
    "vanilla"      MultiHeadAttention                          never: alpha and beta are not used
    "interacting"  MultiHeadAttention(interacting="pairs")     as given, over h*h maps
    "interacting-summed"  ... (interacting="summed", Alg. 1)   as given, over h maps
    "crossed"      CrossedCoAttention (two branches)           as given, each branch its own maps

head_mixing (None or "deacon-direct" | "deacon-average" | "deacon-nonlinear") adds the DEACON PCA
layer before the output projection of every attention module (each branch of a crossed one); it
mixes the h head outputs, or the h*h pair outputs of interacting attention.
"""

from __future__ import annotations

import numbers

from torch import nn

from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.crossed import CrossedCoAttention
from tsrep.nn.deacon import HEAD_MIXINGS, max_deacon_m, validate_deacon_settings
from tsrep.nn.interacting import n_virtual_heads

ATTENTION_KINDS = ("evolving", "vanilla", "interacting", "interacting-summed", "crossed")

_INTERACTING = {"interacting": "pairs", "interacting-summed": "summed"}


def validate_attention_options(
    attention: str,
    head_mixing: str | None,
    deacon_m: int | None,
    n_heads: int,
    d_attn: int,
    deacon_dp: float = 0.2,
    deacon_xi: float = 0.8,
    deacon_inner_steps: int = 500,
) -> None:
    """Raise ValueError naming the parameters of a bad or meaningless combination.

    n_heads and d_attn are assumed already checked (n_heads divides d_attn when d_attn > 0).
    """
    if not isinstance(attention, str) or attention not in ATTENTION_KINDS:
        raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
    if head_mixing is not None and head_mixing not in HEAD_MIXINGS:
        raise ValueError(f"head_mixing must be None or one of {HEAD_MIXINGS}, got {head_mixing!r}")
    if d_attn == 0:
        if attention not in ("evolving", "vanilla"):
            raise ValueError(
                f"attention={attention!r} needs an attention branch, but p gives none (p=0: dilated "
                "convolution only); use p > 0 or attention='evolving'"
            )
        if head_mixing is not None:
            raise ValueError(
                f"head_mixing={head_mixing!r} needs an attention branch, but p gives none (p=0); "
                "use p > 0 or head_mixing=None"
            )
    if head_mixing is None:
        if deacon_m is not None:
            raise ValueError(
                f"deacon_m={deacon_m!r} is only used with head_mixing='deacon-*', but head_mixing=None; "
                "set head_mixing or leave deacon_m=None"
            )
        return
    n_mixed = n_virtual_heads(n_heads, _INTERACTING.get(attention))
    limit = max_deacon_m(head_mixing, n_mixed)
    if deacon_m is not None and (
        isinstance(deacon_m, bool) or not isinstance(deacon_m, numbers.Integral) or not 1 <= deacon_m <= limit
    ):
        what = f"{n_mixed} head outputs" + (" (h*h pairs of interacting attention)" if n_mixed != n_heads else "")
        rule = "h + h(h+1)/2" if head_mixing == "deacon-nonlinear" else "h"
        raise ValueError(
            f"deacon_m={deacon_m!r} must be an integer in [1, {limit}]: head_mixing={head_mixing!r} over "
            f"{what} keeps at most {rule} = {limit} components"
        )
    validate_deacon_settings(deacon_dp, deacon_xi, deacon_inner_steps)


def build_attention(
    attention: str,
    dim_in: int,
    dim: int,
    n_heads: int,
    alpha: float,
    beta: float,
    map_kernel_size: int,
    dropout: float,
    head_mixing: str | None = None,
    deacon_m: int | None = None,
    deacon_settings: dict | None = None,
) -> nn.Module:
    """The attention module of one layer; forward(x, valid, prev_logits) -> (out, logits)."""
    settings = dict(deacon_settings or {})
    validate_attention_options(
        attention, head_mixing, deacon_m, n_heads, dim,
        settings.get("dP", 0.2), settings.get("xi", 0.8), settings.get("inner_steps", 500),
    )
    mixing = dict(head_mixing=head_mixing, deacon_m=deacon_m, deacon_settings=settings or None)
    if attention == "vanilla":
        alpha = beta = 0.0
    if attention == "crossed":
        # Each branch's copy of the input gets its own dropout mask (rate: the model's dropout).
        return CrossedCoAttention(
            dim_in, dim, n_heads, alpha, beta, map_kernel_size, dropout, input_dropout=dropout, **mixing
        )
    return MultiHeadAttention(
        dim_in, dim, n_heads, alpha, beta, map_kernel_size, dropout, interacting=_INTERACTING.get(attention), **mixing
    )
