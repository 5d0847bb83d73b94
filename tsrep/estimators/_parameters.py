"""The estimators' parameters, declared once as data: each name with its default and its accepted values.

A table maps ``name -> (default, constraints)``; constraints are scikit-learn's ``_parameter_constraints``
kinds. An estimator's ``__init__`` is generated from its tables (:func:`keyword_parameters`): it takes
exactly those keyword parameters, with those defaults, and stores each untouched (scikit-learn's
contract: ``get_params`` reads the signature, ``clone`` rebuilds from it), so a parameter is written
in one place and the estimators that share it cannot drift apart. ``fit`` checks every value once
against its constraint with scikit-learn's ``validate_parameter_constraints``; a bad value raises
``sklearn.utils._param_validation.InvalidParameterError`` (a ValueError) naming the parameter, the
estimator, what is accepted and what was given. What one parameter alone cannot decide (n_heads
dividing the attention width, an optimiser's keyword arguments, a patch length with pretraining, ...)
stays code, in each estimator's ``_check_combinations``.

The EA-DC-Transformer's network parameters are the fields of
:class:`tsrep.backbones.config.DCTransformerConfig`, the one source of their defaults and constraints
(:data:`ENCODER`); TSRepEncoder takes the same fields.

scikit-learn counts ``True`` as an integer; here a bool is accepted only where the constraint says
"boolean" (or "verbose"), so ``d_model=True`` is refused like any other non-integer.
"""

from __future__ import annotations

import abc
import inspect
import os
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from tsrep.backbones.config import (
    DCTransformerConfig, check_constraints, non_negative_int, positive_int, unit_interval,
)
from tsrep.data.convert import SCALINGS
from tsrep.nn.norm import NORMS
from tsrep.nn.pooling import POOLINGS
from tsrep.training.masking import MASKINGS
from tsrep.training.schedules import LR_SCHEDULES

__all__ = [
    "InvalidParameterError", "check_declared", "constraints_of", "defaults_of", "keyword_parameters",
    "stored_parameters_init",
    "ENCODER", "PREPROCESSING", "TRAINING", "PRETRAINING", "COST", "FRONT_END", "LONG_RUNS", "BACKBONE",
]


_PATH = [str, os.PathLike, None]

#: The EA-DC-Transformer's network: DCTransformerConfig's fields, defaults and constraints.
ENCODER = {
    name: (default, DCTransformerConfig.constraints()[name]) for name, default in DCTransformerConfig.defaults().items()
}

#: How series become the network's input and its output one vector per series (every estimator).
PREPROCESSING = {
    "pooling": ("mean", [StrOptions(set(POOLINGS))]),
    "scaling": ("standard", [StrOptions(set(SCALINGS))]),
}

#: The training recipe of the harness (tsrep.estimators._harness): every estimator has these.
TRAINING = {
    "lr": (1e-3, [Interval(Real, 0, None, closed="neither")]),
    # One case per batch would leave BatchNorm without statistics and data parallelism without a
    # case per process: such batches are skipped, so batch_size=1 would train nothing.
    "batch_size": (64, [Interval(Integral, 2, None, closed="left")]),
    "max_epochs": (100, [positive_int()]),
    "min_steps": ("auto", [StrOptions({"auto"}), non_negative_int()]),
    "validation_fraction": ("auto", [StrOptions({"auto"}), unit_interval("left")]),
    "patience": (20, [positive_int(), None]),
    "optimizer": ("adamw", [str, type]),  # which names and classes: _check_combinations (tsrep.training.optim)
    "optimizer_kwargs": (None, [dict, None]),
    "weight_decay": (0.01, [Interval(Real, 0, None, closed="left")]),
    "lr_schedule": ("onecycle", [StrOptions(set(LR_SCHEDULES)), callable]),  # callable: optimizer -> scheduler
    "label_smoothing": ("auto", [StrOptions({"auto"}), unit_interval("left")]),
    "mixup": ("auto", [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")]),
    "class_weight": (None, [StrOptions({"balanced"}), dict, None]),
    "augmentation": ("auto", [str, list, tuple, None]),  # which names: tsrep.nn.augmentation
    "grad_clip": (4.0, [Interval(Real, 0, None, closed="neither"), None]),
    "n_estimators": (1, [positive_int()]),
    "n_jobs": (1, [positive_int(), Interval(Integral, None, -1, closed="right")]),  # joblib: -1 all cores, ...
    # names, torch.device objects and what helps: tsrep.estimators._common.resolve_device
    "device": ("auto", "no_validation"),
    "random_state": (None, ["random_state"]),
    "verbose": (False, ["verbose"]),
}

#: Masked-reconstruction pretraining and pretrained encoders (tsrep.estimators._pretraining).
PRETRAINING = {
    "pretrain_epochs": (0, [non_negative_int()]),
    "mask_ratio": (0.15, [unit_interval("neither")]),
    "mask_mean_length": (3, [Interval(Real, 1, None, closed="left")]),
    "masking": ("geometric", [StrOptions(set(MASKINGS))]),
    "freeze_encoder": (False, ["boolean"]),
    "pretrained_encoder": (None, _PATH),
}

#: Options that trade time for memory or use the hardware, never changing the maths (tsrep.estimators._cost).
COST = {
    "checkpointing": (False, ["boolean"]),
    "mixed_precision": (None, [StrOptions({"bf16"}), None]),
    "compile": (False, ["boolean", dict]),
}

#: How a series becomes tokens (tsrep.nn.patching).
FRONT_END = {
    "patch_len": ("auto", [StrOptions({"auto"}), positive_int(), None]),
    "patch_stride": (None, [positive_int(), None]),
    "downsample": (None, [positive_int(), None]),
    "conv_stem": ("auto", [StrOptions({"auto"}), positive_int(), None]),
    # "auto" (tsrep.nn.patching.resolve_max_tokens), an int, or a tuple / list of ints giving an ensemble's
    # members their budgets in turn (_cost checks them)
    "max_tokens": ("auto", [StrOptions({"auto"}), positive_int(), tuple, list]),
}

#: Following, resuming and continuing long fits (tsrep.training.callbacks, tsrep.training.resume).
LONG_RUNS = {
    "callbacks": (None, "no_validation"),  # a Callback, a list of them or None: tsrep.training.callbacks
    "checkpoint_dir": (None, _PATH),
    "warm_start": (False, ["boolean"]),
}

#: The baselines' networks (tsrep.estimators.backbone); which backbone names: its registry.
BACKBONE = {
    "backbone": ("lstm", [str]),
    "d_model": (64, [positive_int()]),
    "n_blocks": (3, [positive_int()]),
    "n_heads": (8, [positive_int()]),
    "kernel_size": (3, [positive_int()]),
    "dim_feedforward": (None, [positive_int(), None]),
    "dropout": (0.1, [unit_interval("left")]),
    # None: each backbone's own (tsrep.estimators.backbone.DEFAULT_NORM)
    "norm": (None, [StrOptions(set(NORMS)), None]),
}


def defaults_of(*tables: dict) -> dict:
    """name -> default of the tables, in their order (a later table's entry for a name wins)."""
    return {name: default for table in tables for name, (default, _) in table.items()}


def constraints_of(*tables: dict) -> dict:
    """name -> constraints of the tables (scikit-learn's ``_parameter_constraints``)."""
    return {name: accepted for table in tables for name, (_, accepted) in table.items()}


def stored_parameters_init(cls: type, signature: inspect.Signature):
    """An ``__init__`` for `cls` taking exactly the parameters of `signature` (positionally or by keyword,
    with their defaults) and storing each untouched (scikit-learn's contract: ``get_params`` reads the
    signature, ``clone`` rebuilds from it); it then calls the next ``__init__`` in the method resolution
    order, as a written one would. The explicit signature is what inspect and the documentation show."""

    def __init__(self, *args, **params):
        bound = signature.bind(self, *args, **params)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)
        super(cls, self).__init__()

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    return __init__


def keyword_parameters(*tables: dict):
    """Class decorator: give the class an ``__init__`` taking the tables' parameters with their defaults
    (:func:`stored_parameters_init`) and their ``_parameter_constraints``."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
           for name, default in defaults_of(*tables).items()]
    )
    constraints = constraints_of(*tables)

    def decorate(cls):
        cls.__init__ = stored_parameters_init(cls, signature)
        cls._parameter_constraints = constraints
        return abc.update_abstractmethods(cls)  # aeon's bases declare __init__ abstract

    return decorate


def check_declared(est) -> None:
    """Validate est's parameters against ``type(est)._parameter_constraints`` (InvalidParameterError)."""
    check_constraints(type(est)._parameter_constraints, est.get_params(deep=False), type(est).__name__)
