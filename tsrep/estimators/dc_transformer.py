"""The EA-DC-Transformer estimators: EADCTransformerClassifier and EADCTransformerRegressor.

They share :class:`EADCTransformerBase`, which adds to the shared base (tsrep.estimators._base) what the
EA-DC-Transformer has beyond one token per step and random initial weights: the token front end
(patches, a convolutional stem, downsampling; tsrep.nn.patching), a pretrained encoder or masked
pretraining (Wang et al., "Convolution-enhanced Evolving Attention Networks", TPAMI 2023, Sec. 3.3.2),
and the cost options (activation checkpointing, bf16 autocast, torch.compile), which change nothing
but float rounding. The task (labels or targets, loss, predictions) comes from tsrep.estimators._tasks.
"""

from __future__ import annotations

import inspect
import numbers
import types

import numpy as np
import torch
from aeon.classification.base import BaseClassifier
from aeon.regression.base import BaseRegressor
from torch import nn

from tsrep.backbones import DCTransformerConfig, DCTransformerEncoder, SeriesModel
from tsrep.backbones.config import split_width
from tsrep.estimators._base import DeepSeriesEstimator
from tsrep.estimators._checks import resolve_device
from tsrep.estimators._memory import check_training_memory
from tsrep.estimators._parameters import (
    COST, ENCODER, FRONT_END, LONG_RUNS, PREPROCESSING, PRETRAINING, TRAINING, keyword_parameters,
)
from tsrep.estimators._tasks import SeriesClassifierMixin, SeriesRegressorMixin
from tsrep.nn.attention_kinds import attention_kind
from tsrep.nn.interacting import check_interacting_heads
from tsrep.nn.patching import AUTO, front_end, n_tokens, resolve_conv_stem, resolve_front_end, resolve_max_tokens
from tsrep.backbones.checkpoint import encoder_from_config, load_encoder
from tsrep.training.masking import ReconstructionModel
from tsrep.training.pretrain import PretrainConfig, pretrain_masked

__all__ = ["EADCTransformerBase", "EADCTransformerClassifier", "EADCTransformerRegressor"]

MIXED_PRECISIONS = {None: None, "bf16": torch.bfloat16}
#: Estimator parameters that a pretrained encoder's checkpoint fixes (its configuration holds them).
CHECKPOINT_FIXED = (*DCTransformerConfig.names(), "scaling")


@keyword_parameters(ENCODER, PREPROCESSING, TRAINING, PRETRAINING, COST, FRONT_END, LONG_RUNS)
class EADCTransformerBase(DeepSeriesEstimator):
    """The parameters, checks and network EA-DC-Transformer classifiers and regressors share.

    Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract); the
    network's are the fields of DCTransformerConfig (tsrep.backbones.config), the others are declared
    in tsrep.estimators._parameters, and ``__init__`` is generated from both. They are documented on
    the estimators: EADCTransformerClassifier, EADCTransformerRegressor.
    """

    _task: str  # "classification" or "regression"

    # ----------------------------------------------------------------- validation
    def _check_combinations(self) -> None:
        super()._check_combinations()
        DCTransformerConfig.check_combinations(self.get_params(deep=False))
        if self.freeze_encoder and self.pretrained_encoder is None and self.pretrain_epochs == 0:
            raise ValueError(
                "freeze_encoder=True would train only the head on a random encoder; give pretrain_epochs > 0 "
                "or pretrained_encoder"
            )
        self._check_front_end()
        compile_options(self.compile)

    def _check_front_end(self) -> None:
        """Raise ValueError naming the token front-end options that cannot go together (or with pretraining)."""
        if self.conv_stem not in (AUTO, None) and self.pretrained_encoder is not None:
            raise ValueError(
                f"conv_stem={self.conv_stem!r} cannot be combined with pretrained_encoder: the checkpoint fixes the "
                "encoder's input (no stem); leave conv_stem='auto' or None"
            )
        check_max_tokens(self.max_tokens, self.n_estimators)
        fixed_tokens = self.patch_len != AUTO or self.downsample is not None or self.pretrain_epochs
        if isinstance(self.max_tokens, (tuple, list)) and fixed_tokens:
            # Budgets only act through patch_len="auto"; members would silently differ in seed alone.
            raise ValueError(
                f"max_tokens={self.max_tokens!r} sets the token budgets of patch_len='auto', but the tokens here "
                f"are {'per step (pretrain_epochs)' if self.pretrain_epochs else 'fixed by patch_len / downsample'}; "
                "leave patch_len='auto', downsample=None and pretrain_epochs=0, or give max_tokens one int"
            )
        if self.patch_len == AUTO:
            if self.patch_stride is not None:
                raise ValueError(
                    f"patch_stride={self.patch_stride!r} needs an explicit patch_len; patch_len='auto' chooses both"
                )
            return  # "auto" gives one token per step with pretraining (tsrep.nn.patching.resolve_front_end)
        if front_end(self.patch_len, self.patch_stride, self.downsample) is None:
            return
        option = "downsample" if self.downsample is not None else "patch_len"
        if self.pretrain_epochs:
            raise ValueError(
                f"{option}={getattr(self, option)!r} cannot be combined with pretrain_epochs={self.pretrain_epochs!r}: "
                "masked pretraining reconstructs every step, the front end makes tokens of several steps"
            )
        if self.pretrained_encoder is not None:
            raise ValueError(
                f"{option}={getattr(self, option)!r} cannot be combined with pretrained_encoder: the checkpoint "
                "fixes the encoder's input (one token per step)"
            )

    # ----------------------------------------------------------------- the base's hooks
    def _fit_front_end(self, cases: list) -> None:
        if self.pretrained_encoder is not None:
            # Keep the checkpoint's standardisation and positions: its encoder was trained on them.
            self._start_from_checkpoint(int(cases[0].shape[0]))
            return
        super()._fit_front_end(cases)  # standardisation and lengths
        # patch_len="auto" and max_tokens="auto": the token rules of tsrep.nn.patching, fixed here on the
        # training data.
        self.max_tokens_ = resolve_max_tokens(member_max_tokens(self.max_tokens, 0), self._task)
        self.patch_len_, self.patch_stride_ = resolve_front_end(
            self.patch_len, self.patch_stride, self.downsample, self.n_channels_, self.max_len_,
            per_step_only=bool(self.pretrain_epochs), max_tokens=self.max_tokens_,
        )
        # conv_stem="auto": a classifier's patch tokens come from a stem (tsrep.nn.patching.resolve_conv_stem).
        self.conv_stem_ = resolve_conv_stem(self.conv_stem, self.patch_len_, self._task, len(cases))

    def _member_params(self, index: int | None) -> dict:
        # max_tokens=(64, 32, ...): member i takes the budgets in turn (index None: the most tokens, the
        # member that needs the most memory).
        if not isinstance(self.max_tokens, (tuple, list)):
            return {}
        return {"max_tokens": max(self.max_tokens) if index is None else member_max_tokens(self.max_tokens, index)}

    def _check_training_data(self, data) -> None:
        if attention_kind(self.attention).heads_interact:  # Eq. 13: say so, never clamp n_heads
            # n counts the tokens attention sees: one per stride of a patch or downsample front end
            # (patch_stride None: the patch length); a checkpoint's encoder has one token per step.
            from_checkpoint = self.encoder_config_ is not None
            stride = 1 if from_checkpoint else self.patch_stride_ or self.patch_len_ or self.downsample or 1
            mean_tokens = float(np.mean([n_tokens(int(length), stride) for length in data.valid.sum(1)]))
            check_interacting_heads(self.n_heads, split_width(self.d_model, self.p)[0], mean_tokens)

    def _check_memory(self, n_cases: int, concurrent: int) -> None:
        # The fitted preprocessing gives the tokens (max_len_, patch_len_ / patch_stride_, or encoder_config_
        # of a pretrained encoder: one token per step, its architecture).
        config = self.encoder_config_
        # Patches cannot be combined with pretraining or a pretrained encoder (one token per step).
        options = ("checkpointing", "batch_size") if config is not None or self.pretrain_epochs else (
            "patch_len", "checkpointing", "batch_size")
        arch = {k: config[k] if config is not None else getattr(self, k)
                for k in ("d_model", "n_blocks", "n_heads", "p", "kernel_size", "dim_feedforward", "attention")}
        if config is not None:
            stride, in_features, stem = None, int(config["in_channels"]), 0
        else:
            stride = self.patch_stride_ or self.patch_len_ or self.downsample
            stem = self.conv_stem_ or 0  # its tokens are window means of the stem's features
            in_features = stem or self.n_channels_ * (self.patch_len_ or 1)
        check_training_memory(
            max_len=self.max_len_, stride=stride, n_cases=n_cases, batch_size=self.batch_size, in_features=in_features,
            checkpointing=bool(self.checkpointing), device=resolve_device(self.device), options=options,
            concurrent=concurrent, stem_channels=stem, stem_kind=self.stem_kind, **arch,
        )

    # ----------------------------------------------------------------- pretrained encoder and masked pretraining
    def _start_from_checkpoint(self, n_channels: int) -> None:
        """Set standardizer_, max_len_, n_channels_, encoder_config_ from pretrained_encoder (weights kept aside)."""
        config, encoder, standardizer = load_encoder(self.pretrained_encoder, n_channels)
        self._check_architecture_agrees(config)
        self.encoder_config_ = config
        self.conv_stem_ = None  # the checkpoint's encoder takes the steps themselves
        self.standardizer_ = standardizer
        self.max_len_ = int(config["max_len"])
        self.n_channels_ = int(config["in_channels"])
        self._checkpoint_weights = encoder.state_dict()

    def _check_architecture_agrees(self, config: dict) -> None:
        """ValueError naming a parameter set explicitly (away from its default) that the checkpoint contradicts.

        With pretrained_encoder the checkpoint fixes the encoder; a parameter left at its default takes
        the checkpoint's value silently, but one the user chose would otherwise be ignored while
        get_params still reports it.
        """
        defaults = {name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()}
        for name in CHECKPOINT_FIXED:
            if name not in defaults:
                continue
            value, default, stored = getattr(self, name), defaults[name], config.get(name, defaults[name])
            if value != default and value != stored:
                raise ValueError(
                    f"{name}={value!r} contradicts pretrained_encoder {str(self.pretrained_encoder)!r}, whose "
                    f"encoder has {name}={stored!r}: the checkpoint fixes the encoder's architecture. Leave {name} "
                    f"at its default ({default!r}) or set it to {stored!r}"
                )

    def _pretrain(self, model, data, device, generator, checkpoint_path, settings) -> list:
        """Load the checkpoint's weights into model.encoder, pretrain it for pretrain_epochs (masked
        reconstruction; checkpoint_path, settings: its resumable state), freeze it if asked."""
        weights = self.__dict__.pop("_checkpoint_weights", None)
        if weights is not None:
            model.encoder.load_state_dict(weights)
        losses: list[float] = []
        if self.pretrain_epochs > 0:
            recon = ReconstructionModel(model.encoder, self.n_channels_).to(device)
            losses = pretrain_masked(
                recon, data, PretrainConfig.from_estimator(self), device, generator,
                checkpoint=checkpoint_path, settings=settings,
            )
        if self.freeze_encoder:
            freeze(model.encoder)
        return losses

    # ----------------------------------------------------------------- model
    def _build_model(self, n_outputs: int) -> SeriesModel:
        cost = {"checkpointing": bool(self.checkpointing), "autocast_dtype": MIXED_PRECISIONS[self.mixed_precision]}
        if self.encoder_config_ is not None:  # the architecture of a pretrained checkpoint
            encoder = encoder_from_config(self.encoder_config_, **cost)
        else:
            encoder = DCTransformerEncoder(
                self.n_channels_, self.max_len_, DCTransformerConfig.from_params(self.get_params(deep=False)),
                patch_len=self.patch_len_, patch_stride=self.patch_stride_, downsample=self.downsample,
                conv_stem=self.conv_stem_, stem_kind=self.stem_kind, **cost,
            )
        options = compile_options(self.compile)
        if options is not None:
            # In place: the state_dict keys stay those of the plain module (pickling, checkpoints).
            encoder.compile(**options)
        return SeriesModel(
            encoder, n_outputs, self._task, self.pooling, self.dropout, self._augmentation_used(),
            stem_skip=self.stem_skip,
        )

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 2, "min_steps": 0, "batch_size": 8,
                "random_state": 0}


class EADCTransformerClassifier(EADCTransformerBase, SeriesClassifierMixin, BaseClassifier):
    """Time series classifier: EA-DC-Transformer, mean-pooled, MLP head, cross-entropy (Wang et al., TPAMI 2023, Eq. 10).

    Takes a 3-D array (n_cases, n_channels, n_timepoints), a 2-D array (univariate) or a list of
    2-D arrays (unequal length, handled with padding masks). Missing values are interpolated; in a
    3-D array, trailing steps where every channel is NaN are padding (the series ends before them).
    Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract).

    {parameters}

    Attributes
    ----------
    {attributes: classes_ n_classes_ module_ n_parameters_ history_ best_epoch_ n_epochs_ validation_fraction_
    max_epochs_ min_steps_ patience_ augmentation_ label_smoothing_ mixup_ precise_bn_ blend_minirocket_ minirocket_
    network_weight_
    patch_len_ patch_stride_ max_tokens_ conv_stem_ estimators_}

    See Also
    --------
    EADCTransformerRegressor : The same network with a linear head and MSE.
    BackboneClassifier : The same training harness with a baseline encoder (LSTM, GRU, ResNet, ...).
    tsrep.sktime.EADCTransformerClassifier : The sktime adapter of this estimator.

    Examples
    --------
    >>> from aeon.datasets import load_basic_motions
    >>> from tsrep import EADCTransformerClassifier
    >>> X, y = load_basic_motions(split="train")
    >>> X.shape  # (n_cases, n_channels, n_timepoints)
    (40, 6, 100)
    >>> clf = EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, max_epochs=2,
    ...                                 min_steps=0, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.predict(X[:4]).shape, clf.predict_proba(X[:4]).shape
    ((4,), (4, 4))

    Series of unequal length are a list of (n_channels, n_timepoints_i) arrays:

    >>> unequal = [x[:, : 60 + i] for i, x in enumerate(X[:5])]
    >>> clf.predict(unequal).shape
    (5,)
    """


class EADCTransformerRegressor(EADCTransformerBase, SeriesRegressorMixin, BaseRegressor):
    """Time series regressor: EA-DC-Transformer, mean-pooled, linear head, MSE (Wang et al., TPAMI 2023, Eq. 9).

    Targets are standardised with the training mean and std; predictions are returned in the
    original units. Input formats as EADCTransformerClassifier.
    Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract).

    {parameters}

    Attributes
    ----------
    {attributes: module_ n_parameters_ history_ best_epoch_ n_epochs_ validation_fraction_ max_epochs_ min_steps_
    patience_ mixup_ precise_bn_ augmentation_ y_mean_ y_std_ blend_minirocket_ minirocket_ network_weight_ patch_len_
    patch_stride_ max_tokens_ conv_stem_ estimators_}

    See Also
    --------
    EADCTransformerClassifier : The same network with an MLP head and cross-entropy.
    BackboneRegressor : The same training harness with a baseline encoder (LSTM, GRU, ResNet, ...).
    tsrep.sktime.EADCTransformerRegressor : The sktime adapter of this estimator.

    Examples
    --------
    >>> from aeon.datasets import load_covid_3month
    >>> from tsrep import EADCTransformerRegressor
    >>> X, y = load_covid_3month(split="train")
    >>> X.shape
    (140, 1, 84)
    >>> reg = EADCTransformerRegressor(d_model=16, n_heads=2, n_blocks=1, max_epochs=2, min_steps=0,
    ...                                scaling="symlog", random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """


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


def freeze(module: nn.Module) -> None:
    """No gradient to `module`, and it stays in eval mode (no dropout) when its parent trains: a fixed feature map."""
    for param in module.parameters():
        param.requires_grad_(False)
    module.train = types.MethodType(lambda self, mode=True: nn.Module.train(self, False), module)
    module.eval()
