"""Cost options of the EA-DC-Transformer estimators: checkpointing, mixed precision, compile, front ends.

None of them changes what the model computes beyond float rounding, except the patch/downsampling
front ends, which change the tokens the encoder sees (tsrep.nn.patching).
"""

from __future__ import annotations

import inspect
import numbers

import torch

from tsrep.nn.patching import AUTO, front_end

MIXED_PRECISIONS = {None: None, "bf16": torch.bfloat16}


def check_front_end_combinations(est) -> None:
    """Raise ValueError naming the token front-end options that cannot go together (or with pretraining)."""
    if est.conv_stem not in (AUTO, None) and est.pretrained_encoder is not None:
        raise ValueError(
            f"conv_stem={est.conv_stem!r} cannot be combined with pretrained_encoder: the checkpoint fixes the "
            "encoder's input (no stem); leave conv_stem='auto' or None"
        )
    check_max_tokens(est.max_tokens, est.n_estimators)
    fixed_tokens = est.patch_len != AUTO or est.downsample is not None or est.pretrain_epochs
    if isinstance(est.max_tokens, (tuple, list)) and fixed_tokens:
        # Budgets only act through patch_len="auto"; members would silently differ in seed alone.
        raise ValueError(
            f"max_tokens={est.max_tokens!r} sets the token budgets of patch_len='auto', but the tokens here are "
            f"{'per step (pretrain_epochs)' if est.pretrain_epochs else 'fixed by patch_len / downsample'}; "
            "leave patch_len='auto', downsample=None and pretrain_epochs=0, or give max_tokens one int"
        )
    if est.patch_len == AUTO:
        if est.patch_stride is not None:
            raise ValueError(
                f"patch_stride={est.patch_stride!r} needs an explicit patch_len; patch_len='auto' chooses both"
            )
        return  # "auto" gives one token per step with pretraining (tsrep.nn.patching.resolve_front_end)
    if front_end(est.patch_len, est.patch_stride, est.downsample) is None:
        return
    option = "downsample" if est.downsample is not None else "patch_len"
    if est.pretrain_epochs:
        raise ValueError(
            f"{option}={getattr(est, option)!r} cannot be combined with pretrain_epochs={est.pretrain_epochs!r}: "
            "masked pretraining reconstructs every step, the front end makes tokens of several steps"
        )
    if est.pretrained_encoder is not None:
        raise ValueError(
            f"{option}={getattr(est, option)!r} cannot be combined with pretrained_encoder: the checkpoint "
            "fixes the encoder's input (one token per step)"
        )


def check_max_tokens(max_tokens, n_estimators: int) -> None:
    """Raise ValueError unless a tuple / list max_tokens holds positive ints and goes with an ensemble
    (n_estimators >= 2) of a multiple of its length, whose members take the budgets in turn (an int is
    checked where it is declared)."""
    if not isinstance(max_tokens, (tuple, list)):
        return
    if not max_tokens or not all(_is_positive_int(m) for m in max_tokens):
        raise ValueError(f"max_tokens must be a positive int or a non-empty sequence of them, got {max_tokens!r}")
    if n_estimators < 2:
        raise ValueError(
            f"max_tokens={max_tokens!r} gives the members of an ensemble their token budgets in turn, but "
            f"n_estimators={n_estimators}; set n_estimators >= 2 or give one int"
        )
    if n_estimators % len(max_tokens):
        # Budgets that no member takes, or budgets taken by unequal numbers of members, are never what was meant.
        raise ValueError(
            f"max_tokens={max_tokens!r} gives the members their token budgets in turn, so n_estimators must be a "
            f"multiple of its {len(max_tokens)} budgets (got n_estimators={n_estimators}: "
            + (f"{len(max_tokens) - n_estimators} budget(s) would train no member)"
               if n_estimators < len(max_tokens) else "the budgets would have unequal numbers of members)")
        )


def member_max_tokens(max_tokens, index: int) -> int:
    """The token budget of ensemble member `index`: max_tokens itself, or its entries in turn."""
    return max_tokens[index % len(max_tokens)] if isinstance(max_tokens, (tuple, list)) else max_tokens


def _is_positive_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def encoder_cost_options(est) -> dict:
    """The DCTransformerEncoder keyword arguments of an estimator's checkpointing and mixed_precision."""
    return {"checkpointing": bool(est.checkpointing), "autocast_dtype": MIXED_PRECISIONS[est.mixed_precision]}


def compile_options(compile) -> dict | None:
    """torch.compile's keyword arguments of a `compile` parameter (True: {}; a dict: itself), None for False.

    ValueError naming `compile` for a key torch.compile does not take or a value it refuses (an unknown mode or
    backend), before any data is read."""
    if compile is False:
        return None
    options = {} if compile is True else dict(compile)
    known = set(inspect.signature(torch.compile).parameters) - {"model"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(
            f"compile={compile!r}: torch.compile takes no keyword {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(sorted(known))}"
        )
    try:
        torch.compile(torch.nn.Identity(), **options)  # checks mode and backend; nothing is traced until a call
    except Exception as error:
        raise ValueError(f"compile={compile!r}: torch.compile refuses these options: {error}") from error
    return options


def compiled_if_asked(est, encoder: torch.nn.Module) -> torch.nn.Module:
    """The encoder, compiled in place (torch.compile with est.compile's options) unless est.compile is False."""
    options = compile_options(est.compile)
    if options is not None:
        # In place: the state_dict keys stay those of the plain module (pickling, checkpoints).
        encoder.compile(**options)
    return encoder
