"""Unsupervised representations: TSRepEncoder, masked-reconstruction pretraining of an EA-DC-Transformer
encoder, whose ``save`` writes an encoder checkpoint (tsrep.backbones.checkpoint: the weights, the
standardisation and the architecture in one pickle-free model file). Classifiers and regressors start from one
with ``pretrained_encoder=path`` (only their output head is new).
"""

from __future__ import annotations

import warnings
import numbers
from pathlib import Path

import numpy as np
import torch
from aeon.transformations.collection import BaseCollectionTransformer

from tsrep.backbones import DCTransformerConfig
from tsrep.data import ChannelStandardizer, as_case_list
from tsrep.estimators._checks import check_not_empty, prepare_series, resolve_device, seed_from
from tsrep.estimators._checks import check_finite_outputs, check_optimizer, check_values
from tsrep.estimators._memory import check_training_memory
from tsrep.estimators._parameters import ENCODER, LONG_RUNS, PREPROCESSING, TRAINING
from tsrep.estimators._parameters import check_declared, fields_table, keyword_parameters
from tsrep.estimators._saving import params_to_json
from tsrep.nn.pooling import SequencePooling
from tsrep.training import predict_outputs
from tsrep.training.callbacks import check_callbacks
from tsrep.training.distributed import broadcast_object, setup_data_parallel
from tsrep.training.loop import cpu_state_dict
from tsrep.training.masking import ReconstructionModel, validate_masking
from tsrep.training.pretrain import PretrainConfig, pretrain_masked
from tsrep.training.resume import PRETRAIN_STATE_FILE, check_writable_directory
from tsrep._serialization import check_regular_file, from_json, to_json
from tsrep.backbones.checkpoint import encoder_from_config, load_encoder, save_encoder

#: TSRepEncoder's parameters besides the network's (ENCODER) and the preprocessing: the settings of masked
#: pretraining (PretrainConfig's fields) with its own defaults, 50 epochs of RAdam (the paper's optimiser),
#: then where its state is kept and where it runs.
PRETRAINING_RUN = {
    **fields_table(
        PretrainConfig, "pretrain_epochs", "mask_ratio", "mask_mean_length", "masking", "lr", "batch_size",
        "optimizer", "optimizer_kwargs", "grad_clip", pretrain_epochs=50, optimizer="radam",
    ),
    **{name: LONG_RUNS[name] for name in ("checkpoint_dir", "callbacks")},
    **{name: TRAINING[name] for name in ("device", "random_state")},
    **fields_table(PretrainConfig, "verbose"),
}


class _Pooled(torch.nn.Module):
    def __init__(self, encoder, pool):
        super().__init__()
        self.encoder, self.pool = encoder, pool

    def forward(self, x, valid=None):
        return self.pool(self.encoder(x, valid), valid)


@keyword_parameters(ENCODER, PREPROCESSING, PRETRAINING_RUN)
class TSRepEncoder(BaseCollectionTransformer):
    """Unsupervised EA-DC-Transformer representations by masked reconstruction (Wang et al. 2023, Sec. 3.3.2).

    ``fit(X)`` standardises X per channel and pretrains the encoder with TST masking (geometric
    spans per variable, Eq. 7-8); ``transform(X)`` returns one pooled vector per series,
    ``(n_cases, d_model)`` (``(n_cases, d_model * max_len)`` with pooling="flatten"), so it feeds any
    scikit-learn model in a Pipeline. Input as the tsrep estimators: 3-D array, 2-D array
    (univariate) or a list of 2-D arrays of unequal length; NaN is interpolated (in a 3-D array, trailing steps
    where every channel is NaN are padding).

    Parameters
    ----------
    d_model : int, default=64
        Hidden width d, the length of each representation vector (with mean or max pooling).
    n_blocks : int, default=3
        Blocks of two layers; the dilation of the convolution branch doubles per block.
    n_heads : int, default=4
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
    head_mixing : {None, "deacon-direct", "deacon-average", "deacon-nonlinear"}, default=None
        DEACON PCA layer over the head outputs, as in :class:`~tsrep.EADCTransformerClassifier`
        (pretraining then trains it by the DEACON rule).
    deacon_m : int or None, default=None
        Components kept by the PCA layer (None: all heads); needs head_mixing.
    deacon_dp : float > 0, default=0.2
        Norm of every DEACON step of the PCA weights (paper: 0.2).
    deacon_xi : float in (0, 1), default=0.8
        Share of the steepest first-order loss decrease demanded of each DEACON step (paper: 0.8).
    deacon_inner_steps : int >= 0, default=500
        GHA-only updates per batch that set the Hebbian direction of the DEACON step (paper: 500).
    kernel_size : int, default=3
        Kernel of the dilated convolution branch.
    dim_feedforward : int or None, default=None
        Width of the position-wise feed-forward network; None means 4 * d_model.
    dropout : float in [0, 1), default=0.1
        Dropout after the input projection and inside every layer.
    norm : {"batch", "layer"}, default="batch"
        Padding-aware BatchNorm (statistics skip padded steps) or LayerNorm.
    pooling : {"mean", "max", "flatten"}, default="mean"
        How ``transform`` turns the (n_timepoints, d_model) output of a series into one vector:
        mean or max over its valid steps, or the flattened sequence (fixed maximum length).
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
    checkpoint_dir : path or None, default=None
        Directory where the resumable pretraining state is written atomically after every epoch
        (``pretrain-state.pt``, the file the estimators' ``checkpoint_dir`` holds with
        pretrain_epochs > 0); a fit that finds it resumes after its last finished epoch. The state
        records a hash of the training data and every parameter but verbose, device,
        checkpoint_dir and pretrain_epochs: a fit on other data or with other parameters raises
        ValueError naming what differs, and leaves the file alone, as does a fit with fewer
        pretrain_epochs than the file already holds (a larger budget continues it).
    callbacks : Callback, list of Callback or None, default=None
        Follow pretraining epoch by epoch (logs: train_loss, the masked-reconstruction loss; lr;
        seconds) and stop it when on_epoch_end returns True (tsrep.training.callbacks).
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
    >>> path = encoder.save(os.path.join(tempfile.mkdtemp(), "encoder.safetensors"))
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

    def _preprocess_collection(self, X, store_metadata=True):
        check_not_empty(X)
        with warnings.catch_warnings():  # numpy's overflow and all-NaN notes from aeon's checks: check_values says more
            warnings.simplefilter("ignore", RuntimeWarning)
            X = super()._preprocess_collection(X, store_metadata)
        check_values(X, fitting=store_metadata)  # aeon's fit stores metadata, transform does not
        return X

    def _validate(self):
        """Check every parameter (the declared constraints, then the rules between them); the device."""
        check_declared(self)
        DCTransformerConfig.check_combinations(self.get_params(deep=False))
        validate_masking(self.mask_ratio, self.mask_mean_length, self.masking)
        check_optimizer(self.optimizer, self.optimizer_kwargs, self.lr)
        check_callbacks(self.callbacks, "callbacks")
        if self.checkpoint_dir is not None:  # a fit that finds a state there reads it: it must be a file
            check_regular_file(self._checkpoint_file(), "checkpoint_dir", "a pretraining state file (written by a "
                               "fit with this checkpoint_dir)", missing_ok=True)
        return resolve_device(self.device)

    def _checkpoint_file(self) -> Path | None:
        """The pretraining state in checkpoint_dir (created, and proved writable, here)."""
        if self.checkpoint_dir is None:
            return None
        return check_writable_directory(self.checkpoint_dir) / PRETRAIN_STATE_FILE

    def _checkpoint_settings(self, seed: int) -> dict:
        """The parameters a pretraining checkpoint must agree on to be resumed: all but where it
        runs (device), what it prints (verbose), the file itself, and the epoch budget (it may grow)."""
        settings = self.get_params(deep=False)
        for name in ("verbose", "device", "checkpoint_dir", "pretrain_epochs", "callbacks"):
            settings.pop(name)
        if not (settings["random_state"] is None or isinstance(settings["random_state"], numbers.Integral)):
            settings["random_state"] = seed  # a RandomState object: the seed it gave
        return settings

    def _fit(self, X, y=None):
        device = setup_data_parallel(self._validate())  # under torchrun: join the process group, take this rank's GPU
        seed = broadcast_object(seed_from(self.random_state))  # random_state=None: rank 0's draw on every rank
        cases = as_case_list(X, trailing_nan_is_padding=True)  # a NaN-padded 3-D array: series of their own length
        self.standardizer_ = ChannelStandardizer(self.scaling).fit(cases)
        data = prepare_series(cases, self.standardizer_)
        self.config_ = {
            "in_channels": int(cases[0].shape[0]),
            "max_len": int(max(c.shape[1] for c in cases)),
            **DCTransformerConfig.from_params(self.get_params(deep=False)).to_dict(),
            "scaling": self.scaling, "pooling": self.pooling,
        }
        check_training_memory(  # before any weight is built: refuse what cannot fit, with what would help
            max_len=self.config_["max_len"], stride=None, n_cases=len(cases), batch_size=self.batch_size,
            in_features=self.config_["in_channels"], d_model=self.d_model, n_blocks=self.n_blocks,
            n_heads=self.n_heads, p=self.p, kernel_size=self.kernel_size, dim_feedforward=self.dim_feedforward,
            attention=self.attention, checkpointing=False, device=device, what="pretraining", options=("batch_size",),
        )
        fork_devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=fork_devices):
            torch.manual_seed(seed)
            encoder = encoder_from_config(self.config_)
            model = ReconstructionModel(encoder, self.config_["in_channels"]).to(device)
            generator = torch.Generator().manual_seed(seed)
            self.loss_history_ = pretrain_masked(
                model, data, PretrainConfig.from_estimator(self), device, generator,
                checkpoint=self._checkpoint_file(), settings=self._checkpoint_settings(seed), callbacks=self.callbacks,
                fit_info={"params": self.get_params(deep=False), "member": None, "phase": "pretrain",
                          "estimator": self},
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
        return check_finite_outputs(predict_outputs(model, data, int(self.batch_size), device)).double().numpy()

    # ----------------------------------------------------------------- checkpoints
    def save(self, path) -> Path:
        """Write the pretrained encoder to `path`: one safetensors file of the weights and the
        standardisation with JSON of the configuration, parameters and loss history in its metadata
        (no pickle), written atomically. ``callbacks`` are not saved. Returns the path."""
        self._check_is_fitted()
        document = {
            "params": params_to_json(self.get_params(deep=False), "TSRepEncoder"),
            "fitted": {"loss_history_": to_json(list(self.loss_history_), "loss_history_"),
                       "metadata_": to_json(getattr(self, "metadata_", {}), "metadata_")},
        }
        return save_encoder(path, self.config_, self.encoder_, self.standardizer_, document)

    @classmethod
    def load(cls, path, **params) -> TSRepEncoder:
        """A fitted TSRepEncoder from a checkpoint; `params` override constructor parameters (device, ...)."""
        config, encoder, standardizer, document = load_encoder(path, with_document=True)
        arch = DCTransformerConfig.from_params(config).to_dict()
        arch.update(scaling=config.get("scaling", "standard"), pooling=config.get("pooling", "mean"))
        saved = from_json(document.get("params", {}), "params")
        known = set(cls().get_params(deep=False))
        if not isinstance(saved, dict) or set(saved) - known:
            raise ValueError(f"encoder checkpoint {str(path)!r} has parameters that TSRepEncoder does not take")
        device = saved.get("device")
        if isinstance(device, str) and device.startswith("cuda") and not torch.cuda.is_available():
            saved["device"] = "cpu"  # saved on a GPU machine: this one has none
        self = cls(**{**saved, **arch, **params})
        self.config_, self.encoder_, self.standardizer_ = config, encoder.eval(), standardizer
        fitted = from_json(document.get("fitted", {}), "fitted")
        self.loss_history_ = [float(v) for v in fitted.get("loss_history_", [])]
        self.is_fitted = True
        # What aeon's fit would have recorded, so that transform's input checks work.
        self.metadata_ = fitted.get("metadata_") or {
            "multivariate": config["in_channels"] > 1, "n_channels": config["in_channels"]
        }
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
                encoder = encoder_from_config(self.config_)
            encoder.load_state_dict(weights)
            self.encoder_ = encoder.eval()

    @classmethod
    def _get_test_params(cls, parameter_set="default"):
        return {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "pretrain_epochs": 2, "batch_size": 8,
                "random_state": 0}
