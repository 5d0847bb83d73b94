"""EA-DC-Transformer classifier with aeon's collection input conventions."""

from __future__ import annotations

import numpy as np
import torch
from aeon.classification.base import BaseClassifier

from tsrep.estimators._base import EADCTransformerMixin
from tsrep.estimators._common import check_class_labels
from tsrep.estimators._ensemble import mean_of
from tsrep.estimators._recipe import case_weights, class_weights, classification_loss, resolve_label_smoothing
from tsrep.training.loop import accuracy_score_fn


class SeriesClassifierMixin:
    """The classification task of the shared harness (tsrep.estimators._harness): class labels,
    cross-entropy with label smoothing and class weights, averaged probabilities of ensembles."""

    _task = "classification"

    def _check_y(self, y, n_cases, update_classes=True, allow_single_class=False):
        check_class_labels(y)  # missing or mixed labels, named before aeon's generic checks
        if isinstance(y, (list, tuple)):  # scikit-learn takes a list of labels; aeon's check wants an array
            y = np.asarray(y)
        # Scoring learns no classes: a test set whose cases are all of one class is scored like any other.
        return super()._check_y(y, n_cases, update_classes, allow_single_class or not update_classes)

    def _fit(self, X, y):
        is_ensemble, sample_weight = self._fit_setup_recipe(X, y)
        self.label_smoothing_ = resolve_label_smoothing(self.label_smoothing)  # the members' value too
        if is_ensemble:
            return self
        index = np.array([self._class_dictionary[v] for v in y])
        weights = case_weights(sample_weight, class_weights(self.class_weight, self.classes_, index), index)
        targets = torch.as_tensor(index, dtype=torch.long)
        loss = classification_loss(self.label_smoothing_)
        return self._train(
            X, targets, self.n_classes_, loss, accuracy_score_fn, stratify_on=index, weights=weights
        )

    def _encode_targets(self, y) -> tuple[np.ndarray, torch.Tensor]:
        """(cases whose class was seen in training, their class indices)."""
        keep = np.array([v in self._class_dictionary for v in y], dtype=bool)
        return keep, torch.as_tensor([self._class_dictionary[v] for v in y[keep]], dtype=torch.long)

    def _predict_proba(self, X) -> np.ndarray:
        if self.estimators_:
            return mean_of([m.predict_proba(X) for m in self.estimators_])
        return torch.softmax(self._outputs(X), dim=1).double().numpy()

    def _predict(self, X) -> np.ndarray:
        return self.classes_[self._predict_proba(X).argmax(axis=1)]


class EADCTransformerClassifier(EADCTransformerMixin, SeriesClassifierMixin, BaseClassifier):
    """Time series classifier: EA-DC-Transformer, mean-pooled, MLP head, cross-entropy (Wang et al., TPAMI 2023, Eq. 10).

    Takes a 3-D array (n_cases, n_channels, n_timepoints), a 2-D array (univariate) or a list of
    2-D arrays (unequal length, handled with padding masks). Missing values are interpolated; in a
    3-D array, trailing steps where every channel is NaN are padding (the series ends before them).
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
        at prediction. "auto": all four when TRAIN has fewer than 100 cases and the model has no
        convolutional stem (``conv_stem_``; scaling and jitter alone when a training series is shorter than
        32 steps), none otherwise (used: ``augmentation_``). None: train on the series as given (the paper's
        protocol). Small training sets of long series gain most; larger ones underfit within the same step
        budget (measured in the user guide's training recipe page).
    grad_clip : float or None, default=4.0
    n_estimators : int >= 1, default=1
        Seed ensemble: members identical but for their seed (drawn from random_state) and, when
        max_tokens is a sequence, their token budget; class probabilities (or predictions)
        averaged; fitted members in ``estimators_``. On the UCR
        development panel (five seeds) three members raised the mean accuracy from 0.860 to 0.873
        and five to 0.875, at three and five times the fit time (user guide, training recipe page).
        Members that also differ in token budget (``max_tokens=(64, 32)``) ensemble better: three
        members 0.878 at 0.85 of the time of three seeds, six members 0.882.
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
        "auto" (tsrep.nn.patching.resolve_max_tokens): 32 (on the UCR development panel, five seeds,
        32 tokens gained on the sets of 70 cases or more and, with window warping, on the three
        smallest; level on the two between). Used: ``max_tokens_``. With n_estimators >= 2 a
        sequence gives the members their budgets in turn, e.g. ``(64, 32)``: members then differ in
        the granularity of their tokens as well as in their seed (a multi-scale ensemble; measured in
        the user guide's training recipe page).
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
    patch_len_, patch_stride_ : int or None
        The token front end used (patch_len="auto" resolved).
    max_tokens_ : int
        The token budget of patch_len="auto" (max_tokens="auto" resolved; a member's own in an ensemble).
        Resolved whatever patch_len is, it acts only where patch_len="auto" chooses the tokens (not with
        an explicit patch_len, downsample or pretraining); a fit from pretrained_encoder has none.
    conv_stem_ : int or None
        The channels of the convolutional stem used (conv_stem="auto" resolved; None: no stem).
    estimators_ : list of classifiers or None
        The fitted single-model classifiers when n_estimators > 1, else None.

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
