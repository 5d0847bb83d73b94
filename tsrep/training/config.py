"""The training settings, written once: :class:`TrainConfig` (supervised training) and
:class:`PretrainConfig` (masked pretraining), as :class:`tsrep.backbones.config.DCTransformerConfig`
is for the network.

Each field declares its default, the values it accepts (scikit-learn's parameter-validation kinds,
under the metadata key "constraints") and its documentation (key "doc"; "type_name" where the type
shown is not the one read from the constraints). The estimators' parameters of the same names are
derived from these fields (tsrep.estimators._parameters), defaults, constraints and documentation
alike, so the defaults here are those a user of the estimators meets; an estimator with other
defaults (TSRepEncoder) states its own once, where it declares its parameters. An estimator
parameter that may be "auto" is declared there; the field here holds the value "auto" resolved to.

A config is valid by construction: every field is checked against its constraint and a bad value is
an InvalidParameterError (a ValueError) naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from tsrep.backbones.config import check_constraints, non_negative_int, positive_int, unit_interval
from tsrep.training.masking import MASKINGS
from tsrep.training.schedules import LR_SCHEDULES

__all__ = ["PretrainConfig", "TrainConfig", "parameter_name", "setting"]


def setting(default, *constraints, doc: str, type_name: str | None = None, parameter: str | None = None):
    """A config field: its default, the constraints its values meet (scikit-learn's kinds), its
    documentation; `type_name`, the type the documentation shows when the constraints do not say it
    well; `parameter`, the estimators' name for it when that is not the field's."""
    metadata = {"constraints": list(constraints), "doc": doc, "type_name": type_name, "parameter": parameter}
    return field(default=default, metadata=metadata)


def _positive_real() -> Interval:
    return Interval(Real, 0, None, closed="neither")


def _lr(doc: str):
    return setting(1e-3, _positive_real(), doc=doc)


def _batch_size(doc: str):
    # A batch of one case would leave BatchNorm without statistics and data parallelism without a case
    # per process: such batches are skipped (tsrep.training.loop.shuffled_batches), so 1 would train nothing.
    return setting(64, Interval(Integral, 2, None, closed="left"), doc=doc)


def _optimizer(doc: str):
    # Which names and classes: tsrep.training.optim, checked where the settings are given (the estimators' fit).
    return setting("adamw", str, type, doc=doc, type_name="str or torch.optim.Optimizer subclass")


_OPTIMIZER_KWARGS = "Keyword arguments of the optimiser besides the learning rate (and weight decay)."
_GRAD_CLIP = "Largest norm of the gradient (None: no clipping)."


class _Settings:
    """What the two configs share: validation at construction, and construction from an estimator's
    parameters."""

    def __post_init__(self):
        constraints = {f.name: f.metadata["constraints"] for f in fields(self)}
        check_constraints(constraints, {f.name: getattr(self, f.name) for f in fields(self)}, type(self).__name__)

    @classmethod
    def from_params(cls, params: Mapping, **resolved):
        """The settings of an estimator: every field from `params` (its ``get_params()``), under the
        field's parameter name (``pretrain_epochs`` for PretrainConfig.epochs), except the fields given
        in `resolved` by field name: the values an estimator's "auto" parameters resolved to."""
        missing = [parameter_name(f) for f in fields(cls) if f.name not in resolved and parameter_name(f) not in params]
        if missing:
            raise KeyError(f"{cls.__name__}.from_params: params lacks {', '.join(missing)}")
        values = {f.name: params[parameter_name(f)] for f in fields(cls) if f.name not in resolved}
        return cls(**values, **resolved)


def parameter_name(settings_field) -> str:
    """The estimators' name of a config field."""
    return settings_field.metadata.get("parameter") or settings_field.name


@dataclass
class TrainConfig(_Settings):
    """Settings of :func:`tsrep.training.train_supervised`: those of the estimators' parameters of the
    same names, with their defaults; min_steps and mixup hold what the estimators' "auto" resolved to.

    The number of epochs is ``max_epochs``, raised where needed so that at least ``min_steps``
    optimiser steps are taken; early stopping on a validation split may end it sooner.
    """

    lr: float = _lr("Peak learning rate (the schedule's maximum).")
    batch_size: int = _batch_size("Cases per optimiser step.")
    max_epochs: int = setting(
        100, positive_int(),
        doc="Epochs of training, raised where needed so that at least ``min_steps`` optimiser steps are taken; "
            "early stopping on a validation split may end training sooner.",
    )
    # The estimators' min_steps="auto" is resolved before training (their min_steps_): this holds the number.
    min_steps: int = setting(
        0, non_negative_int(),
        doc="Least number of optimiser steps: a 30-case data set (one batch per epoch) gets hundreds of steps, "
            "not max_epochs; 0: exactly max_epochs epochs.",
    )
    patience: int | None = setting(
        20, positive_int(), None,
        doc="Epochs without validation improvement before stopping (only with a validation split; None: never).",
    )
    optimizer: object = _optimizer(
        "Any torch.optim or torch-optimizer name, or an optimiser class; \"radam\" uses the paper's betas "
        "(0.9, 0.99)."
    )
    optimizer_kwargs: dict | None = setting(None, dict, None, doc=_OPTIMIZER_KWARGS)
    weight_decay: float = setting(
        0.01, Interval(Real, 0, None, closed="left"),
        doc="Decoupled weight decay (Loshchilov and Hutter, \"Decoupled Weight Decay Regularization\", ICLR 2019) "
            "on weight matrices and kernels; biases and norm scales get none.",
    )
    lr_schedule: object = setting(
        "onecycle", StrOptions(set(LR_SCHEDULES)), callable,
        doc="Per-step one-cycle (warm-up over 25 % of the steps, cosine annealing; Smith and Topin, "
            "\"Super-Convergence: Very Fast Training of Neural Networks Using Large Learning Rates\", 2019) or "
            "cosine (5 % warm-up) schedules, halving on a plateau of the monitored loss, or constant "
            "(tsrep.training.schedules). A callable ``optimizer -> scheduler`` gives any torch scheduler, stepped "
            "after every epoch, e.g. ``functools.partial(torch.optim.lr_scheduler.StepLR, step_size=10)``; a "
            "ReduceLROnPlateau gets the monitored loss. Model files store schedules by name only.",
    )
    # The estimators' mixup="auto" is resolved before training (their mixup_): this holds the alpha.
    mixup: float = setting(
        0.0, Interval(Real, 0, None, closed="left"),
        doc="Mixup (Zhang et al., \"mixup: Beyond Empirical Risk Minimization\", ICLR 2018): every training batch "
            "is mixed with a shuffled copy of itself by a weight drawn from Beta(mixup, mixup), and the loss alike "
            "(tsrep.training.mixup); 0: none.",
    )
    grad_clip: float | None = setting(4.0, _positive_real(), None, doc=_GRAD_CLIP)
    verbose: bool = setting(
        False, "verbose", doc="Show a progress bar with training loss and validation score per epoch."
    )


@dataclass
class PretrainConfig(_Settings):
    """Settings of :func:`tsrep.training.pretrain.pretrain_masked`: those of the estimators' parameters
    of the same names (``pretrain_epochs`` for ``epochs``), with their defaults."""

    epochs: int = setting(
        0, non_negative_int(), parameter="pretrain_epochs",
        doc="Epochs of masked-reconstruction pretraining (Wang et al., \"Convolution-enhanced Evolving Attention "
            "Networks\", IEEE TPAMI 2023, Sec. 3.3.2) on all training series (validation part included: no labels "
            "are used) before fine-tuning; 0: none.",
    )
    mask_ratio: float = setting(0.15, unit_interval("neither"), doc="Share of the values masked in pretraining.")
    mask_mean_length: float = setting(
        3, Interval(Real, 1, None, closed="left"),
        doc="Mean length of the masked spans (TST geometric masking, per variable).",
    )
    masking: str = setting(
        "geometric", StrOptions(set(MASKINGS)),
        doc="TST's geometric spans per variable (Zerveas et al., \"A Transformer-based Framework for Multivariate "
            "Time Series Representation Learning\", KDD 2021), or every value masked independently.",
    )
    lr: float = _lr("Learning rate of pretraining (constant).")
    batch_size: int = _batch_size("Series per optimiser step of pretraining.")
    optimizer: object = _optimizer("The optimiser of pretraining: any torch.optim or torch-optimizer name, or a class.")
    optimizer_kwargs: dict | None = setting(None, dict, None, doc=_OPTIMIZER_KWARGS)
    grad_clip: float | None = setting(4.0, _positive_real(), None, doc=_GRAD_CLIP)
    verbose: bool = setting(False, "verbose", doc="Show the progress of pretraining (reconstruction loss per epoch).")

    def __post_init__(self):
        super().__post_init__()
        # Plain numbers, as the settings are recorded as JSON in a resumable state (settings()): an
        # estimator's numpy integers, or a mean length of 3, read alike there whatever form they came in.
        for name, kind in (("epochs", int), ("batch_size", int), ("mask_ratio", float), ("mask_mean_length", float)):
            setattr(self, name, kind(getattr(self, name)))

    @classmethod
    def from_estimator(cls, estimator) -> PretrainConfig:
        """The pretraining settings of an estimator with masked pretraining (TSRepEncoder, the
        EA-DC-Transformer estimators): :meth:`from_params` of its parameters."""
        return cls.from_params(estimator.get_params(deep=False))

    def settings(self) -> dict:
        """What must agree for a checkpoint to be resumed (the epoch budget may grow)."""
        d = asdict(self)
        d.pop("epochs")
        d.pop("verbose")
        return d
