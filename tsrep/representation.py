"""Unsupervised representations: TSRepEncoder and pretrained-encoder checkpoints.

An encoder checkpoint is ONE file written by ``torch.save`` holding only tensors, numbers and strings:

- ``format``: "tsrep-encoder/1"
- ``config_json``: JSON of the encoder architecture (DCTransformerEncoder keyword arguments,
  including ``in_channels`` and ``max_len``) and of the preprocessing (``scaling``, ``pooling``)
- ``encoder``: the encoder's state_dict (CPU tensors)
- ``standardizer_mean`` / ``standardizer_std``: the per-channel standardisation fitted on the
  pretraining data (float64 tensors)

It is read with ``torch.load(weights_only=True)``: a file carrying pickled code is refused with a
ValueError, never run. Classifiers and regressors start from such a file with
``pretrained_encoder=path`` (only their output head is new).
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np
import torch
from aeon.transformations.collection import BaseCollectionTransformer

from tsrep.backbones import DCTransformerEncoder
from tsrep.backbones.dc_transformer import validate_backbone_params
from tsrep.data import ChannelStandardizer, as_case_list
from tsrep.estimators._common import check_not_empty, cpu_state_dict, prepare_series, resolve_device, seed_from, validate_training_params
from tsrep.nn.norm import NORMS
from tsrep.nn.pooling import SequencePooling
from tsrep.training import predict_outputs
from tsrep.training.masking import ReconstructionModel, validate_masking
from tsrep.training.pretrain import PretrainConfig, load_safely, pretrain_masked, save_atomically

ENCODER_FORMAT = "tsrep-encoder/1"
ENCODER_KEYS = (
    "in_channels", "max_len", "d_model", "n_blocks", "n_heads", "p", "alpha", "beta", "attn_kernel_size",
    "kernel_size", "dim_feedforward", "dropout", "norm", "attention", "head_mixing", "deacon_m", "deacon_settings",
)


def build_encoder(config: dict) -> DCTransformerEncoder:
    return DCTransformerEncoder(**{k: config[k] for k in ENCODER_KEYS if k in config})


def save_encoder(path, config: dict, encoder: torch.nn.Module, standardizer: ChannelStandardizer) -> Path:
    """Write an encoder checkpoint (see module docstring); returns the path."""
    path = Path(path)
    save_atomically(
        {
            "format": ENCODER_FORMAT,
            "config_json": json.dumps(config, sort_keys=True),
            "encoder": {k: v.detach().to("cpu", copy=True) for k, v in encoder.state_dict().items()},
            "standardizer_mean": torch.as_tensor(np.asarray(standardizer.mean_, dtype=np.float64)),
            "standardizer_std": torch.as_tensor(np.asarray(standardizer.std_, dtype=np.float64)),
        },
        path,
    )
    return path


def load_encoder(path, n_channels: int | None = None):
    """Read an encoder checkpoint safely -> (config dict, encoder module with its weights, standardizer).

    n_channels: the channel count of the data it will see; a mismatch is a ValueError.
    """
    state = load_safely(path)
    if not isinstance(state, dict) or state.get("format") != ENCODER_FORMAT:
        raise ValueError(f"{str(path)!r} is not a tsrep encoder checkpoint (format {ENCODER_FORMAT!r} expected)")
    try:
        config = json.loads(state["config_json"])
        mean = state["standardizer_mean"].numpy()
        std = state["standardizer_std"].numpy()
        weights = state["encoder"]
    except (KeyError, TypeError, json.JSONDecodeError, AttributeError) as exc:
        raise ValueError(f"encoder checkpoint {str(path)!r} is incomplete or corrupt: {exc!r}") from exc
    if n_channels is not None and int(config["in_channels"]) != int(n_channels):
        raise ValueError(
            f"encoder checkpoint {str(path)!r} was pretrained on {config['in_channels']} channel(s), "
            f"but X has {n_channels}"
        )
    standardizer = ChannelStandardizer(config.get("scaling", "standard"))
    standardizer.mean_, standardizer.std_ = mean, std
    with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
        encoder = build_encoder(config)
    try:
        encoder.load_state_dict(weights)
    except RuntimeError as exc:
        raise ValueError(f"encoder checkpoint {str(path)!r} does not match its configuration: {exc}") from exc
    return config, encoder, standardizer


class _Pooled(torch.nn.Module):
    def __init__(self, encoder, pool):
        super().__init__()
        self.encoder, self.pool = encoder, pool

    def forward(self, x, valid=None):
        return self.pool(self.encoder(x, valid), valid)


class TSRepEncoder(BaseCollectionTransformer):
    """Unsupervised EA-DC-Transformer representations by masked reconstruction (Wang et al. 2023, Sec. 3.3.2).

    ``fit(X)`` standardises X per channel and pretrains the encoder with TST masking (geometric
    spans per variable, Eq. 7-8); ``transform(X)`` returns one pooled vector per series,
    ``(n_cases, d_model)`` (``(n_cases, d_model * max_len)`` with pooling="flatten"), so it feeds any
    scikit-learn model in a Pipeline. Input as the tsrep estimators: 3-D array, 2-D array
    (univariate) or a list of 2-D arrays of unequal length; NaN is interpolated.

    Parameters
    ----------
    d_model : int, default=64
        Hidden width d, the length of each representation vector (with mean or max pooling).
    n_blocks : int, default=3
        Blocks of two layers; the dilation of the convolution branch doubles per block.
    n_heads : int, default=8
        Attention heads; must divide the attention width round(p * d_model).
    p : float in [0, 1], default=0.25
        Share of the channels given to attention (0: dilated convolution only, 1: EA-Transformer).
    alpha : float in [0, 1], default=0.5
        Weight of the previous layer's attention logits in the evolving step (Eq. 1).
    beta : float in [0, 1], default=0.5
        Weight of the convolved attention map in the evolving step (Eq. 1); alpha = beta = 0 is
        plain attention.
    attn_kernel_size : int, default=3
        Odd kernel size of the attention-map convolution.
    attention : str, default="evolving"
        Attention kind of every layer, as in :class:`~tsrep.EADCTransformerClassifier`.
    kernel_size : int, default=3
        Kernel of the dilated convolution branch.
    dim_feedforward : int or None, default=None
        Width of the position-wise feed-forward network; None means 4 * d_model.
    dropout : float in [0, 1), default=0.1
        Dropout after the input projection and inside every layer.
    pooling : {"mean", "max", "flatten"}, default="mean"
        How ``transform`` turns the (n_timepoints, d_model) output of a series into one vector:
        mean or max over its valid steps, or the flattened sequence (fixed maximum length).
    norm : {"batch", "layer"}, default="batch"
        Padding-aware BatchNorm (statistics skip padded steps) or LayerNorm.
    scaling : {"standard", "symlog"}, default="standard"
        Per-channel standardisation fitted in ``fit``; "symlog" first maps x to
        sign(x) * log(1 + abs(x)).
    pretrain_epochs : int >= 0, default=50
        Epochs of masked reconstruction in fit (0: a randomly initialised encoder).
    mask_ratio : float in (0, 1), default=0.15
        Share of the values masked in every epoch.
    mask_mean_length : float >= 1, default=3
        Mean length of the masked spans (geometric masking).
    masking : {"geometric", "bernoulli"}, default="geometric"
        TST's per-variable geometric spans, or every value masked independently.
    lr : float, default=1e-3
        Learning rate (constant).
    batch_size : int, default=64
        Series per optimiser step.
    optimizer : str or torch.optim.Optimizer subclass, default="radam"
        Any torch.optim or torch-optimizer name; "radam" uses betas (0.9, 0.99).
    optimizer_kwargs : dict or None, default=None
        Extra keyword arguments of the optimiser.
    grad_clip : float or None, default=4.0
        Largest gradient norm (None: no clipping).
    checkpoint : path or None, default=None
        Resumable pretraining state, written after every epoch; a fit that finds the file resumes
        after its last finished epoch. The file records a hash of the training data and every
        parameter but verbose, device, checkpoint and pretrain_epochs: a fit on other data or with
        other parameters raises ValueError naming what differs, and leaves the file alone, as does
        a fit with fewer pretrain_epochs than the file already holds (a larger budget continues it).
    device : {"auto", "cpu", "cuda"} or torch device string, default="auto"
        Where the encoder trains and runs ("auto": a GPU when there is one).
    random_state : int, RandomState or None, default=None
        Seed of the initial weights, the shuffles and the masks.
    verbose : bool, default=False
        Show the progress of pretraining (reconstruction loss per epoch).

    Attributes
    ----------
    encoder_ : DCTransformerEncoder
        The pretrained encoder.
    config_ : dict
        Its configuration (what ``save`` writes).
    standardizer_ : ChannelStandardizer
        Standardisation fitted on the pretraining data.
    loss_history_ : list of float
        Masked-reconstruction loss per epoch.

    Examples
    --------
    >>> from aeon.datasets import load_basic_motions
    >>> from tsrep import TSRepEncoder
    >>> X, y = load_basic_motions(split="train")
    >>> encoder = TSRepEncoder(d_model=16, n_heads=2, n_blocks=1, pretrain_epochs=2, random_state=0)
    >>> Z = encoder.fit_transform(X)  # no labels used
    >>> Z.shape, len(encoder.loss_history_)
    ((40, 16), 2)

    A saved encoder starts a classifier, whose head alone is new:

    >>> import os, tempfile
    >>> from tsrep import EADCTransformerClassifier
    >>> path = encoder.save(os.path.join(tempfile.mkdtemp(), "encoder.pt"))
    >>> clf = EADCTransformerClassifier(pretrained_encoder=path, max_epochs=1, min_steps=0).fit(X, y)
    >>> clf.n_parameters_ > 0
    True
    """

    _tags = {
        "X_inner_type": ["np-list", "numpy3D"],
        "output_data_type": "Tabular",
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "capability:missing_values": True,
        "fit_is_empty": False,
        "algorithm_type": "deeplearning",
        "python_dependencies": "torch",
        "non_deterministic": False,
    }

    def __init__(
        self,
        d_model=64,
        n_blocks=3,
        n_heads=8,
        p=0.25,
        alpha=0.5,
        beta=0.5,
        attn_kernel_size=3,
        attention="evolving",
        kernel_size=3,
        dim_feedforward=None,
        dropout=0.1,
        pooling="mean",
        norm="batch",
        scaling="standard",
        pretrain_epochs=50,
        mask_ratio=0.15,
        mask_mean_length=3,
        masking="geometric",
        lr=1e-3,
        batch_size=64,
        optimizer="radam",
        optimizer_kwargs=None,
        grad_clip=4.0,
        checkpoint=None,
        device="auto",
        random_state=None,
        verbose=False,
    ):
        self.d_model = d_model
        self.n_blocks = n_blocks
        self.n_heads = n_heads
        self.p = p
        self.alpha = alpha
        self.beta = beta
        self.attn_kernel_size = attn_kernel_size
        self.attention = attention
        self.kernel_size = kernel_size
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.pooling = pooling
        self.norm = norm
        self.scaling = scaling
        self.pretrain_epochs = pretrain_epochs
        self.mask_ratio = mask_ratio
        self.mask_mean_length = mask_mean_length
        self.masking = masking
        self.lr = lr
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.optimizer_kwargs = optimizer_kwargs
        self.grad_clip = grad_clip
        self.checkpoint = checkpoint
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        super().__init__()

    def _preprocess_collection(self, X, store_metadata=True):
        check_not_empty(X)
        return super()._preprocess_collection(X, store_metadata)

    def _validate(self):
        validate_backbone_params(
            self.d_model, self.n_blocks, self.n_heads, self.p, self.alpha, self.beta,
            self.attn_kernel_size, self.kernel_size, self.dropout,
        )
        validate_masking(self.mask_ratio, self.mask_mean_length, self.masking)
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        if isinstance(self.pretrain_epochs, bool) or not isinstance(self.pretrain_epochs, numbers.Integral) or self.pretrain_epochs < 0:
            raise ValueError(f"pretrain_epochs must be an integer >= 0, got {self.pretrain_epochs!r}")
        validate_training_params(
            self, ("pooling", "scaling", "dim_feedforward", "lr", "batch_size", "grad_clip", "optimizer")
        )
        return resolve_device(self.device)

    def _pretrain_config(self) -> PretrainConfig:
        return PretrainConfig(
            epochs=int(self.pretrain_epochs), lr=self.lr, batch_size=int(self.batch_size), optimizer=self.optimizer,
            optimizer_kwargs=self.optimizer_kwargs, grad_clip=self.grad_clip, mask_ratio=float(self.mask_ratio),
            mask_mean_length=float(self.mask_mean_length), masking=self.masking, verbose=self.verbose,
        )

    def _checkpoint_settings(self, seed: int) -> dict:
        """The parameters a pretraining checkpoint must agree on to be resumed: all but where it
        runs (device), what it prints (verbose), the file itself, and the epoch budget (it may grow)."""
        settings = self.get_params(deep=False)
        for name in ("verbose", "device", "checkpoint", "pretrain_epochs"):
            settings.pop(name)
        if not (settings["random_state"] is None or isinstance(settings["random_state"], numbers.Integral)):
            settings["random_state"] = seed  # a RandomState object: the seed it gave
        return settings

    def _fit(self, X, y=None):
        device = self._validate()
        seed = seed_from(self.random_state)
        cases = as_case_list(X)
        self.standardizer_ = ChannelStandardizer(self.scaling).fit(cases)
        data = prepare_series(cases, self.standardizer_)
        self.config_ = {
            "in_channels": int(cases[0].shape[0]),
            "max_len": int(max(c.shape[1] for c in cases)),
            "d_model": int(self.d_model), "n_blocks": int(self.n_blocks), "n_heads": int(self.n_heads),
            "p": float(self.p), "alpha": float(self.alpha), "beta": float(self.beta),
            "attn_kernel_size": int(self.attn_kernel_size), "kernel_size": int(self.kernel_size),
            "dim_feedforward": None if self.dim_feedforward is None else int(self.dim_feedforward),
            "dropout": float(self.dropout), "norm": self.norm, "attention": self.attention,
            "scaling": self.scaling, "pooling": self.pooling,
        }
        fork_devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=fork_devices):
            torch.manual_seed(seed)
            encoder = build_encoder(self.config_)
            model = ReconstructionModel(encoder, self.config_["in_channels"]).to(device)
            generator = torch.Generator().manual_seed(seed)
            self.loss_history_ = pretrain_masked(
                model, data, self._pretrain_config(), device, generator,
                checkpoint=self.checkpoint, settings=self._checkpoint_settings(seed),
            )
        self.encoder_ = model.encoder.eval()
        self.reconstruction_head_ = model.reconstruct
        return self

    def _transform(self, X, y=None) -> np.ndarray:
        device = resolve_device(self.device)
        data = prepare_series(X, self.standardizer_)
        if self.pooling == "flatten" and data.values.shape[1] > self.config_["max_len"]:
            raise ValueError(
                f"X has a series of {data.values.shape[1]} steps, longer than the longest training series "
                f"({self.config_['max_len']}); pooling='flatten' needs series no longer than that"
            )
        model = _Pooled(self.encoder_, SequencePooling(self.pooling, self.config_["max_len"])).to(device)
        return predict_outputs(model, data, int(self.batch_size), device).double().numpy()

    # ----------------------------------------------------------------- checkpoints
    def save(self, path) -> Path:
        """Write the pretrained encoder (weights + JSON configuration + standardisation) to `path`."""
        self._check_is_fitted()
        return save_encoder(path, self.config_, self.encoder_, self.standardizer_)

    @classmethod
    def load(cls, path, **params) -> TSRepEncoder:
        """A fitted TSRepEncoder from a checkpoint; `params` override constructor parameters (device, ...)."""
        config, encoder, standardizer = load_encoder(path)
        arch = {k: config[k] for k in ("d_model", "n_blocks", "n_heads", "p", "alpha", "beta", "attn_kernel_size",
                                          "kernel_size", "dim_feedforward", "dropout", "norm", "attention")
                if k in config}
        arch.update(scaling=config.get("scaling", "standard"), pooling=config.get("pooling", "mean"))
        arch.update(params)
        self = cls(**arch)
        self.config_, self.encoder_, self.standardizer_ = config, encoder.eval(), standardizer
        self.loss_history_ = []
        self.is_fitted = True
        # What aeon's fit would have recorded, so that transform's input checks work.
        self.metadata_ = {"multivariate": config["in_channels"] > 1, "n_channels": config["in_channels"]}
        return self

    # ----------------------------------------------------------------- pickling
    def __getstate__(self):
        state = dict(super().__getstate__())
        encoder = state.pop("encoder_", None)
        state.pop("reconstruction_head_", None)
        if encoder is not None:
            state["_encoder_state"] = cpu_state_dict(encoder)
        return state

    def __setstate__(self, state):
        state = dict(state)
        weights = state.pop("_encoder_state", None)
        super().__setstate__(state)
        if weights is not None:
            with torch.random.fork_rng(devices=[]):
                encoder = build_encoder(self.config_)
            encoder.load_state_dict(weights)
            self.encoder_ = encoder.eval()

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "pretrain_epochs": 2, "batch_size": 8,
                "random_state": 0}
