"""What the EA-DC-Transformer classifier and regressor share: parameters, input handling, training."""

from __future__ import annotations

import copy
import warnings
import numbers

import numpy as np
import torch
from aeon.utils.validation import check_n_jobs
from sklearn.base import clone

from tsrep.backbones import DCTransformerEncoder, SeriesModel
from tsrep.backbones.dc_transformer import split_width, validate_backbone_params
from tsrep.data import ChannelStandardizer, as_case_list
from tsrep.estimators._common import (
    TRAINING_PARAMS,
    check_class_labels,
    check_enough_cases,
    check_finite_outputs,
    check_not_empty,
    check_values,
    cpu_state_dict,
    prepare_series,
    resolve_device,
    seed_from,
    validate_training_params,
)
from tsrep.nn.attention_kinds import validate_attention_options
from tsrep.nn.augmentation import resolve_augmentation
from tsrep.nn.interacting import check_interacting_heads
from tsrep.nn.norm import NORMS
from tsrep.training import SeriesBatchData, TrainConfig, count_parameters, predict_outputs, train_supervised
from tsrep.training.distributed import broadcast_object, device_for_rank, setup_data_parallel
from tsrep.training.loop import stratified_split
from tsrep.training.resume import PRETRAIN_STATE_FILE, TrainCheckpoint, stored_seed
from tsrep.estimators._recipe import (
    check_sample_weight,
    resolve_min_steps,
    resolve_validation_fraction,
    validate_recipe,
)
from tsrep.estimators._ensemble import fit_members
from tsrep.estimators._long_runs import (
    check_warm_start,
    restore_preprocessing,
    resume_settings,
    validate_long_run_options,
    warm_state,
)
from tsrep.nn.patching import n_tokens, resolve_front_end
from tsrep.estimators._cost import compiled_if_asked, encoder_cost_options, validate_cost_options
from tsrep.estimators._memory import check_estimator_memory
from tsrep.estimators._pretraining import build_encoder, pretrain_stage, start_from_checkpoint, validate_pretraining

AEON_TAGS = {
    "X_inner_type": ["np-list", "numpy3D"],
    "capability:multivariate": True,
    "capability:unequal_length": True,
    "capability:missing_values": True,
    "capability:multithreading": True,  # n_jobs: ensemble members fitted in parallel
    "algorithm_type": "deeplearning",
    "python_dependencies": "torch",
}


class EADCTransformerMixin:
    """Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract).

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
    optimizer_kwargs : dict or None
    weight_decay : float >= 0, default=0.01
        Decoupled weight decay (Loshchilov and Hutter, "Decoupled Weight Decay Regularization",
        ICLR 2019) on weight matrices and kernels; biases and norm scales get none.
    lr_schedule : {"onecycle", "cosine", "plateau", "none"}, default="onecycle"
        Per-step one-cycle (warm-up over 25 % of the steps, cosine annealing; Smith and Topin 2019)
        or cosine (5 % warm-up) schedules, halving on a plateau of the monitored loss, or constant
        (tsrep.training.schedules).
    label_smoothing : float in [0, 1), default=0.0
        Cross-entropy label smoothing; classification only.
    class_weight : None, "balanced" or dict, default=None
        Loss weight per class: "balanced" is n_cases / (n_classes * class count) (scikit-learn's
        rule); a dict maps labels to weights (others weigh 1). Multiplies ``sample_weight`` of
        ``fit``; the product is scaled to mean 1 over TRAIN. Classification only.
    augmentation : "auto", None, str or sequence of str, default="auto"
        Random label-preserving distortions of every training batch (tsrep.nn.augmentation):
        "window_slice" (a random 90 % window stretched back to full length), "scaling" (x N(1, 0.1^2)
        per case and channel), "jitter" (N(0, 0.05^2) noise per step), named joined by "+" or as a
        sequence and applied in that order; never at prediction. "auto": all three when TRAIN has fewer
        than 100 cases (scaling and jitter alone when a training series is shorter than 32 steps),
        none otherwise (used: ``augmentation_``). None: train on the series as given (the paper's
        protocol). Small training sets of long series gain most; larger ones underfit within the
        same step budget (measured in the user guide's training recipe page).
    grad_clip : float or None, default=4.0
    n_estimators : int >= 1, default=1
        Seed ensemble: members identical but for their seed (drawn from random_state), class
        probabilities (or predictions) averaged; fitted members in ``estimators_``.
    n_jobs : int, default=1
        Ensemble members fitted in parallel by joblib processes (-1: all cores).
    device : {"auto", "cpu", "cuda"} or torch device string, default="auto"
    random_state : int, RandomState or None
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
    compile : bool, default=False
        torch.compile the encoder (opt-in: the first batches of each new shape pay for the
        compilation; on a CPU it needs a C++ compiler).
    patch_len : "auto", int or None, default="auto"
        PatchTST-style front end for long series: tokens of patch_len steps (all channels, projected
        to d_model) every patch_stride steps; attention maps shrink by the stride squared. A token
        is valid when any of its steps is (tsrep.nn.patching); pooling is over valid tokens.
        "auto" (tsrep.nn.patching.auto_patch): one token per step for series shorter than 32
        steps, else patches of 2S steps every S = max(4, ceil(T / 64)) steps; one token per step
        with pretraining. None: one token per step (the paper's). Used: ``patch_len_``, ``patch_stride_``.
    patch_stride : int in [1, patch_len] or None, default=None
        Steps between token starts (None: patch_len, non-overlapping); needs an integer patch_len.
    downsample : int or None, default=None
        Alternative front end: tokens are the means of windows of `downsample` steps (over valid
        steps). Neither front end works with pretraining (its loss is per step).
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
    """

    _task: str  # "classification" or "regression"

    def __init__(
        self,
        d_model=64,
        n_blocks=3,
        n_heads=4,
        p=0.25,
        alpha=0.5,
        beta=0.5,
        attn_kernel_size=3,
        attention="evolving",
        head_mixing=None,
        deacon_m=None,
        deacon_dp=0.2,
        deacon_xi=0.8,
        deacon_inner_steps=500,
        kernel_size=3,
        dim_feedforward=None,
        dropout=0.1,
        pooling="mean",
        norm="batch",
        scaling="standard",
        lr=1e-3,
        batch_size=64,
        max_epochs=100,
        min_steps="auto",
        validation_fraction="auto",
        patience=20,
        optimizer="adamw",
        optimizer_kwargs=None,
        weight_decay=0.01,
        lr_schedule="onecycle",
        label_smoothing=0.0,
        class_weight=None,
        augmentation="auto",
        grad_clip=4.0,
        n_estimators=1,
        n_jobs=1,
        device="auto",
        random_state=None,
        verbose=False,
        pretrain_epochs=0,
        mask_ratio=0.15,
        mask_mean_length=3,
        masking="geometric",
        freeze_encoder=False,
        pretrained_encoder=None,
        checkpointing=False,
        mixed_precision=None,
        compile=False,
        patch_len="auto",
        patch_stride=None,
        downsample=None,
        callbacks=None,
        checkpoint_dir=None,
        warm_start=False,
    ):
        self.d_model = d_model
        self.n_blocks = n_blocks
        self.n_heads = n_heads
        self.p = p
        self.alpha = alpha
        self.beta = beta
        self.attn_kernel_size = attn_kernel_size
        self.attention = attention
        self.head_mixing = head_mixing
        self.deacon_m = deacon_m
        self.deacon_dp = deacon_dp
        self.deacon_xi = deacon_xi
        self.deacon_inner_steps = deacon_inner_steps
        self.kernel_size = kernel_size
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.pooling = pooling
        self.norm = norm
        self.scaling = scaling
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.min_steps = min_steps
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.optimizer = optimizer
        self.optimizer_kwargs = optimizer_kwargs
        self.weight_decay = weight_decay
        self.lr_schedule = lr_schedule
        self.label_smoothing = label_smoothing
        self.class_weight = class_weight
        self.augmentation = augmentation
        self.grad_clip = grad_clip
        self.n_estimators = n_estimators
        self.n_jobs = n_jobs
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.pretrain_epochs = pretrain_epochs
        self.mask_ratio = mask_ratio
        self.mask_mean_length = mask_mean_length
        self.masking = masking
        self.freeze_encoder = freeze_encoder
        self.pretrained_encoder = pretrained_encoder
        self.checkpointing = checkpointing
        self.mixed_precision = mixed_precision
        self.compile = compile
        self.patch_len = patch_len
        self.patch_stride = patch_stride
        self.downsample = downsample
        self.callbacks = callbacks
        self.checkpoint_dir = checkpoint_dir
        self.warm_start = warm_start
        super().__init__()

    # ----------------------------------------------------------------- validation
    def _validate_params(self):
        validate_backbone_params(
            self.d_model, self.n_blocks, self.n_heads, self.p, self.alpha, self.beta,
            self.attn_kernel_size, self.kernel_size, self.dropout,
        )
        validate_attention_options(
            self.attention, self.head_mixing, self.deacon_m, self.n_heads, split_width(self.d_model, self.p)[0],
            self.deacon_dp, self.deacon_xi, self.deacon_inner_steps,
        )
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        validate_training_params(self, TRAINING_PARAMS)
        validate_recipe(self)
        validate_pretraining(self)
        validate_cost_options(self)
        validate_long_run_options(self)
        return resolve_device(self.device)

    # ----------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None):
        """Fit to the collection X and targets y; sample_weight (n_cases,) scales each case's loss.

        Weights are scaled to mean 1 over the training cases (together with class_weight), so
        they change the balance between cases, not the size of the optimiser's steps.
        """
        # aeon's fit takes (X, y) and resets every attribute without "__" in its name: the weights
        # travel to _fit under a mangled (double-underscore) name and are gone after fit.
        self.__sample_weight = sample_weight
        # warm_start: the previous fit's network and preprocessing, kept through aeon's reset.
        self.__warm = warm_state(self) if self.warm_start is True and getattr(self, "is_fitted", False) else None
        before = dict(self.__dict__) if self.__warm is not None else None
        try:
            return super().fit(X, y)
        except BaseException:
            if before is not None:  # a refused warm fit leaves the previous fit in place
                self.__dict__.clear()
                self.__dict__.update(before)
            raise
        finally:
            del self.__sample_weight, self.__warm

    def _fit_as_member(self, X, y, sample_weight, index: int):
        """fit as member `index` of a seed ensemble (callbacks are told which member they follow)."""
        self.__member = index
        try:
            return self.fit(X, y, sample_weight=sample_weight)
        finally:
            del self.__member

    def _warm(self) -> dict | None:
        return self.__dict__.get("_EADCTransformerMixin__warm")

    def _fit_setup_recipe(self, X, y) -> tuple[bool, np.ndarray | None]:
        """Validate everything before any work; fit the seed ensemble when n_estimators > 1.

        Returns (fitted_as_ensemble, checked sample weights)."""
        self._validate_params()
        self._n_jobs = check_n_jobs(self.n_jobs)  # aeon's convention: -1 -> all cores
        check_enough_cases(len(y))
        weights = check_sample_weight(self.__dict__.get("_EADCTransformerMixin__sample_weight"), len(y))
        warm = self._warm()
        if warm is not None:
            check_warm_start(self, warm)
        if self.n_estimators > 1:
            concurrent = min(self._n_jobs, self.n_estimators)
            if concurrent > 1:  # members training at once add up their memory: refuse here, not in a worker
                probe = clone(self).set_params(n_estimators=1, n_jobs=1, warm_start=False)
                probe._concurrent_fits = concurrent
                with warnings.catch_warnings():  # the members warn of the data themselves
                    warnings.simplefilter("ignore")
                    probe._prepare_X(X, fit=True)
            self.estimators_ = fit_members(self, X, y, weights, previous=None if warm is None else warm["estimators_"])
            self.n_parameters_ = int(sum(m.n_parameters_ for m in self.estimators_))
            return True, weights
        self.estimators_ = None
        return False, weights

    # ----------------------------------------------------------------- data
    def _preprocess_collection(self, X, store_metadata=True):
        check_not_empty(X)
        with warnings.catch_warnings():  # numpy's overflow and all-NaN notes from aeon's checks: check_values says more
            warnings.simplefilter("ignore", RuntimeWarning)
            X = super()._preprocess_collection(X, store_metadata)
        check_values(X, fitting=store_metadata)  # aeon's fit stores metadata, predict and score do not
        return X

    def _check_y(self, y, n_cases, *args, **kwargs):
        if self._task == "classification":  # missing or mixed labels, named before aeon's generic checks
            check_class_labels(y)
        return super()._check_y(y, n_cases, *args, **kwargs)

    def _prepare_X(self, X, fit: bool) -> SeriesBatchData:
        cases = as_case_list(X, trailing_nan_is_padding=True)  # a NaN-padded 3-D array: series of their own length
        warm = self._warm() if fit else None
        if warm is not None:  # the previous fit's standardisation and front end: its network was trained on them
            restore_preprocessing(self, warm, int(cases[0].shape[0]))
        elif fit and self.pretrained_encoder is not None:
            # Keep the checkpoint's standardisation and positions: its encoder was trained on them.
            start_from_checkpoint(self, int(cases[0].shape[0]))
        elif fit:
            self.encoder_config_ = None
            self.standardizer_ = ChannelStandardizer(self.scaling).fit(cases)
            self.max_len_ = int(max(c.shape[1] for c in cases))
            self.n_channels_ = int(cases[0].shape[0])
            # patch_len="auto": the token rule of tsrep.nn.patching, fixed here on the training data.
            self.patch_len_, self.patch_stride_ = resolve_front_end(
                self.patch_len, self.patch_stride, self.downsample, self.n_channels_, self.max_len_,
                per_step_only=bool(self.pretrain_epochs),
            )
        else:
            longest = max(c.shape[1] for c in cases)
            if longest > self.max_len_ and self.pooling == "flatten":
                raise ValueError(
                    f"X has a series of {longest} steps, longer than the longest training series "
                    f"({self.max_len_}); pooling='flatten' needs series no longer than that "
                    "(use pooling='mean' or 'max' for series of any length)"
                )
        if fit:  # before any weight is built: refuse what cannot fit in memory, with what would help
            check_estimator_memory(self, len(cases), concurrent=self.__dict__.get("_concurrent_fits", 1))
        return prepare_series(cases, self.standardizer_)

    # ----------------------------------------------------------------- model
    def _augmentation_used(self):
        # Resolved from ``augmentation`` on the training data in ``_train``; absent only in models pickled
        # before augmentation existed, which are rebuilt for prediction (no augmentation there anyway).
        return getattr(self, "augmentation_", None)

    def _build_model(self, n_outputs: int) -> SeriesModel:
        if getattr(self, "encoder_config_", None) is not None:  # architecture of a pretrained checkpoint
            encoder = compiled_if_asked(self, build_encoder(self.encoder_config_, **encoder_cost_options(self)))
            return SeriesModel(encoder, n_outputs, self._task, self.pooling, self.dropout, self._augmentation_used())
        encoder = DCTransformerEncoder(
            in_channels=self.n_channels_,
            max_len=self.max_len_,
            d_model=self.d_model,
            n_blocks=self.n_blocks,
            n_heads=self.n_heads,
            p=self.p,
            alpha=self.alpha,
            beta=self.beta,
            attn_kernel_size=self.attn_kernel_size,
            kernel_size=self.kernel_size,
            dim_feedforward=self.dim_feedforward,
            dropout=self.dropout,
            norm=self.norm,
            attention=self.attention,
            head_mixing=self.head_mixing,
            deacon_m=self.deacon_m,
            deacon_settings=dict(dP=self.deacon_dp, xi=self.deacon_xi, inner_steps=self.deacon_inner_steps),
            patch_len=self.patch_len_,
            patch_stride=self.patch_stride_,
            downsample=self.downsample,
            **encoder_cost_options(self),
        )
        return SeriesModel(
            compiled_if_asked(self, encoder), n_outputs, self._task, self.pooling, self.dropout, self._augmentation_used()
        )

    def _train(self, X, targets: torch.Tensor, n_outputs: int, loss_fn, score_fn, stratify_on=None, weights=None):
        """Fit one network. loss_fn(outputs, targets, weights); weights: per-case loss weights or None."""
        # Parameters were checked by _fit_setup_recipe before any work (ensembles included).
        # Under torchrun: join the process group and take this rank's device (tsrep.training.distributed).
        device = setup_data_parallel(resolve_device(self.device))
        seed = seed_from(self.random_state)
        if self.checkpoint_dir is not None and not isinstance(self.random_state, numbers.Integral):
            seed = stored_seed(self.checkpoint_dir, seed)  # a drawn seed: resume with the one the state used
        seed = broadcast_object(seed)  # random_state=None: rank 0's draw on every rank
        data = self._prepare_X(X, fit=True)
        data.targets = targets
        if str(self.attention).startswith("interacting"):  # Eq. 13: say so, never clamp n_heads
            # n counts the tokens attention sees: one per stride of a patch or downsample front end
            # (patch_stride None: the patch length); a checkpoint's encoder has one token per step.
            from_checkpoint = self.encoder_config_ is not None
            stride = 1 if from_checkpoint else self.patch_stride_ or self.patch_len_ or self.downsample or 1
            mean_tokens = float(np.mean([n_tokens(int(length), stride) for length in data.valid.sum(1)]))
            check_interacting_heads(self.n_heads, split_width(self.d_model, self.p)[0], mean_tokens)
        rng = np.random.default_rng(seed)
        data.weights = weights
        labels = stratify_on if stratify_on is not None else np.zeros(len(data))
        self.validation_fraction_ = resolve_validation_fraction(self.validation_fraction, len(data))
        self.min_steps_ = resolve_min_steps(self.min_steps, n_outputs if self._task == "classification" else None)
        self.augmentation_ = resolve_augmentation(self.augmentation, len(data), int(data.valid.sum(1).min()))
        train_idx, val_idx = stratified_split(labels, self.validation_fraction_, rng, stratify_on is not None)
        train_data = data.subset(train_idx)
        val_data = data.subset(val_idx) if len(val_idx) else None
        config = TrainConfig(
            lr=self.lr,
            batch_size=self.batch_size,
            max_epochs=self.max_epochs,
            min_steps=self.min_steps_,
            patience=self.patience,
            optimizer=self.optimizer,
            optimizer_kwargs=self.optimizer_kwargs,
            weight_decay=self.weight_decay,
            lr_schedule=self.lr_schedule,
            grad_clip=self.grad_clip,
            verbose=self.verbose,
        )
        warm = self._warm()
        member = self.__dict__.get("_EADCTransformerMixin__member")
        checkpoint, settings = None, resume_settings(self, seed)
        if self.checkpoint_dir is not None:
            checkpoint = TrainCheckpoint(self.checkpoint_dir, settings)
        fork_devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=fork_devices):
            # Seeded locally so that fit is reproducible without touching the user's global RNG.
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed)
            if warm is not None:  # continue the previous fit's network
                model = warm["module_"].to(device)
                self.pretrain_history_ = []
            else:
                model = self._build_model(n_outputs).to(device)
                # Pretrained weights and/or masked-reconstruction pretraining, then optional freezing.
                pretrain_checkpoint = None if checkpoint is None else checkpoint.directory / PRETRAIN_STATE_FILE
                self.pretrain_history_ = pretrain_stage(
                    self, model, data, device, generator, pretrain_checkpoint, settings
                )

            def make_scorer(X_score, y_score):
                """A function of no argument: score_fn of the network as it stands on (X_score, y_score)."""
                report = self._report_data(X_score, y_score)
                if not len(report):
                    return lambda: float("nan")
                return lambda: float(score_fn(predict_outputs(model, report, self.batch_size, device), report.targets))

            fit_info = {
                "params": self.get_params(deep=False), "member": member, "phase": "train", "estimator": self,
                "make_scorer": make_scorer,
            }
            self.history_ = train_supervised(
                model, train_data, val_data, loss_fn, score_fn, config, device, generator,
                callbacks=self.callbacks, checkpoint=checkpoint, fit_info=fit_info,
            )
        self.module_ = model
        # The parameters the network was built from: set_params after fit must not change how a
        # pickled model is rebuilt (its weights only fit the architecture they were trained in).
        self._fitted_params = self.get_params(deep=False)
        self.n_outputs_ = n_outputs
        self.n_parameters_ = count_parameters(model)
        self.best_epoch_ = self.history_.best_epoch
        self.n_epochs_ = len(self.history_.train_loss)
        return self

    def _report_data(self, X, y) -> SeriesBatchData:
        """A tuner's validation fold as model-ready tensors (cases of classes unseen in training left out)."""
        keep, targets = self._encode_targets(np.asarray(y))
        X = [x for x, k in zip(as_case_list(X, trailing_nan_is_padding=True), keep) if k]
        data = self._prepare_X(X, fit=False) if X else SeriesBatchData(torch.empty(0, 1, 1), torch.empty(0, 1))
        data.targets = targets
        return data

    def _outputs(self, X) -> torch.Tensor:
        device = device_for_rank(resolve_device(self.device))  # under torchrun: this rank's GPU
        data = self._prepare_X(X, fit=False)
        self.module_.to(device)
        return check_finite_outputs(predict_outputs(self.module_, data, self.batch_size, device))

    # ----------------------------------------------------------------- saving
    def save(self, path):
        """Write the fitted estimator to `path`: one safetensors file with the weights and, in its
        metadata, JSON of the parameters and fitted state (tsrep._serialization; no pickle). Written
        atomically: a failed save leaves an existing file as it was. ``callbacks`` are not saved.
        Returns the path."""
        from tsrep.estimators._saving import save_estimator

        return save_estimator(self, path)

    @classmethod
    def load(cls, path, **params):
        """The fitted estimator saved at `path` by ``save``; `params` override saved parameters (e.g.
        device="cpu"; a model saved with a CUDA device loads on the CPU when CUDA is missing).
        Nothing in the file can run code; a file of another kind, of a newer format version, or
        truncated is a ValueError (tsrep._serialization.ModelFileError)."""
        from tsrep.estimators._saving import load_estimator

        return load_estimator(path, expected=cls, **params)

    # torch refuses to pickle weight-norm parametrized modules, and a GPU tensor would not unpickle on
    # a CPU-only machine: the network travels as a CPU state_dict and is rebuilt on unpickling.
    def __getstate__(self):
        state = dict(super().__getstate__())
        module = state.pop("module_", None)
        if module is not None:
            state["_module_state"] = (cpu_state_dict(module), module.training)
        return state

    def __setstate__(self, state):
        state = dict(state)
        module_state = state.pop("_module_state", None)
        super().__setstate__(state)
        if module_state is not None:
            weights, training = module_state
            builder = copy.copy(self)
            builder.__dict__.update(state.get("_fitted_params", {}))
            with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
                module = builder._build_model(self.n_outputs_)
            module.load_state_dict(weights)
            self.module_ = module.train(training)

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {
            "d_model": 8,
            "n_blocks": 1,
            "n_heads": 2,
            "p": 0.5,
            "max_epochs": 2,
            "min_steps": 0,
            "batch_size": 8,
            "random_state": 0,
        }
