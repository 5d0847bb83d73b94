"""EA-DC-Transformer regressor with aeon's collection input conventions."""

from __future__ import annotations

import numpy as np
import torch
from aeon.regression.base import BaseRegressor

from tsrep.data.convert import finite_mean_std
from tsrep.estimators._base import EADCTransformerMixin
from tsrep.estimators._ensemble import mean_of
from tsrep.estimators._recipe import case_weights, regression_loss


def _negative_mse(outputs: torch.Tensor, targets: torch.Tensor) -> float:
    return -float(regression_loss(outputs, targets))


class SeriesRegressorMixin:
    """The regression task of the shared harness (tsrep.estimators._harness): targets standardised
    with the training mean and std, MSE, predictions back in the original units (ensembles averaged)."""

    _task = "regression"

    def _check_y(self, y, n_cases):
        # aeon refuses targets with two distinct values ("binary"); any finite real target is a
        # valid regression target here.
        y = np.asarray(getattr(y, "values", y), dtype=np.float64)
        if y.ndim == 2 and 1 in y.shape:  # a column or row vector: one target per case all the same
            y = y.reshape(-1)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one target per case, got shape {y.shape}")
        if len(y) != n_cases:
            raise ValueError(f"Mismatch in number of cases. Found X = {n_cases} and y = {len(y)}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite values; regression targets must be finite")
        return y

    def _fit(self, X, y):
        is_ensemble, sample_weight = self._fit_setup_recipe(X, y)
        if is_ensemble:
            return self
        y = np.asarray(y, dtype=np.float64)
        warm = self._warm()
        if warm is not None:  # warm start: the head was trained on the previous fit's target units
            self.y_mean_, self.y_std_ = warm["y_mean_"], warm["y_std_"]
        else:
            mean, std = (float(v) for v in finite_mean_std(y))  # no overflow for targets of any finite size
            self.y_mean_ = mean
            self.y_std_ = std if std > 1e-12 else 1.0
        targets = torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)
        weights = case_weights(sample_weight, None, None)
        return self._train(X, targets, 1, regression_loss, _negative_mse, weights=weights)

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(every case, targets in the standardised units the network is trained on)."""
        y = np.asarray(y, dtype=np.float64)
        return np.ones(len(y), dtype=bool), torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)

    def _predict(self, X) -> np.ndarray:
        if self.estimators_:
            return mean_of([m.predict(X) for m in self.estimators_])
        out = self._outputs(X).squeeze(-1).double().numpy()
        with np.errstate(over="ignore"):
            predictions = out * self.y_std_ + self.y_mean_
        if not np.isfinite(predictions).all():  # targets near float64's limit, and a network answering beyond them
            bad = np.flatnonzero(~np.isfinite(predictions))
            raise ValueError(
                f"the predictions for X case(s) {', '.join(map(str, bad[:5]))} exceed float64's range in the units "
                f"of y (training targets of std {self.y_std_:.3g}); rescale y before fitting"
            )
        return predictions


class EADCTransformerRegressor(EADCTransformerMixin, SeriesRegressorMixin, BaseRegressor):
    """Time series regressor: EA-DC-Transformer, mean-pooled, linear head, MSE (Wang et al., TPAMI 2023, Eq. 9).

    Targets are standardised with the training mean and std; predictions are returned in the
    original units. Input formats as EADCTransformerClassifier.
    Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract).

    Parameters
    ----------
    d_model : int, default=64
        Hidden width d (paper's grid: 64, 128).
    n_blocks : int, default=3
        Blocks of two layers; dilation doubles per block (paper's grid: 2..5).
    n_heads : int, default=4
        Attention heads; must divide the attention width round(p * d_model). 4 heads of 4 channels
        at the default width train 2.4x faster than the paper's 8 heads of 2 channels, with the same
        accuracy on ArrowHead, GunPoint and ItalyPowerDemand (UCR archive, seed 0).
    p : float in [0, 1], default=0.25
        Fraction of channels given to attention (0: dilated convolution only, 1: EA-Transformer).
    alpha, beta : float in [0, 1], default=0.5
        Evolving-attention weights of Eq. 1 (0, 0: plain DC-Transformer).
    attn_kernel_size : int, default=3
        Kernel of the attention-map convolution.
    attention : str, default="evolving"
        Attention kind of every layer (tsrep.nn.attention_kinds):
        "evolving": multi-head attention with the evolving step of alpha, beta (Wang et al. 2023);
        "vanilla": plain multi-head attention; alpha and beta are not used;
        "interacting": every query head with every key head, h*h maps (Li and Luo 2022, Eq. 11-12);
        "interacting-summed": the h maps of a key head summed before one softmax (its Algorithm 1);
        "crossed": crossed co-attention, two branches with queries from the other branch and
        independently corrupted inputs in training (Li and Jiang 2020; twice the attention parameters).
        The interacting and crossed kinds evolve their maps when alpha or beta > 0 (over h*h
        channels for "interacting"). Fit warns when an interacting n_heads exceeds the paper's
        h_max = d / n (Eq. 13; d: attention width, n: mean training length), and keeps n_heads.
        Kinds added with tsrep.nn.register_attention are accepted by name too.
    head_mixing : {None, "deacon-direct", "deacon-average", "deacon-nonlinear"}, default=None
        DEACON PCA layer over the head outputs before the output projection (Ampazis and Sakketou
        2024), trained
        by the DEACON constrained Hebbian rule while every other weight uses `optimizer`.
    deacon_m : int or None, default=None
        Components kept by the PCA layer (None: all heads); m < h prunes heads and shrinks the
        output projection. At most h (h + h(h+1)/2 for "deacon-nonlinear"), with h the number of
        heads mixed (n_heads, or n_heads**2 for attention="interacting"). Needs head_mixing.
    deacon_dp : float > 0, default=0.2
        Norm of every DEACON step of the PCA weights (paper: 0.2).
    deacon_xi : float in (0, 1), default=0.8
        Share of the steepest first-order loss decrease demanded of each DEACON step (paper: 0.8).
    deacon_inner_steps : int >= 0, default=500
        GHA-only updates per batch, run on a copy of the PCA weights to set the Hebbian direction of
        the constrained DEACON step, which alone is applied (the paper's i = 500; each is a few
        h x h matrix products per PCA layer, about 25 us on a CPU).
    kernel_size : int, default=3
        Kernel of the dilated convolution branch.
    dim_feedforward : int or None, default=None
        FFN width; None means 4 * d_model.
    dropout : float, default=0.1
    pooling : {"mean", "max", "flatten"}, default="mean"
        Over valid steps; "flatten" needs series no longer than the longest training series.
        With "mean"/"max", steps past the longest training series reuse its last positional embedding.
    norm : {"batch", "layer"}, default="batch"
        BatchNorm whose statistics skip padded steps (as TST), or LayerNorm. BatchNorm is the
        default because LayerNorm over the channels of one time step erases the amplitude of a
        univariate input (its embedding x_t * w is one line, normalised to +-LN(w)); the
        measurement is in the documentation's design notes.
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
        at prediction. "auto": all four when TRAIN has fewer than 100 cases and the model has no
        convolutional stem (``conv_stem_``; scaling and jitter alone when a training series is shorter than
        32 steps), none otherwise (used: ``augmentation_``). None: train on the series as given (the paper's
        protocol). Small training sets of long series gain most; larger ones underfit within the same step
        budget (measured in the user guide's training recipe page).
    grad_clip : float or None, default=4.0
    n_estimators : int >= 1, default=1
        Seed ensemble: members identical but for their seed (drawn from random_state) and, when
        max_tokens is a sequence, their token budget; class probabilities (or predictions)
        averaged; fitted members in ``estimators_``.
    n_jobs : int, default=1
        Ensemble members fitted in parallel by joblib processes (-1: all cores).
    device : {"auto", "cpu", "cuda"} or torch device string, default="auto"
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Show a progress bar with training loss and validation score per epoch.
    pretrain_epochs : int >= 0, default=0
        Epochs of masked-reconstruction pretraining (Wang et al. 2023, Sec. 3.3.2) on all training series
        (validation part included: no labels are used) before fine-tuning; 0: none.
    mask_ratio : float in (0, 1), default=0.15
        Share of the values masked in pretraining.
    mask_mean_length : float >= 1, default=3
        Mean length of the masked spans (TST geometric masking, per variable).
    masking : {"geometric", "bernoulli"}, default="geometric"
    freeze_encoder : bool, default=False
        Fine-tune only the output head (the encoder keeps its pretrained weights).
    pretrained_encoder : path or None, default=None
        Encoder checkpoint written by ``TSRepEncoder.save`` (tsrep.representation): fit starts from
        its weights, standardisation and architecture (the backbone parameters above are then not
        used) and only the output head is new. This is how extra unlabelled series enter: pretrain
        a TSRepEncoder on them, save it, pass the path. A path (not a fitted object) survives
        ``clone``, so it works in cross-validation and tuning.
    checkpointing : bool, default=False
        Per-layer activation checkpointing: backward keeps only each layer's inputs (one carried
        (B, K, N, N) attention map per layer instead of about four) and recomputes the rest, for
        about one more forward pass; results are the same as without (tests/test_perf_options.py).
    mixed_precision : {None, "bf16"}, default=None
        Run the encoder under torch.autocast with bfloat16 (matrix products and convolutions in
        bf16; softmax, norms and the loss in fp32). Fast on GPUs and on CPUs with native bf16;
        on CPUs without it (AVX2 only) it is slower than fp32 (benchmarks/perf.py).
    compile : bool or dict, default=False
        torch.compile the encoder (opt-in: the first batches of each new shape pay for the
        compilation; on a CPU it needs a C++ compiler). A dict is passed to torch.compile as
        keyword arguments, e.g. ``{"mode": "max-autotune-no-cudagraphs"}`` or
        ``{"backend": "aot_eager"}``. The hand-written memory savers of the attention give way to
        plain torch operations under compilation, which fuses and plans memory itself;
        checkpointed layers run uncompiled.
    patch_len : "auto", int or None, default="auto"
        PatchTST-style front end for long series: tokens of patch_len steps (all channels, projected
        to d_model) every patch_stride steps; attention maps shrink by the stride squared. A token
        is valid when any of its steps is (tsrep.nn.patching); pooling is over valid tokens.
        "auto" (tsrep.nn.patching.auto_patch): one token per step for series shorter than 32
        steps, else patches of 2S steps every S = max(4, ceil(T / max_tokens)) steps; one token per
        step with pretraining. None: one token per step (the paper's). Used: ``patch_len_``, ``patch_stride_``.
    patch_stride : int in [1, patch_len] or None, default=None
        Steps between token starts (None: patch_len, non-overlapping); needs an integer patch_len.
    max_tokens : "auto", int, or tuple / list of ints, default="auto"
        The token budget of ``patch_len="auto"``: patches of 2S steps every S = max(4, ceil(T /
        max_tokens)) steps, so at most about max_tokens tokens per series (attention maps are N x N:
        halving the tokens about halves the fit time).
        "auto" (tsrep.nn.patching.resolve_max_tokens): 64 for a regressor (the classifier's 32
        tokens were not measured on regression problems). Used:
        ``max_tokens_``. With n_estimators >= 2 a sequence gives the members their budgets in turn,
        e.g. ``(64, 32)``: members then differ in the granularity of their tokens as well as in their
        seed (a multi-scale ensemble; measured in the user guide's training recipe page).
    downsample : int or None, default=None
        Alternative front end: tokens are the means of windows of `downsample` steps (over valid
        steps). Neither front end works with pretraining (its loss is per step).
    conv_stem : "auto", int or None, default="auto"
        Convolutional stem (tsrep.nn.conv_stem): two convolutions (kernels 7 and 5, padding-aware
        BatchNorm, ReLU) with this many channels run on the series at full resolution, and each patch
        token is the mean of their features over its window instead of a linear map of its raw steps.
        "auto": 64 channels for a classifier whose tokens are patches (``patch_len_`` set) and whose
        TRAIN has at least 32 cases; none with per-step tokens (short series, the paper's protocol),
        for smaller training sets and for a regressor, which it made worse (measured in the user
        guide's training recipe page). None: no stem. Cannot be combined with pretrained_encoder. Used: ``conv_stem_``.
    callbacks : Callback, list of Callback or None, default=None
        Objects with ``on_fit_start(info)``, ``on_epoch_end(epoch, logs)`` and/or ``on_fit_end(logs)``
        (tsrep.training.callbacks): they follow the supervised training epoch by epoch (logs:
        train_loss, val_loss and val_score with a validation split, lr, seconds) and stop it when
        on_epoch_end returns True. Built-ins: CSVLogger, TensorBoardLogger, MLflowLogger.
    checkpoint_dir : path or None, default=None
        Directory where the whole training state (weights, optimiser, lr schedule, RNG states,
        epoch, best weights; also the pretraining state with pretrain_epochs > 0) is written
        atomically after every epoch. A fit that finds a state there from the same data and
        settings resumes after its last finished epoch and ends with the model an uninterrupted fit
        gives (on a CPU); a state from other data or settings is a ValueError and is left alone.
        Seed-ensemble members use ``member-<i>`` subdirectories.
    warm_start : bool, default=False
        scikit-learn's convention: a second ``fit`` continues training the network (and keeps the
        standardisation and token front end) of the previous fit, with a fresh optimiser and lr
        schedule, instead of starting from new weights. The classes must be those of the previous
        fit, and parameters that change the network (everything but the training recipe) must be
        unchanged: otherwise fit raises ValueError. Pretraining is not run again.

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
    patch_len_, patch_stride_ : int or None
        The token front end used (patch_len="auto" resolved).
    max_tokens_ : int
        The token budget of patch_len="auto" (max_tokens="auto" resolved; a member's own in an ensemble).
        Resolved whatever patch_len is, it acts only where patch_len="auto" chooses the tokens (not with
        an explicit patch_len, downsample or pretraining); a fit from pretrained_encoder has none.
    conv_stem_ : int or None
        The channels of the convolutional stem used (conv_stem="auto" resolved; None: no stem).
    estimators_ : list of regressors or None
        The fitted single-model regressors when n_estimators > 1, else None.

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
