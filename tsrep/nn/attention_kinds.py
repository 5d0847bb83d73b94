"""One backbone, many attention kinds: build and validate the attention module of a layer by name.

    attention      module                                      evolving step (alpha, beta)
    "evolving"     MultiHeadAttention                          as given (alpha = beta = 0: plain)
    "vanilla"      MultiHeadAttention                          never: alpha and beta are not used
    "interacting"  MultiHeadAttention(interacting="pairs")     as given, over h*h maps
    "interacting-summed"  ... (interacting="summed", Alg. 1)   as given, over h maps
    "crossed"      CrossedCoAttention (two branches)           as given, each branch its own maps

Kinds are registered by name (as timm registers its models and layers): ``register_attention``
adds one, ``attention_kind_names()`` lists them, and ``build_attention``, tsrep.nn.TransformerLayer, the
EA-DC-Transformer's layers and the parameter checks look them up, so a new kind needs no change here.
What callers need to know of a kind without building it (``attention_kind(name).n_maps(n_heads)``,
``.heads_interact``) is declared when it is registered.

head_mixing (None or "deacon-direct" | "deacon-average" | "deacon-nonlinear") adds the DEACON PCA
layer before the output projection of every attention module (each branch of a crossed one); it
mixes the h head outputs, or the h*h pair outputs of interacting attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import nn

from tsrep.nn._checks import is_integer, positive_int
from tsrep.nn.attention import MultiHeadAttention
from tsrep.nn.crossed import CrossedCoAttention
from tsrep.nn.deacon import (
    DEACON_DP, DEACON_INNER_STEPS, DEACON_XI, HEAD_MIXINGS, max_deacon_m, validate_deacon_settings,
)
from tsrep.nn.interacting import INTERACTING_MODES, n_virtual_heads


@dataclass(frozen=True)
class AttentionKind:
    """A registered attention kind.

    build : callable
        ``build(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, head_mixing=...,
        deacon_m=..., deacon_settings=..., **options)`` -> module with ``forward(x, valid, prev_logits,
        need_logits) -> (out, logits)``; options: further MultiHeadAttention keywords a caller may give
        (tsrep.nn.TransformerLayer passes ``causal`` and its ``attention_options``).
    interacting : {None, "pairs", "summed"}
        How its heads interact (tsrep.nn.interacting): "pairs" gives h*h head outputs for DEACON to mix.
    needs_attention_branch : bool
        False for the kinds that a layer without attention (p = 0: dilated convolution only) may
        name, as it names the default "evolving"; the others mean nothing there and are refused.
    branches : int
        Attention modules of one layer that each keep their own maps (2 for crossed co-attention).
    """

    name: str
    build: Callable[..., nn.Module]
    interacting: str | None = None
    needs_attention_branch: bool = True
    branches: int = 1

    def n_maps(self, n_heads: int) -> int:
        """The (B, ., N, N) attention maps one layer of this kind holds per case with n_heads heads."""
        return self.branches * n_virtual_heads(n_heads, self.interacting)

    @property
    def heads_interact(self) -> bool:
        """Whether the heads' maps interact, so that Li and Luo's head-count rule (Eq. 13) applies to it."""
        return self.interacting is not None


_REGISTRY: dict[str, AttentionKind] = {}


def register_attention(
    name: str, *, interacting: str | None = None, needs_attention_branch: bool = True, branches: int = 1
):
    """Decorator registering ``build`` (see AttentionKind) as the attention kind `name`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"an attention kind's name must be a non-empty string, got {name!r}")
    if interacting is not None and interacting not in INTERACTING_MODES:
        raise ValueError(f"interacting must be None or one of {INTERACTING_MODES}, got {interacting!r}")
    branches = positive_int("branches", branches)

    def register(build: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"attention kind {name!r} is already registered")
        _REGISTRY[name] = AttentionKind(name, build, interacting, needs_attention_branch, branches)
        return build

    return register


def attention_kind_names() -> tuple[str, ...]:
    """The registered attention kinds, in the order of registration."""
    return tuple(_REGISTRY)


def attention_kind(name: str) -> AttentionKind:
    """The registered kind `name`; ValueError listing the registered kinds for any other value."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"attention must be one of {attention_kind_names()}, got {name!r}")
    return _REGISTRY[name]


@register_attention("evolving", needs_attention_branch=False)
def _evolving_attention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
    return MultiHeadAttention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing)


@register_attention("vanilla", needs_attention_branch=False)
def _vanilla_attention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
    # alpha and beta are not used: plain attention whatever the model's evolving weights.
    return MultiHeadAttention(dim_in, d_model, n_heads, 0.0, 0.0, attn_kernel_size, dropout, **mixing)


@register_attention("interacting", interacting="pairs")
def _interacting_attention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
    return MultiHeadAttention(
        dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, interacting="pairs", **mixing
    )


@register_attention("interacting-summed", interacting="summed")
def _interacting_summed_attention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
    return MultiHeadAttention(
        dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, interacting="summed", **mixing
    )


@register_attention("crossed", branches=2)
def _crossed_co_attention(dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, **mixing):
    # Each branch's copy of the input gets its own dropout mask (rate: the model's dropout).
    return CrossedCoAttention(
        dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout, input_dropout=dropout, **mixing
    )


#: The kinds tsrep registers itself.
ATTENTION_KINDS = attention_kind_names()


def validate_attention_options(
    attention: str,
    head_mixing: str | None,
    deacon_m: int | None,
    n_heads: int,
    d_attn: int,
    deacon_dp: float = DEACON_DP,
    deacon_xi: float = DEACON_XI,
    deacon_inner_steps: int = DEACON_INNER_STEPS,
) -> None:
    """Raise ValueError naming the parameters of a bad or meaningless combination.

    n_heads and d_attn are assumed already checked (n_heads divides d_attn when d_attn > 0).
    """
    kind = attention_kind(attention)
    if head_mixing is not None and head_mixing not in HEAD_MIXINGS:
        raise ValueError(f"head_mixing must be None or one of {HEAD_MIXINGS}, got {head_mixing!r}")
    if d_attn == 0:
        if kind.needs_attention_branch:
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
    n_mixed = n_virtual_heads(n_heads, kind.interacting)
    limit = max_deacon_m(head_mixing, n_mixed)
    if deacon_m is not None and (not is_integer(deacon_m) or not 1 <= deacon_m <= limit):
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
    d_model: int,
    n_heads: int,
    alpha: float,
    beta: float,
    attn_kernel_size: int,
    dropout: float,
    head_mixing: str | None = None,
    deacon_m: int | None = None,
    deacon_settings: dict | None = None,
) -> nn.Module:
    """The attention module of one layer, built by the registered kind `attention`;
    forward(x, valid, prev_logits) -> (out, logits). deacon_settings: as MultiHeadAttention's."""
    settings = deacon_settings or {}
    validate_attention_options(
        attention, head_mixing, deacon_m, n_heads, d_model,
        settings.get("deacon_dp", DEACON_DP), settings.get("deacon_xi", DEACON_XI),
        settings.get("deacon_inner_steps", DEACON_INNER_STEPS),
    )
    return attention_kind(attention).build(
        dim_in, d_model, n_heads, alpha, beta, attn_kernel_size, dropout,
        head_mixing=head_mixing, deacon_m=deacon_m, deacon_settings=settings or None,
    )
