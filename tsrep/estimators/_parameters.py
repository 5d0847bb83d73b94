"""The estimators' parameters, declared once as data: each name with its default, its accepted values
and its documentation.

A table maps ``name -> Declared(default, constraints, doc, type_name)``; constraints are
scikit-learn's ``_parameter_constraints`` kinds, doc the parameter's numpydoc text and type_name the
type shown beside it where the constraints do not say it well (a plain ``(default, constraints)``
pair serves a table whose documentation is written elsewhere). The network's parameters are the
fields of :class:`tsrep.backbones.config.DCTransformerConfig` (:data:`ENCODER`) and the training
settings those of :class:`tsrep.training.config.TrainConfig` and
:class:`~tsrep.training.config.PretrainConfig` (:func:`fields_table`): only what an estimator has
beyond them is declared here.

An estimator's ``__init__`` is generated from its tables (:func:`keyword_parameters`): it takes
exactly those keyword parameters, with those defaults, and stores each untouched (scikit-learn's
contract: ``get_params`` reads the signature, ``clone`` rebuilds from it), so a parameter is written
in one place and the estimators that share it cannot drift apart. ``fit`` checks every value once
against its constraint with scikit-learn's ``validate_parameter_constraints``; a bad value raises
``sklearn.utils._param_validation.InvalidParameterError`` (a ValueError) naming the parameter, the
estimator, what is accepted and what was given. What one parameter alone cannot decide (n_heads
dividing the attention width, an optimiser's keyword arguments, a patch length with pretraining, ...)
stays code, in each estimator's ``_check_combinations``.

The estimators' docstrings are written from the same declarations (:func:`fill_doc`): a line
``{parameters}`` becomes the numpydoc Parameters section of the class's ``__init__`` parameters, in
order, and ``{attributes: name ...}`` the entries of the fitted attributes named
(:data:`FITTED_ATTRIBUTES`).

scikit-learn counts ``True`` as an integer; here a bool is accepted only where the constraint says
"boolean" (or "verbose"), so ``d_model=True`` is refused like any other non-integer.
"""

from __future__ import annotations

import abc
import difflib
import inspect
import os
import re
import textwrap
from collections.abc import Mapping
from dataclasses import fields
from numbers import Integral
from typing import NamedTuple

from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from tsrep.backbones.config import DCTransformerConfig, check_constraints, positive_int, unit_interval
from tsrep.data.convert import SCALINGS
from tsrep.estimators._tasks import (
    AUTO_LABEL_SMOOTHING, AUTO_MAX_EPOCHS, AUTO_MIN_STEPS, AUTO_MIN_VALIDATION_CASES, AUTO_MIXUP, AUTO_PATIENCE,
    AUTO_STEPS_PER_CLASS, AUTO_VALIDATION_FRACTION, resolve_max_epochs, resolve_min_steps,
    resolve_validation_fraction,
)
from tsrep.nn.conv_stem import STEM_KINDS
from tsrep.nn.norm import NORMS
from tsrep.nn.pooling import POOLINGS
from tsrep.training.config import PretrainConfig, TrainConfig, parameter_name

__all__ = [
    "Declared", "InvalidParameterError", "auto_over", "check_declared", "constraints_of", "defaults_of",
    "describe_constraints", "fields_table", "fill_doc", "keyword_parameters", "stored_parameters_init",
    "ENCODER", "PREPROCESSING", "TRAINING", "PRETRAINING", "COST", "FRONT_END", "LONG_RUNS", "BACKBONE",
    "FITTED_ATTRIBUTES",
]


class Declared(NamedTuple):
    """A parameter: its default, its constraints (scikit-learn's kinds), its numpydoc text and the type
    shown (None: read from the constraints). The text or type may be a mapping task -> text
    ("classification", "regression") where the two tasks' estimators read differently."""

    default: object
    constraints: object
    doc: str | Mapping
    type_name: str | Mapping | None = None


def fields_table(config: type, *names: str, **defaults) -> dict:
    """The entries of a config dataclass's fields (DCTransformerConfig, TrainConfig, PretrainConfig)
    under the estimators' parameter names: all of them in declaration order, or those `names` in
    that order; `defaults` (by parameter name) are an estimator's own defaults, where they differ."""
    table = {
        parameter_name(f): Declared(f.default, f.metadata["constraints"], f.metadata["doc"], f.metadata["type_name"])
        for f in fields(config)
    }
    unknown = (set(names) | set(defaults)) - set(table)
    if unknown:
        raise KeyError(f"{config.__name__} has no field of parameter name {sorted(unknown)}")
    return {name: table[name]._replace(default=defaults.get(name, table[name].default)) for name in names or table}


def auto_over(entry: Declared, doc: str) -> Declared:
    """An estimator parameter "auto" by default, resolved before training to a value of `entry` (a
    config field, which holds the resolved value): it accepts "auto" and what the field accepts, and
    its text is the field's followed by `doc`, what "auto" means."""
    return Declared("auto", [StrOptions({"auto"}), *entry.constraints], f"{entry.doc} {doc}", entry.type_name)


_PATH = [str, os.PathLike, None]
_LEAST = AUTO_MIN_VALIDATION_CASES


def _least_train(task: str) -> int:
    """The smallest TRAIN whose "auto" validation split holds enough cases for `task`."""
    return next(n for n in range(1, 10**6) if resolve_validation_fraction("auto", n, task) > 0)

_MEASURED = "(measured in the user guide's training recipe page)"

#: The EA-DC-Transformer's network: DCTransformerConfig's fields.
ENCODER = fields_table(DCTransformerConfig)

#: How series become the network's input and its output one vector per series (every estimator).
PREPROCESSING = {
    "pooling": Declared(
        "mean", [StrOptions(set(POOLINGS))],
        'Over valid steps; "flatten" needs series no longer than the longest training series. With "mean" or '
        '"max", series of any length are predicted (the EA-DC-Transformer reuses its last positional embedding '
        "past the longest training series).",
    ),
    "scaling": Declared(
        "standard", [StrOptions(set(SCALINGS))],
        'Per-channel standardisation fitted on the training data; "symlog" first maps x to '
        "sign(x) * log(1 + abs(x)), for heavy-tailed inputs such as counts.",
    ),
}

_TRAIN = fields_table(TrainConfig)

# What "auto" gives where a MiniRocket is blended in, as the docs below state it (from the resolvers themselves).
_BLENDED_EPOCHS = resolve_max_epochs("auto", blended=True)
_BLENDED_STEP_FLOOR = resolve_min_steps("auto", None, blended=True)

#: The training recipe of the harness (tsrep.estimators._base): every estimator has these; TrainConfig's
#: fields and what the harness does around its loop.
TRAINING = {
    **{name: _TRAIN[name] for name in ("lr", "batch_size")},
    # "auto" here; TrainConfig.max_epochs and min_steps hold the numbers they resolve to (max_epochs_, min_steps_).
    "max_epochs": auto_over(
        _TRAIN["max_epochs"],
        f'"auto": {AUTO_MAX_EPOCHS}, or {_BLENDED_EPOCHS} where a MiniRocket is '
        "blended into the answer (``blend_minirocket_``; the members of an ensemble that blends train it too): the "
        f"blend holds the accuracy the last seven eighths of the steps buy the network alone {_MEASURED}. The value "
        "used is ``max_epochs_``.",
    ),
    "min_steps": auto_over(
        _TRAIN["min_steps"],
        f'"auto": {AUTO_MIN_STEPS}, and for a classifier at least {AUTO_STEPS_PER_CLASS} per class, because the steps '
        f"a problem needs grow with its classes {_MEASURED}; where a MiniRocket is averaged into the answer, as for "
        f"``max_epochs``, {_BLENDED_STEP_FLOOR} and the same {AUTO_STEPS_PER_CLASS} per class "
        "(problems of many classes lost with fewer). The floor applies where max_epochs is \"auto\" too: with "
        'an explicit max_epochs, "auto" is 0 and the epochs given are the ones trained (as the command line\'s '
        "--max-epochs); give both to have both. The value used is ``min_steps_``.",
    ),
    "validation_fraction": Declared(
        "auto", [StrOptions({"auto"}), unit_interval("left")],
        'Part of the training data held out to select the best epoch and stop early. "auto" holds out '
        f"{AUTO_VALIDATION_FRACTION:.0%} when that is at least {_LEAST['classification']} cases for a classifier "
        f"(TRAIN >= {_least_train('classification')}), {_LEAST['regression']} for a regressor (TRAIN >= "
        f"{_least_train('regression')}), and "
        "otherwise trains the whole budget on all of TRAIN: a small split picks a classifier's epochs by the "
        "noise of its accuracy, while a regressor's continuous validation error already tells fitting from "
        "learning noise (tsrep.estimators._tasks.resolve_validation_fraction). 0: never. The value used is "
        "``validation_fraction_``.",
    ),
    # "auto" here; TrainConfig.patience holds what it resolves to (patience_).
    "patience": auto_over(
        _TRAIN["patience"],
        '"auto": None (no early stopping) for a classifier under the "onecycle" and "cosine" schedules, which '
        "anneal over the whole budget, so that stopping early would cut the annealing (the best validation epoch "
        f"is still kept), and {AUTO_PATIENCE} otherwise {_MEASURED}. The value used is ``patience_``.",
    ),
    **{name: _TRAIN[name] for name in ("optimizer", "optimizer_kwargs", "weight_decay", "lr_schedule")},
    # The loss's, not the loop's: "auto" resolves to label_smoothing_, which the loss takes.
    "label_smoothing": Declared(
        "auto", [StrOptions({"auto"}), unit_interval("left")],
        'Cross-entropy label smoothing (Szegedy et al., "Rethinking the Inception Architecture for Computer '
        'Vision", CVPR 2016): the target puts 1 - s on the true class and s spread evenly over all classes. '
        f'"auto": {AUTO_LABEL_SMOOTHING} for a classifier {_MEASURED}; a regressor has none ("auto" or 0 only). The value used is '
        "``label_smoothing_``.",
    ),
    # "auto" here; TrainConfig.mixup holds the alpha it resolves to (mixup_).
    "mixup": auto_over(
        _TRAIN["mixup"],
        f'"auto": {AUTO_MIXUP} for a classifier {_MEASURED}, none for a regressor. The value used is ``mixup_``.',
    ),
    "class_weight": Declared(
        None, [StrOptions({"balanced"}), dict, None],
        'Loss weight per class: "balanced" is n_cases / (n_classes * class count) (scikit-learn\'s rule); a dict '
        "maps labels to weights (others weigh 1). Multiplies ``sample_weight`` of ``fit``; the product is scaled "
        "to mean 1 over TRAIN. Classification only.",
    ),
    "augmentation": Declared(  # which names: tsrep.nn.augmentation
        "auto", [str, list, tuple, None],
        'Random label-preserving distortions of every training batch (tsrep.nn.augmentation): "window_warp" (a '
        'random 10 % window played at half or twice its speed), "window_slice" (a random 90 % window stretched '
        'back to full length), "scaling" (x N(1, 0.1^2) per case and channel), "jitter" (N(0, 0.05^2) noise per '
        'step), named joined by "+" or as a sequence and applied in that order; never at prediction. "auto": all '
        "four when TRAIN has fewer than 100 cases and the model has no convolutional stem (``conv_stem_``, "
        "EA-DC-Transformer only; scaling and jitter alone when a training series is shorter than 32 steps), none "
        "otherwise (used: ``augmentation_``). None: train on the series as given (the paper's protocol). Small "
        "training sets of long series gain most; larger ones underfit within the same step budget "
        f"{_MEASURED}.",
        type_name='"auto", None, str or sequence of str',
    ),
    "grad_clip": _TRAIN["grad_clip"],
    "precise_bn": Declared(
        "auto", [StrOptions({"auto"}), "boolean"],
        "After training, recompute the BatchNorm layers' running statistics over shuffled batches of the "
        "unaugmented training set, each batch weighted by its cases (PreciseBN: Wu and Johnson, \"Rethinking "
        "'Batch' in BatchNorm\", 2021; tsrep.training.precise_bn), instead of keeping the running averages of the "
        "last training batches, which mixup and augmentation shift and which make a small training set's "
        "predictions change from one epoch to the next. One more forward pass over TRAIN; no effect on a network "
        f'without BatchNorm. "auto": off for now {_MEASURED}; True mends a small set whose fit ends on bad '
        "averages. The value used is ``precise_bn_``.",
        type_name='"auto" or bool',
    ),
    "blend_minirocket": Declared(
        "auto", [StrOptions({"auto"}), "boolean"],
        "Blend the network's answer with that of a MiniRocket fitted to the same training data "
        '(Dempster, Schmidt and Webb, "MiniRocket", KDD 2021: about 10,000 convolution features and a ridge '
        "regression, about a second to fit where the network takes minutes). A classifier averages the two's "
        "class probabilities, the network weighing a quarter below 32 training cases, where it errs three times "
        "as often as the MiniRocket (``network_weight_``); the ridge's scores become probabilities by a softmax "
        "whose temperature minimises their leave-one-out log-loss on TRAIN (cases alone in their class left "
        "out). The two are right on different "
        "problems: over 47 UCR problems (three seeds) the average scored 0.837 against 0.821 for the network "
        "alone and 0.824 for MiniRocket, and 0.838 with the network at the smaller budget the blend brings ("
        "``max_epochs``; user guide, training recipe page). A regressor weighs each prediction inversely to its "
        "squared error on cases it did not train on (the network's validation split at the epoch it keeps, the "
        "ridge's leave-one-out error; equal weights without a validation split), its network at the same smaller "
        "budget: over the three regression problems available offline (three seeds) the RMSE was 0.67 against "
        "2.97 for the network alone on Tecator, 0.0417 against 0.0432 on Covid3Month and 0.304 against 0.301 on "
        "CardanoSentiment, in 0.36 times the seconds. An ensemble (n_estimators) fits one MiniRocket for all its "
        'members. "auto": on. False: the network alone (the paper\'s protocol). The value used is '
        "``blend_minirocket_``; the fitted MiniRocket is ``minirocket_``, the network's share of the answer "
        "``network_weight_``.",
        type_name='"auto" or bool',
    ),
    "n_estimators": Declared(
        1, [positive_int()],
        "Seed ensemble: members identical but for their seed (drawn from random_state) and, for the "
        "EA-DC-Transformer with a sequence of max_tokens, their token budget; class probabilities (or "
        "predictions) averaged; fitted members in ``estimators_``. On the UCR development panel (the "
        "EA-DC-Transformer classifier, five seeds) three members raised the mean accuracy from 0.860 to 0.873 and "
        "five to 0.875, at three and five times the fit time (user guide, training recipe page). Members that "
        "also differ in token budget (``max_tokens=(64, 32)``) ensemble better: three members 0.878 at 0.85 of "
        "the time of three seeds, six members 0.882. Over 47 UCR problems (the panel and 35 others), three seeds "
        "averaged score 0.830 against 0.821 for one network. With the default MiniRocket blend (one for the "
        "ensemble; its members train the blended network's smaller budget) three members score 0.856 on the 39 "
        "of them with published figures, against 0.854 for one blended classifier and HIVE-COTE 2's 0.853, at "
        "about 3 times one default fit (the panel's median, one CPU thread).",
    ),
    "n_jobs": Declared(  # joblib's convention: -1 all cores, -2 all but one, ...
        1, [positive_int(), Interval(Integral, None, -1, closed="right")],
        "Ensemble members fitted in parallel by joblib processes (-1: all cores).", type_name="int",
    ),
    "train_members_together": Declared(
        "auto", [StrOptions({"auto"}), "boolean"],
        "Train an ensemble's members together in this process: their weights stacked and run as one network "
        "under torch.func.vmap, one kernel launch per operation for all members (tsrep.training.members), where "
        "a GPU's steps on small problems are bound by launches. Each member keeps its own shuffles, dropout, "
        "BatchNorm statistics and gradient clipping, but draws other random numbers than a separate fit. "
        '"auto": on a CUDA device where the members fit in its memory together. On a CPU, where one thread took '
        "a median 0.92 of the time of one member after another for three together (eleven UCR problems), "
        "\"auto\" fits them separately, "
        "so that they can run in parallel (n_jobs) and n_jobs never changes the result; True saves those few "
        "percent in one process. "
        "With a validation split each member stops early on its own. Members that cannot train together "
        "(different token budgets, callbacks, "
        "checkpoint_dir, compile, checkpointing, mixed_precision, DEACON head mixing, a plateau schedule, an "
        "operation vmap cannot batch such as crossed attention's) are fitted separately, with a warning "
        "when True asked otherwise.",
        type_name='"auto" or bool',
    ),
    # names, torch.device objects and what helps: tsrep.estimators._checks.resolve_device
    "device": Declared(
        "auto", "no_validation", 'Where the network trains and predicts ("auto": a GPU when there is one).',
        type_name='{"auto", "cpu", "cuda"} or torch device string',
    ),
    "random_state": Declared(
        None, ["random_state"],
        "Seed of everything fit draws at random (initial weights, validation split, shuffles, augmentation, the "
        "members' seeds of an ensemble); None: a fresh seed every fit.",
    ),
    "verbose": _TRAIN["verbose"],
}

#: Masked-reconstruction pretraining (PretrainConfig's own fields) and pretrained encoders
#: (tsrep.estimators.dc_transformer); its lr, batch_size and optimiser are the training's.
PRETRAINING = {
    **fields_table(PretrainConfig, "pretrain_epochs", "mask_ratio", "mask_mean_length", "masking"),
    "freeze_encoder": Declared(
        False, ["boolean"], "Fine-tune only the output head (the encoder keeps its pretrained weights)."
    ),
    "pretrained_encoder": Declared(
        None, _PATH,
        "Encoder checkpoint written by ``TSRepEncoder.save`` (tsrep.representation): fit starts from its weights, "
        "standardisation and architecture (the network's parameters are then not used) and only the output head "
        "is new. This is how extra unlabelled series enter: pretrain a TSRepEncoder on them, save it, pass the "
        "path. A path (not a fitted object) survives ``clone``, so it works in cross-validation and tuning.",
        type_name="path or None",
    ),
}

#: Options that trade time for memory or use the hardware, never changing the maths (tsrep.estimators.dc_transformer).
COST = {
    "checkpointing": Declared(
        False, ["boolean"],
        "Per-layer activation checkpointing: backward keeps only each layer's inputs (one carried (B, K, N, N) "
        "attention map per layer instead of about four) and recomputes the rest, for about one more forward "
        "pass; results are the same as without (tests/test_perf_options.py).",
    ),
    "mixed_precision": Declared(
        None, [StrOptions({"bf16"}), None],
        "Run the encoder under torch.autocast with bfloat16 (matrix products and convolutions in bf16; softmax, "
        "norms and the loss in fp32). Fast on GPUs and on CPUs with native bf16; on CPUs without it (AVX2 only) it "
        "is slower than fp32 (benchmarks/perf.py).",
    ),
    "compile": Declared(
        False, ["boolean", dict],
        "torch.compile the encoder (opt-in: the first batches of each new shape pay for the compilation; on a CPU "
        "it needs a C++ compiler). A dict is passed to torch.compile as keyword arguments, e.g. "
        '``{"mode": "max-autotune-no-cudagraphs"}`` or ``{"backend": "aot_eager"}``. The hand-written memory '
        "savers of the attention give way to plain torch operations under compilation, which fuses and plans "
        "memory itself; checkpointed layers run uncompiled.",
    ),
}

#: How a series becomes tokens (tsrep.nn.patching).
FRONT_END = {
    "patch_len": Declared(
        "auto", [StrOptions({"auto"}), positive_int(), None],
        "PatchTST-style front end for long series: tokens of patch_len steps (all channels, projected to d_model) "
        "every patch_stride steps; attention maps shrink by the stride squared. A token is valid when any of its "
        'steps is (tsrep.nn.patching); pooling is over valid tokens. "auto" (tsrep.nn.patching.auto_patch): one '
        "token per step for series shorter than 32 steps, else patches of 2S steps every S = max(4, ceil(T / "
        "max_tokens)) steps; one token per step with pretraining. None: one token per step (the paper's). Used: "
        "``patch_len_``, ``patch_stride_``.",
    ),
    "patch_stride": Declared(
        None, [positive_int(), None],
        "Steps between token starts, at most patch_len (None: patch_len, non-overlapping); needs an integer "
        "patch_len.",
    ),
    "downsample": Declared(
        None, [positive_int(), None],
        "Alternative front end: tokens are the means of windows of `downsample` steps (over valid steps). Neither "
        "front end works with pretraining (its loss is per step).",
    ),
    "conv_stem": Declared(
        "auto", [StrOptions({"auto"}), positive_int(), None],
        "Convolutional stem (tsrep.nn.conv_stem): two convolutions (kernels 7 and 5, padding-aware BatchNorm, "
        "ReLU) with this many channels run on the series at full resolution, and each patch token is the mean of "
        'their features over its window instead of a linear map of its raw steps. "auto": 64 channels for a '
        "classifier whose tokens are patches (``patch_len_`` set) and whose TRAIN has at least 32 cases; none with "
        "per-step tokens (short series, the paper's protocol), for smaller training sets and for a regressor, "
        f"which it made worse {_MEASURED}. None: no stem. Cannot be combined with pretrained_encoder. Used: "
        "``conv_stem_``.",
    ),
    "stem_kind": Declared(
        "conv", [StrOptions(set(STEM_KINDS))],
        'The convolutional stem\'s design, when there is one (``conv_stem_``): "conv", two convolutions (kernels '
        '7 and 5); "inception", the first module of InceptionTime (Ismail Fawaz et al., DMKD 2020): convolutions '
        "of 40, 20 and 10 steps side by side with a max-pool branch, then a 1 x 1 convolution to conv_stem channels "
        "(tsrep.nn.conv_stem). It sees 40 steps where \"conv\" sees 11, at about half the stem's arithmetic.",
    ),
    "stem_skip": Declared(
        False, ["boolean"],
        "The head also reads the mean over valid steps of the stem's features, a path past the transformer like "
        "the global-average heads of ResNet and InceptionTime; no effect without a stem (``conv_stem_`` None).",
    ),
    # "auto", an int, or a tuple / list of ints giving an ensemble's members their budgets in turn
    # (tsrep.estimators.dc_transformer checks them)
    "max_tokens": Declared(
        "auto", [StrOptions({"auto"}), positive_int(), tuple, list],
        'The token budget of ``patch_len="auto"``: patches of 2S steps every S = max(4, ceil(T / max_tokens)) '
        "steps, so at most about max_tokens tokens per series (attention maps are N x N: halving the tokens about "
        'halves the fit time). "auto" (tsrep.nn.patching.resolve_max_tokens): 32 (on the UCR development panel, '
        "five seeds, 32 tokens gained on the sets of 70 cases or more and, with window warping, on the three "
        "smallest; level on the two between). Used: ``max_tokens_``. With n_estimators >= 2 a sequence gives the "
        "members their budgets in turn, e.g. ``(64, 32)``: members then differ in the granularity of their "
        "tokens as well as in their seed (a multi-scale ensemble; measured in the user guide's training recipe "
        "page).",
        type_name='"auto", int, or tuple / list of ints',
    ),
}

#: Following, resuming and continuing long fits (tsrep.training.callbacks, tsrep.training.resume).
LONG_RUNS = {
    "callbacks": Declared(  # a Callback, a list of them or None: tsrep.training.callbacks checks them
        None, "no_validation",
        "Objects with ``on_fit_start(info)``, ``on_epoch_end(epoch, logs)`` and/or ``on_fit_end(logs)`` "
        "(tsrep.training.callbacks): they follow the supervised training epoch by epoch (logs: train_loss, "
        "val_loss and val_score with a validation split, lr, seconds) and stop it when on_epoch_end returns True. "
        "Built-ins: CSVLogger, TensorBoardLogger, MLflowLogger.",
        type_name="Callback, list of Callback or None",
    ),
    "checkpoint_dir": Declared(
        None, _PATH,
        "Directory where the whole training state (weights, optimiser, lr schedule, RNG states, epoch, best "
        "weights; also the pretraining state, with pretrain_epochs > 0) is written atomically after every epoch. "
        "A fit that finds a state there from the same data and settings resumes after its last finished epoch "
        "and ends with the model an uninterrupted fit gives (on a CPU); a state from other data or settings is a "
        "ValueError and is left alone. Seed-ensemble members use ``member-<i>`` subdirectories.",
        type_name="path or None",
    ),
    "warm_start": Declared(
        False, ["boolean"],
        "scikit-learn's convention: a second ``fit`` continues training the network (and keeps the "
        "standardisation and any token front end) of the previous fit, with a fresh optimiser and lr schedule, "
        "instead of starting from new weights. The classes must be those of the previous fit, and parameters "
        "that change the network (everything but the training recipe) must be unchanged: otherwise fit raises "
        "ValueError. Pretraining is not run again.",
    ),
}

#: The baselines' networks (tsrep.estimators.baselines); which backbone names: its registry.
BACKBONE = {
    "backbone": Declared(
        "lstm", [str], "The encoder; backbones registered in tsrep.backbones.baselines are accepted by name too.",
        type_name='{"lstm", "gru", "resnet", "dilated-conv", "transformer"}',
    ),
    "d_model": Declared(
        64, [positive_int()], "Width (paper's grid: 64, 128); ResNet's later blocks are 2 * d_model wide."
    ),
    "n_blocks": Declared(
        3, [positive_int()],
        "Layers (LSTM/GRU), residual blocks (ResNet, dilated conv) or pairs of encoder layers (transformer); "
        "paper's grid: 2..5.",
    ),
    "n_heads": Declared(8, [positive_int()], "Attention heads of the transformer; must divide d_model."),
    "kernel_size": Declared(3, [positive_int()], "Kernel of the dilated convolutions."),
    "dim_feedforward": Declared(None, [positive_int(), None], "Transformer FFN width (None: 4 * d_model)."),
    "dropout": ENCODER["dropout"],
    # None: each backbone's own (tsrep.estimators.baselines.DEFAULT_NORM)
    "norm": Declared(
        None, [StrOptions(set(NORMS)), None],
        "Normalisation of ResNet and the transformer (None: BatchNorm for both, as in ResNet and TST, and as the "
        "EA-DC-Transformer's default); both are padding-aware. LSTM, GRU and the dilated conv have none.",
    ),
}

_BY_TASK = ("classification", "regression")

def _numpydoc_entries(text: str) -> dict:
    """name -> (type, text) of numpydoc entries ("name : type" lines, each followed by its indented text)."""
    entries, name = {}, None
    for line in textwrap.dedent(text).strip("\n").splitlines():
        if line and not line[0].isspace():
            name, _, kind = line.partition(" : ")
            entries[name] = (kind, "")
        else:
            entries[name] = (entries[name][0], f"{entries[name][1]} {line.strip()}".strip())
    return entries


#: The fitted attributes the estimators share: name -> (type, text), either a mapping task -> text where
#: the two tasks' estimators read differently.
FITTED_ATTRIBUTES = {
    **_numpydoc_entries("""
        classes_ : ndarray of shape (n_classes,)
            The class labels.
        n_classes_ : int
            The number of classes.
        module_ : torch.nn.Module
            The trained network.
        n_parameters_ : int
            Trainable parameters of the network.
        history_ : tsrep.training.History
            Per epoch: the training loss and seconds, and the validation loss and score where there is a
            validation split.
        best_epoch_ : int
            Epoch whose weights were kept.
        n_epochs_ : int
            Epochs trained.
        validation_fraction_ : float
            The share of TRAIN held out (validation_fraction="auto" resolved).
        max_epochs_ : int
            The epochs of training, raised where needed to take ``min_steps_`` steps (max_epochs="auto" resolved).
        min_steps_ : int
            The least number of optimiser steps (min_steps="auto" resolved).
        patience_ : int or None
            The epochs without a better validation score before training stops (patience="auto" resolved;
            None: never early).
        augmentation_ : str, sequence of str or None
            The distortions applied to training batches (augmentation="auto" resolved; None: none).
        label_smoothing_ : float
            The label smoothing of the loss (label_smoothing="auto" resolved).
        mixup_ : float
            The mixup alpha of training (mixup="auto" resolved; 0: none).
        precise_bn_ : bool
            Whether BatchNorm's running statistics were recomputed after training (precise_bn="auto" resolved).
        blend_minirocket_ : bool
            Whether the network's answer is blended with a MiniRocket's (blend_minirocket="auto" resolved).
        minirocket_ : object or None
            The fitted MiniRocket (None without the blend): a classifier's with its calibrated ridge classifier,
            whose ``temperature_`` is the softmax temperature fitted on leave-one-out scores; a regressor's with
            its ridge regression, whose ``loo_mse_`` is its leave-one-out squared error in units of the training
            targets' variance.
        network_weight_ : float
            The network's share of the blended answer (the MiniRocket's is the rest). A classifier's: 0.25 below
            32 training cases, else 0.5. A regressor's: inverse to its validation error against the MiniRocket's
            leave-one-out error; 0.5 without a validation split.
        patch_len_ : int or None
            The steps of a token (patch_len="auto" resolved; None: one token per step).
        patch_stride_ : int or None
            The steps between token starts (None: one token per step).
        max_tokens_ : int
            The token budget of patch_len="auto" (max_tokens="auto" resolved; a member's own in an ensemble).
            Resolved whatever patch_len is, it acts only where patch_len="auto" chooses the tokens (not with an
            explicit patch_len, downsample or pretraining); a fit from pretrained_encoder has none.
        conv_stem_ : int or None
            The channels of the convolutional stem used (conv_stem="auto" resolved; None: no stem).
        y_mean_ : float
            The mean of the training targets: predictions are ``outputs * y_std_ + y_mean_``.
        y_std_ : float
            The standard deviation of the training targets (1 when they are constant).
    """),
    "estimators_": (
        dict(zip(_BY_TASK, ("list of classifiers or None", "list of regressors or None"))),
        dict(zip(_BY_TASK, (f"The fitted single-model {kind} when n_estimators > 1, else None."
                            for kind in ("classifiers", "regressors")))),
    ),
    # sktime's adapters (tsrep.sktime)
    "estimator_": (
        dict(zip(_BY_TASK, ("tsrep.EADCTransformerClassifier", "tsrep.EADCTransformerRegressor"))),
        "The fitted aeon estimator (its ``module_``, ``history_`` and ``best_epoch_`` hold the network and the "
        "training history).",
    ),
}


# ----------------------------------------------------------------- the docstrings
_PARAMETERS_HERE = re.compile(r"^([ \t]*)\{parameters\}[ \t]*$", re.MULTILINE)
_ATTRIBUTES_HERE = re.compile(r"^([ \t]*)\{attributes:([^}]*)\}[ \t]*$", re.MULTILINE)
_TEXT_WIDTH = 112
_TYPE_NAMES = {str: "str", dict: "dict", list: "list", tuple: "tuple", type: "class", callable: "callable",
               os.PathLike: "path", "boolean": "bool", "verbose": "bool", "random_state": "int, RandomState or None"}


def fill_doc(doc: str | None, owner: type) -> str | None:
    """`doc` with its placeholder lines written out from the declarations, for the task of `owner`:
    ``{parameters}``, the numpydoc Parameters section of owner's ``__init__`` parameters in order
    (their defaults are the signature's); ``{attributes: name ...}``, the entries of the fitted
    attributes named (:data:`FITTED_ATTRIBUTES`), in an Attributes section. Each takes the
    placeholder's indentation."""
    if not doc:
        return doc
    doc = _PARAMETERS_HERE.sub(lambda found: _parameters_doc(owner, found.group(1)), doc)
    task = getattr(owner, "_task", None)
    return _ATTRIBUTES_HERE.sub(lambda found: _attributes_doc(found.group(2).split(), task, found.group(1)), doc)


def _parameters_doc(owner: type, indent: str) -> str:
    declarations = getattr(owner, "_parameter_declarations", {})
    task = getattr(owner, "_task", None)
    entries = []
    for name, parameter in list(inspect.signature(owner.__init__).parameters.items())[1:]:
        entry = declarations.get(name)
        if not isinstance(entry, Declared):
            raise TypeError(f"{owner.__qualname__}: parameter {name!r} has no documentation (declare it as Declared)")
        shown = _for_task(entry.type_name, task) or describe_constraints(entry.constraints)
        entries.append(_entry(f"{name} : {shown}, default={_literal(parameter.default)}", _for_task(entry.doc, task),
                              indent))
    return "\n".join([f"{indent}Parameters", f"{indent}----------", *entries])


def _attributes_doc(names: list[str], task: str | None, indent: str) -> str:
    unknown = [name for name in names if name not in FITTED_ATTRIBUTES]
    if unknown:
        raise KeyError(f"fitted attributes without a declaration in FITTED_ATTRIBUTES: {unknown}")
    return "\n".join(
        _entry(f"{name} : {_for_task(FITTED_ATTRIBUTES[name][0], task)}", _for_task(FITTED_ATTRIBUTES[name][1], task),
               indent)
        for name in names
    )


def _for_task(text, task: str | None):
    return text[task] if isinstance(text, Mapping) else text


def _entry(head: str, text: str, indent: str) -> str:
    body = textwrap.fill(" ".join(text.split()), width=_TEXT_WIDTH, initial_indent=indent + "    ",
                         subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False)
    return f"{indent}{head}\n{body}" if body else f"{indent}{head}"


def _literal(value) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def describe_constraints(constraints) -> str:
    """The numpydoc type of a parameter from its constraints, e.g. ``"auto" or int >= 0``."""
    if not isinstance(constraints, list):
        raise TypeError(f"constraints {constraints!r} say no type: give the entry a type_name")
    parts = [_describe(constraint) for constraint in constraints]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


def _describe(constraint) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, StrOptions):
        options = [f'"{option}"' for option in sorted(constraint.options)]
        return options[0] if len(options) == 1 else "{" + ", ".join(options) + "}"
    if isinstance(constraint, Interval):
        kind = "int" if constraint.type is Integral else "float"
        low = "[" if constraint.closed in ("left", "both") else "("
        high = "]" if constraint.closed in ("right", "both") else ")"
        if constraint.left is not None and constraint.right is not None:
            return f"{kind} in {low}{constraint.left}, {constraint.right}{high}"
        if constraint.left is not None:
            return f"{kind} {'>=' if low == '[' else '>'} {constraint.left}"
        return f"{kind} {'<=' if high == ']' else '<'} {constraint.right}"
    return _TYPE_NAMES[constraint]


# ----------------------------------------------------------------- the estimators
def defaults_of(*tables: dict) -> dict:
    """name -> default of the tables, in their order (a later table's entry for a name wins)."""
    return {name: entry[0] for table in tables for name, entry in table.items()}


def constraints_of(*tables: dict) -> dict:
    """name -> constraints of the tables (scikit-learn's ``_parameter_constraints``)."""
    return {name: entry[1] for table in tables for name, entry in table.items()}


def _did_you_mean(params: dict, signature: inspect.Signature) -> str:
    """' (did you mean ...?)' for the first keyword that is not a parameter and is close to one, else ''."""
    names = list(signature.parameters)[1:]
    for given in params:
        if given not in signature.parameters:
            close = difflib.get_close_matches(given, names, n=1)
            return f" (did you mean {close[0]!r}?)" if close else ""
    return ""


def stored_parameters_init(cls: type, signature: inspect.Signature):
    """An ``__init__`` for `cls` taking exactly the parameters of `signature` (positionally or by keyword,
    with their defaults) and storing each untouched (scikit-learn's contract: ``get_params`` reads the
    signature, ``clone`` rebuilds from it); it then calls the next ``__init__`` in the method resolution
    order, as a written one would. The explicit signature is what inspect and the documentation show."""

    def __init__(self, *args, **params):
        try:
            bound = signature.bind(self, *args, **params)
        except TypeError as exc:  # inspect's message names neither the class nor what was meant
            raise TypeError(f"{type(self).__name__}: {exc}{_did_you_mean(params, signature)}") from None
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
    (:func:`stored_parameters_init`), their ``_parameter_constraints``, and the docstring placeholders of
    the class and of its subclasses written out (:func:`fill_doc`) when each is created."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
           for name, default in defaults_of(*tables).items()]
    )
    constraints = constraints_of(*tables)
    declarations = {name: entry for table in tables for name, entry in table.items()}

    def decorate(cls):
        cls.__init__ = stored_parameters_init(cls, signature)
        cls._parameter_constraints = constraints
        cls._parameter_declarations = declarations
        _document_with_subclasses(cls)
        return abc.update_abstractmethods(cls)  # aeon's bases declare __init__ abstract

    return decorate


def _document_with_subclasses(cls: type) -> None:
    """Fill cls's docstring now and every subclass's when it is created (the concrete classifier and
    regressor, whose task the texts may depend on, subclass the decorated class)."""
    cls.__doc__ = fill_doc(cls.__dict__.get("__doc__"), cls)
    own = cls.__dict__.get("__init_subclass__")

    def __init_subclass__(sub, **kwargs):
        if own is not None:
            own.__func__(sub, **kwargs)
        else:
            super(cls, sub).__init_subclass__(**kwargs)
        sub.__doc__ = fill_doc(sub.__dict__.get("__doc__"), sub)

    cls.__init_subclass__ = classmethod(__init_subclass__)


def check_declared(est) -> None:
    """Validate est's parameters against ``type(est)._parameter_constraints`` (InvalidParameterError)."""
    check_constraints(type(est)._parameter_constraints, est.get_params(deep=False), type(est).__name__)
