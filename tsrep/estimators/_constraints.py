"""The estimators' parameter constraints, declared as data (scikit-learn's ``_parameter_constraints``).

Each estimator class holds ``_parameter_constraints``, a dict ``name -> list of accepted kinds``,
checked with scikit-learn's ``validate_parameter_constraints`` once at the start of ``fit``; a bad
value raises ``sklearn.utils._param_validation.InvalidParameterError`` (a ValueError) naming the
parameter, the estimator, what is accepted and what was given. What one parameter alone cannot
decide (n_heads dividing the attention width, an optimiser's keyword arguments, a patch length
with pretraining, ...) stays code, in each estimator's ``_check_combinations``.

scikit-learn counts ``True`` as an integer; here a bool is accepted only where the constraint says
"boolean" (or "verbose"), so ``d_model=True`` is refused like any other non-integer.
"""

from __future__ import annotations

import os
from numbers import Integral, Real

from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
    make_constraint,
    validate_parameter_constraints,
)

from tsrep.data.convert import SCALINGS
from tsrep.nn.deacon import HEAD_MIXINGS
from tsrep.nn.norm import NORMS
from tsrep.nn.pooling import POOLINGS
from tsrep.training.masking import MASKINGS
from tsrep.training.schedules import LR_SCHEDULES

__all__ = ["InvalidParameterError", "check_declared", "TRAINING", "EA_DC_TRANSFORMER", "BACKBONE"]


def _positive_int():
    return Interval(Integral, 1, None, closed="left")


def _non_negative_int():
    return Interval(Integral, 0, None, closed="left")


def _unit(closed: str):
    return Interval(Real, 0, 1, closed=closed)


_PATH = [str, os.PathLike, None]

#: The training harness (tsrep.estimators._harness): every estimator has these.
TRAINING = {
    "dim_feedforward": [_positive_int(), None],
    "dropout": [_unit("left")],
    "pooling": [StrOptions(set(POOLINGS))],
    "scaling": [StrOptions(set(SCALINGS))],
    "lr": [Interval(Real, 0, None, closed="neither")],
    # One case per batch would leave BatchNorm without statistics and data parallelism without a
    # case per process: such batches are skipped, so batch_size=1 would train nothing.
    "batch_size": [Interval(Integral, 2, None, closed="left")],
    "max_epochs": [_positive_int()],
    "min_steps": [StrOptions({"auto"}), _non_negative_int()],
    "validation_fraction": [StrOptions({"auto"}), _unit("left")],
    "patience": [_positive_int(), None],
    "optimizer": [str, type],  # which names and classes: _check_combinations (tsrep.training.optim)
    "optimizer_kwargs": [dict, None],
    "weight_decay": [Interval(Real, 0, None, closed="left")],
    "lr_schedule": [StrOptions(set(LR_SCHEDULES))],
    "label_smoothing": [StrOptions({"auto"}), _unit("left")],
    "class_weight": [StrOptions({"balanced"}), dict, None],
    "augmentation": [str, list, tuple, None],  # which names: tsrep.nn.augmentation
    "grad_clip": [Interval(Real, 0, None, closed="neither"), None],
    "n_estimators": [_positive_int()],
    "n_jobs": [_positive_int(), Interval(Integral, None, -1, closed="right")],  # joblib: -1 all cores, ...
    "device": "no_validation",  # names, torch.device objects and what helps: tsrep.estimators._common.resolve_device
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "callbacks": "no_validation",  # a Callback, a list of them or None: tsrep.training.callbacks
    "checkpoint_dir": _PATH,
    "warm_start": ["boolean"],
}

#: The EA-DC-Transformer's network, pretraining and cost options (tsrep.estimators._base).
EA_DC_TRANSFORMER = {
    "d_model": [_positive_int()],
    "n_blocks": [_positive_int()],
    "n_heads": [_positive_int()],
    "p": [_unit("both")],
    "alpha": [_unit("both")],
    "beta": [_unit("both")],
    "attn_kernel_size": [_positive_int()],  # odd: _check_combinations
    "attention": "no_validation",  # the kinds registered in tsrep.nn.attention_kinds, listed when refused
    "head_mixing": [StrOptions(set(HEAD_MIXINGS)), None],
    "deacon_m": [_positive_int(), None],
    "deacon_dp": [Interval(Real, 0, None, closed="neither")],
    "deacon_xi": [_unit("neither")],
    "deacon_inner_steps": [_non_negative_int()],
    "kernel_size": [_positive_int()],
    "norm": [StrOptions(set(NORMS))],
    "pretrain_epochs": [_non_negative_int()],
    "mask_ratio": [_unit("neither")],
    "mask_mean_length": [Interval(Real, 1, None, closed="left")],
    "masking": [StrOptions(set(MASKINGS))],
    "freeze_encoder": ["boolean"],
    "pretrained_encoder": _PATH,
    "checkpointing": ["boolean"],
    "mixed_precision": [StrOptions({"bf16"}), None],
    "compile": ["boolean"],
    "patch_len": [StrOptions({"auto"}), _positive_int(), None],
    "patch_stride": [_positive_int(), None],
    "downsample": [_positive_int(), None],
}

#: The baselines' networks (tsrep.estimators.backbone); which backbone names: its registry.
BACKBONE = {
    "backbone": [str],
    "d_model": [_positive_int()],
    "n_blocks": [_positive_int()],
    "n_heads": [_positive_int()],
    "kernel_size": [_positive_int()],
    "norm": [StrOptions(set(NORMS)), None],
}


def check_declared(est) -> None:
    """Validate est's parameters against ``type(est)._parameter_constraints`` (InvalidParameterError).

    A bool passes only a "boolean" (or "verbose") constraint: scikit-learn would let True through as the
    integer 1.
    """
    constraints = type(est)._parameter_constraints
    params = est.get_params(deep=False)
    name = type(est).__name__
    for param, value in params.items():
        accepted = constraints.get(param)
        takes_bool = isinstance(accepted, list) and {"boolean", "verbose"} & set(map(str, accepted))
        if isinstance(value, bool) and isinstance(accepted, list) and not takes_bool:
            described = " or ".join(str(make_constraint(c)) for c in accepted)
            raise InvalidParameterError(
                f"The {param!r} parameter of {name} must be {described}. Got {value!r} instead."
            )
    validate_parameter_constraints(constraints, params, caller_name=name)
