"""Classifier and regressor around any backbone of tsrep.backbones: the baselines of the tables of Wang
et al., "Convolution-enhanced Evolving Attention Networks" (IEEE TPAMI 2023).

``BackboneClassifier(backbone="lstm")`` trains the named encoder on the harness every tsrep estimator
shares (tsrep.estimators._harness: input handling, pooling, heads, training recipe, seeding, saving),
exactly as the EA-DC-Transformer estimators are trained: only the parameters, their check and
``_build_model`` differ. The
EA-DC-Transformer, the DC-Transformer and the ablations are EADCTransformerClassifier/Regressor
with fixed alpha, beta, attn_kernel_size (see tsrep.models).

Backbones (Wang et al. 2023, Sec. 4.1):

- "lstm", "gru": n_blocks stacked torch LSTM/GRU layers of width d_model (tsrep.backbones.recurrent);
- "resnet": Wang et al. 2017, n_blocks residual blocks of kernels 8/5/3, widths d, 2d, 2d, ...
  (tsrep.backbones.resnet; norm defaults to padding-aware BatchNorm as in the original);
- "dilated-conv": the T-Loss causal CNN (Franceschi et al. 2019), n_blocks blocks of two causal
  convolutions with dilation 2^i (tsrep.backbones.causal_cnn);
- "transformer": TST (Zerveas et al. 2021) with 2 * n_blocks encoder layers, so that a "block"
  means two layers as in an EA-DC-Transformer block (tsrep.backbones.transformer).
"""

from __future__ import annotations

import torch
from aeon.classification.base import BaseClassifier
from aeon.regression.base import BaseRegressor

from tsrep.backbones import SeriesModel
from tsrep.backbones.baselines import baseline_builder, baseline_names
from tsrep.estimators._common import resolve_device
from tsrep.estimators._memory import check_backbone_memory
from tsrep.estimators._parameters import BACKBONE, LONG_RUNS, PREPROCESSING, TRAINING, keyword_parameters
from tsrep.estimators._harness import DeepSeriesEstimator
from tsrep.estimators.classifier import SeriesClassifierMixin
from tsrep.estimators.regressor import SeriesRegressorMixin

BACKBONES = baseline_names()
# Each backbone's norm when norm=None: BatchNorm (padding-aware) as in ResNet and TST, and as the
# EA-DC-Transformer's measured default (LayerNorm erases the amplitude of univariate inputs).
DEFAULT_NORM = {"resnet": "batch", "transformer": "batch"}


def build_encoder(backbone, in_channels, max_len, d_model, n_blocks, n_heads, kernel_size, dim_feedforward,
                  dropout, norm):
    """The encoder named `backbone`: forward(x (B, T, C), valid (B, T)) -> (B, T, encoder.d_model)."""
    build = baseline_builder(backbone)  # registered in tsrep.backbones.baselines
    norm = norm or DEFAULT_NORM.get(backbone, "batch")
    return build(in_channels, max_len, d_model=d_model, n_blocks=n_blocks, n_heads=n_heads, kernel_size=kernel_size,
                 dim_feedforward=dim_feedforward, dropout=dropout, norm=norm)


@keyword_parameters(BACKBONE, PREPROCESSING, TRAINING, LONG_RUNS)
class _BackboneMixin(DeepSeriesEstimator):
    """The parameters, checks and encoders the baseline classifier and regressor share.

    Parameters are documented on the estimators: BackboneClassifier, BackboneRegressor.
    """


    def _check_combinations(self) -> None:
        super()._check_combinations()
        names = baseline_names()  # read now: a baseline registered after import is accepted too
        if self.backbone not in names:
            import difflib

            close = difflib.get_close_matches(str(self.backbone), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"backbone must be one of {names}, got {self.backbone!r}{hint}")
        if self.backbone == "transformer" and self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads!r} must divide d_model={self.d_model}")

    def _check_memory(self, n_cases: int, concurrent: int) -> None:
        # Built on the meta device (shapes without storage), the network is counted without allocating
        # it: a d_model that asks for tens of gigabytes of weights is refused here, not in the allocator.
        n_outputs = max(int(getattr(self, "n_classes_", 1)), 1)  # -1 (unknown) in an ensemble's probe
        try:
            with torch.device("meta"):
                model = self._build_model(n_outputs)
        except (RuntimeError, NotImplementedError):  # a registered backbone that needs real storage: no estimate
            return
        check_backbone_memory(
            backbone=self.backbone, n_parameters=sum(p.numel() for p in model.parameters()), max_len=self.max_len_,
            n_cases=n_cases, batch_size=self.batch_size, d_model=self.d_model, n_blocks=self.n_blocks,
            n_heads=self.n_heads, kernel_size=self.kernel_size, dim_feedforward=self.dim_feedforward,
            device=resolve_device(self.device), concurrent=concurrent,
        )

    def _build_model(self, n_outputs: int) -> SeriesModel:
        encoder = build_encoder(
            self.backbone, self.n_channels_, self.max_len_, self.d_model, self.n_blocks, self.n_heads,
            self.kernel_size, self.dim_feedforward, self.dropout, self.norm,
        )
        return SeriesModel(encoder, n_outputs, self._task, self.pooling, self.dropout, self._augmentation_used())

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {"backbone": "gru", "d_model": 8, "n_blocks": 1, "max_epochs": 2, "min_steps": 0, "batch_size": 8,
                "random_state": 0}


class BackboneClassifier(_BackboneMixin, SeriesClassifierMixin, BaseClassifier):
    """Time series classifier with a baseline backbone (LSTM, GRU, ResNet, dilated conv, TST), mean-pooled,
    MLP head, cross-entropy: the EA-DC-Transformer's training harness with another encoder.

    The training recipe parameters (pooling to warm_start) are those of EADCTransformerClassifier: the
    baselines train with the same recipe.

    Parameters
    ----------
    backbone : {"lstm", "gru", "resnet", "dilated-conv", "transformer"}, default="lstm"
    d_model : int, default=64
        Width (paper's grid: 64, 128); ResNet's later blocks are 2 * d_model wide.
    n_blocks : int, default=3
        Layers (LSTM/GRU), residual blocks (ResNet, dilated conv) or pairs of encoder layers
        (transformer); paper's grid: 2..5.
    n_heads : int, default=8
        Attention heads of the transformer; must divide d_model.
    kernel_size : int, default=3
        Kernel of the dilated convolutions.
    dim_feedforward : int or None, default=None
        Transformer FFN width (None: 4 * d_model).
    dropout : float, default=0.1
    pooling : {"mean", "max", "flatten"}, default="mean"
        Over valid steps; "flatten" needs series no longer than the longest training series.
    norm : {None, "layer", "batch"}, default=None
        Normalisation of ResNet and the transformer (None: BatchNorm for both, as in ResNet and TST,
        and as the EA-DC-Transformer's default); both are padding-aware. LSTM, GRU and the dilated
        conv have none.
    scaling : {"standard", "symlog"}, default="standard"
        Per-channel standardisation fitted on the training data; "symlog" first maps x to
        sign(x) * log(1 + abs(x)), for heavy-tailed inputs such as counts.
    lr : float, default=1e-3
        Peak learning rate (the schedule's maximum).
    batch_size : int >= 2, default=64
    max_epochs : int, default=100
        Epochs of training, raised where needed so that at least ``min_steps`` optimiser steps are
        taken; early stopping on a validation split may end training sooner.
    min_steps : "auto" or int >= 0, default="auto"
        Least number of optimiser steps: a 30-case data set (one batch per epoch) gets hundreds of
        steps, not max_epochs. "auto": 800, and for a classifier at least 60 per class, because the
        steps a problem needs grow with its classes (measured in the user guide's training recipe
        page). 0: exactly max_epochs epochs. The value used is ``min_steps_``.
    validation_fraction : "auto" or float in [0, 1), default="auto"
        Part of the training data held out to select the best epoch and stop early. "auto" holds
        out 20 % only when that is at least 100 cases (TRAIN >= 496) and otherwise trains the whole
        budget on all of TRAIN: a small split picks epochs by noise (tsrep.estimators._recipe).
        0: never. The value used is ``validation_fraction_``.
    patience : int or None, default=20
        Epochs without validation improvement before stopping (only with a validation split).
    optimizer : str or torch.optim.Optimizer subclass, default="adamw"
        Any torch.optim or torch-optimizer name; "radam" uses the paper's betas (0.9, 0.99).
    optimizer_kwargs : dict or None, default=None
    weight_decay : float >= 0, default=0.01
        Decoupled weight decay (Loshchilov and Hutter, "Decoupled Weight Decay Regularization",
        ICLR 2019) on weight matrices and kernels; biases and norm scales get none.
    lr_schedule : {"onecycle", "cosine", "plateau", "none"} or callable, default="onecycle"
        Per-step one-cycle (warm-up over 25 % of the steps, cosine annealing; Smith and Topin 2019)
        or cosine (5 % warm-up) schedules, halving on a plateau of the monitored loss, or constant
        (tsrep.training.schedules). A callable ``optimizer -> scheduler`` gives any torch scheduler,
        stepped after every epoch, e.g.
        ``functools.partial(torch.optim.lr_scheduler.StepLR, step_size=10)``; a ReduceLROnPlateau
        gets the monitored loss. Model files store schedules by name only.
    label_smoothing : "auto" or float in [0, 1), default="auto"
        Cross-entropy label smoothing (Szegedy et al., "Rethinking the Inception Architecture for
        Computer Vision", CVPR 2016): the target puts 1 - s on the true class and s spread evenly
        over all classes. "auto": 0.1 for a classifier (measured in the user guide's training recipe
        page); a regressor has none ("auto" or 0 only). The value used is ``label_smoothing_``.
    mixup : "auto" or float >= 0, default="auto"
        Mixup (Zhang et al., "mixup: Beyond Empirical Risk Minimization", ICLR 2018): every training
        batch is mixed with a shuffled copy of itself by a weight drawn from Beta(mixup, mixup), and
        the loss alike (tsrep.training.mixup); 0: none. "auto": 0.2 for a classifier (measured in the
        user guide's training recipe page), none for a regressor. The value used is ``mixup_``.
    class_weight : None, "balanced" or dict, default=None
        Loss weight per class: "balanced" is n_cases / (n_classes * class count) (scikit-learn's
        rule); a dict maps labels to weights (others weigh 1). Multiplies ``sample_weight`` of
        ``fit``; the product is scaled to mean 1 over TRAIN. Classification only.
    augmentation : "auto", None, str or sequence of str, default="auto"
        Random label-preserving distortions of every training batch (tsrep.nn.augmentation): "window_warp"
        (a random 10 % window played at half or twice its speed), "window_slice" (a random 90 % window
        stretched back to full length), "scaling" (x N(1, 0.1^2) per case and channel), "jitter"
        (N(0, 0.05^2) noise per step), named joined by "+" or as a sequence and applied in that order; never
        at prediction. "auto": all four when TRAIN has fewer than 100 cases (scaling and jitter alone when a
        training series is shorter than 32 steps), none otherwise (used: ``augmentation_``). None: train on
        the series as given (the paper's protocol). Small training sets of long series gain most; larger
        ones underfit within the same step budget (measured in the user guide's training recipe page).
    grad_clip : float or None, default=4.0
    n_estimators : int >= 1, default=1
        Seed ensemble: members identical but for their seed (drawn from random_state), class
        probabilities (or predictions) averaged; fitted members in ``estimators_``.
    n_jobs : int, default=1
        Ensemble members fitted in parallel by joblib processes (-1: all cores).
    device : {"auto", "cpu", "cuda"} or torch device string, default="auto"
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Show a progress bar with training loss and validation score per epoch.
    callbacks : Callback, list of Callback or None, default=None
        Objects with ``on_fit_start(info)``, ``on_epoch_end(epoch, logs)`` and/or ``on_fit_end(logs)``
        (tsrep.training.callbacks): they follow the supervised training epoch by epoch (logs:
        train_loss, val_loss and val_score with a validation split, lr, seconds) and stop it when
        on_epoch_end returns True. Built-ins: CSVLogger, TensorBoardLogger, MLflowLogger.
    checkpoint_dir : path or None, default=None
        Directory where the whole training state (weights, optimiser, lr schedule, RNG states,
        epoch, best weights) is written atomically after every epoch. A fit that finds a state there from the same data and
        settings resumes after its last finished epoch and ends with the model an uninterrupted fit
        gives (on a CPU); a state from other data or settings is a ValueError and is left alone.
        Seed-ensemble members use ``member-<i>`` subdirectories.
    warm_start : bool, default=False
        scikit-learn's convention: a second ``fit`` continues training the network (and keeps the
        standardisation) of the previous fit, with a fresh optimiser and lr
        schedule, instead of starting from new weights. The classes must be those of the previous
        fit, and parameters that change the network (everything but the training recipe) must be
        unchanged: otherwise fit raises ValueError.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_classes_ : int
        The number of classes.
    module_ : torch.nn.Module
        The trained network.
    n_parameters_ : int
        Trainable parameters of the network (what runs, nothing else).
    history_ : tsrep.training.History
        Per-epoch losses and validation scores.
    best_epoch_ : int
        Epoch whose weights were kept.
    n_epochs_ : int
        Epochs trained.
    validation_fraction_ : float
        The share of TRAIN held out (validation_fraction="auto" resolved).
    min_steps_ : int
        The least number of optimiser steps (min_steps="auto" resolved).
    augmentation_ : str, sequence of str or None
        The distortions applied to training batches (augmentation="auto" resolved; None: none).
    label_smoothing_ : float
        The label smoothing of the loss (label_smoothing="auto" resolved).
    mixup_ : float
        The mixup alpha of training (mixup="auto" resolved; 0: none).
    estimators_ : list of classifiers or None
        The fitted single-model classifiers when n_estimators > 1, else None.

    See Also
    --------
    BackboneRegressor : The same encoders with a linear head and MSE.
    EADCTransformerClassifier : The EA-DC-Transformer on the same harness.
    """


class BackboneRegressor(_BackboneMixin, SeriesRegressorMixin, BaseRegressor):
    """Time series regressor with a baseline backbone (LSTM, GRU, ResNet, dilated conv, TST), mean-pooled,
    linear head, MSE on standardised targets: the EA-DC-Transformer's harness with another encoder.

    The training recipe parameters (pooling to warm_start) are those of EADCTransformerRegressor: the
    baselines train with the same recipe.

    Parameters
    ----------
    backbone : {"lstm", "gru", "resnet", "dilated-conv", "transformer"}, default="lstm"
    d_model : int, default=64
        Width (paper's grid: 64, 128); ResNet's later blocks are 2 * d_model wide.
    n_blocks : int, default=3
        Layers (LSTM/GRU), residual blocks (ResNet, dilated conv) or pairs of encoder layers
        (transformer); paper's grid: 2..5.
    n_heads : int, default=8
        Attention heads of the transformer; must divide d_model.
    kernel_size : int, default=3
        Kernel of the dilated convolutions.
    dim_feedforward : int or None, default=None
        Transformer FFN width (None: 4 * d_model).
    dropout : float, default=0.1
    pooling : {"mean", "max", "flatten"}, default="mean"
        Over valid steps; "flatten" needs series no longer than the longest training series.
    norm : {None, "layer", "batch"}, default=None
        Normalisation of ResNet and the transformer (None: BatchNorm for both, as in ResNet and TST,
        and as the EA-DC-Transformer's default); both are padding-aware. LSTM, GRU and the dilated
        conv have none.
    scaling : {"standard", "symlog"}, default="standard"
        Per-channel standardisation fitted on the training data; "symlog" first maps x to
        sign(x) * log(1 + abs(x)), for heavy-tailed inputs such as counts.
    lr : float, default=1e-3
        Peak learning rate (the schedule's maximum).
    batch_size : int >= 2, default=64
    max_epochs : int, default=100
        Epochs of training, raised where needed so that at least ``min_steps`` optimiser steps are
        taken; early stopping on a validation split may end training sooner.
    min_steps : "auto" or int >= 0, default="auto"
        Least number of optimiser steps: a 30-case data set (one batch per epoch) gets hundreds of
        steps, not max_epochs. "auto": 800, and for a classifier at least 60 per class, because the
        steps a problem needs grow with its classes (measured in the user guide's training recipe
        page). 0: exactly max_epochs epochs. The value used is ``min_steps_``.
    validation_fraction : "auto" or float in [0, 1), default="auto"
        Part of the training data held out to select the best epoch and stop early. "auto" holds
        out 20 % when that is at least 10 cases (TRAIN >= 46) and otherwise trains the whole budget
        on all of TRAIN: the validation error is continuous, so a small split already tells fitting
        from learning noise (a classifier's accuracy is not: it waits for 100 cases;
        tsrep.estimators._recipe). 0: never. The value used is ``validation_fraction_``.
    patience : int or None, default=20
        Epochs without validation improvement before stopping (only with a validation split).
    optimizer : str or torch.optim.Optimizer subclass, default="adamw"
        Any torch.optim or torch-optimizer name; "radam" uses the paper's betas (0.9, 0.99).
    optimizer_kwargs : dict or None, default=None
    weight_decay : float >= 0, default=0.01
        Decoupled weight decay (Loshchilov and Hutter, "Decoupled Weight Decay Regularization",
        ICLR 2019) on weight matrices and kernels; biases and norm scales get none.
    lr_schedule : {"onecycle", "cosine", "plateau", "none"} or callable, default="onecycle"
        Per-step one-cycle (warm-up over 25 % of the steps, cosine annealing; Smith and Topin 2019)
        or cosine (5 % warm-up) schedules, halving on a plateau of the monitored loss, or constant
        (tsrep.training.schedules). A callable ``optimizer -> scheduler`` gives any torch scheduler,
        stepped after every epoch, e.g.
        ``functools.partial(torch.optim.lr_scheduler.StepLR, step_size=10)``; a ReduceLROnPlateau
        gets the monitored loss. Model files store schedules by name only.
    label_smoothing : "auto" or float in [0, 1), default="auto"
        Cross-entropy label smoothing (Szegedy et al., "Rethinking the Inception Architecture for
        Computer Vision", CVPR 2016): the target puts 1 - s on the true class and s spread evenly
        over all classes. "auto": 0.1 for a classifier (measured in the user guide's training recipe
        page); a regressor has none ("auto" or 0 only). The value used is ``label_smoothing_``.
    mixup : "auto" or float >= 0, default="auto"
        Mixup (Zhang et al., "mixup: Beyond Empirical Risk Minimization", ICLR 2018): every training
        batch is mixed with a shuffled copy of itself by a weight drawn from Beta(mixup, mixup), and
        the loss alike (tsrep.training.mixup); 0: none. "auto": 0.2 for a classifier (measured in the
        user guide's training recipe page), none for a regressor. The value used is ``mixup_``.
    class_weight : None, "balanced" or dict, default=None
        Loss weight per class: "balanced" is n_cases / (n_classes * class count) (scikit-learn's
        rule); a dict maps labels to weights (others weigh 1). Multiplies ``sample_weight`` of
        ``fit``; the product is scaled to mean 1 over TRAIN. Classification only.
    augmentation : "auto", None, str or sequence of str, default="auto"
        Random label-preserving distortions of every training batch (tsrep.nn.augmentation): "window_warp"
        (a random 10 % window played at half or twice its speed), "window_slice" (a random 90 % window
        stretched back to full length), "scaling" (x N(1, 0.1^2) per case and channel), "jitter"
        (N(0, 0.05^2) noise per step), named joined by "+" or as a sequence and applied in that order; never
        at prediction. "auto": all four when TRAIN has fewer than 100 cases (scaling and jitter alone when a
        training series is shorter than 32 steps), none otherwise (used: ``augmentation_``). None: train on
        the series as given (the paper's protocol). Small training sets of long series gain most; larger
        ones underfit within the same step budget (measured in the user guide's training recipe page).
    grad_clip : float or None, default=4.0
    n_estimators : int >= 1, default=1
        Seed ensemble: members identical but for their seed (drawn from random_state), class
        probabilities (or predictions) averaged; fitted members in ``estimators_``.
    n_jobs : int, default=1
        Ensemble members fitted in parallel by joblib processes (-1: all cores).
    device : {"auto", "cpu", "cuda"} or torch device string, default="auto"
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Show a progress bar with training loss and validation score per epoch.
    callbacks : Callback, list of Callback or None, default=None
        Objects with ``on_fit_start(info)``, ``on_epoch_end(epoch, logs)`` and/or ``on_fit_end(logs)``
        (tsrep.training.callbacks): they follow the supervised training epoch by epoch (logs:
        train_loss, val_loss and val_score with a validation split, lr, seconds) and stop it when
        on_epoch_end returns True. Built-ins: CSVLogger, TensorBoardLogger, MLflowLogger.
    checkpoint_dir : path or None, default=None
        Directory where the whole training state (weights, optimiser, lr schedule, RNG states,
        epoch, best weights) is written atomically after every epoch. A fit that finds a state there from the same data and
        settings resumes after its last finished epoch and ends with the model an uninterrupted fit
        gives (on a CPU); a state from other data or settings is a ValueError and is left alone.
        Seed-ensemble members use ``member-<i>`` subdirectories.
    warm_start : bool, default=False
        scikit-learn's convention: a second ``fit`` continues training the network (and keeps the
        standardisation) of the previous fit, with a fresh optimiser and lr
        schedule, instead of starting from new weights. The classes must be those of the previous
        fit, and parameters that change the network (everything but the training recipe) must be
        unchanged: otherwise fit raises ValueError.

    Attributes
    ----------
    module_ : torch.nn.Module
        The trained network.
    n_parameters_ : int
        Trainable parameters of the network (what runs, nothing else).
    history_ : tsrep.training.History
        Per-epoch losses and validation scores.
    best_epoch_ : int
        Epoch whose weights were kept.
    n_epochs_ : int
        Epochs trained.
    validation_fraction_ : float
        The share of TRAIN held out (validation_fraction="auto" resolved).
    min_steps_ : int
        The least number of optimiser steps (min_steps="auto" resolved).
    mixup_ : float
        The mixup alpha of training (mixup="auto" resolved; 0: none).
    augmentation_ : str, sequence of str or None
        The distortions applied to training batches (augmentation="auto" resolved; None: none).
    y_mean_, y_std_ : float
        The target standardisation: predictions are ``outputs * y_std_ + y_mean_``.
    estimators_ : list of regressors or None
        The fitted single-model regressors when n_estimators > 1, else None.

    See Also
    --------
    BackboneClassifier : The same encoders with an MLP head and cross-entropy.
    EADCTransformerRegressor : The EA-DC-Transformer on the same harness.
    """
