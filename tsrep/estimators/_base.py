"""What the EA-DC-Transformer classifier and regressor share: their parameters, their checks and the
network; training and prediction are the shared harness's (tsrep.estimators._harness)."""

from __future__ import annotations

import numpy as np

from tsrep.backbones import DCTransformerEncoder, SeriesModel
from tsrep.backbones.dc_transformer import split_width
from tsrep.estimators._constraints import EA_DC_TRANSFORMER
from tsrep.estimators._cost import check_front_end_combinations, compiled_if_asked, encoder_cost_options
from tsrep.estimators._harness import DeepSeriesEstimator
from tsrep.estimators._memory import check_estimator_memory
from tsrep.estimators._pretraining import (
    build_encoder,
    check_pretraining_combinations,
    pretrain_stage,
    start_from_checkpoint,
)
from tsrep.nn.attention_kinds import validate_attention_options
from tsrep.nn.interacting import check_interacting_heads
from tsrep.nn.patching import n_tokens, resolve_front_end

__all__ = ["EADCTransformerMixin"]


class EADCTransformerMixin(DeepSeriesEstimator):
    """The parameters, checks and network EA-DC-Transformer classifiers and regressors share.

    Parameters are stored untouched in __init__ and validated in fit (scikit-learn contract); they
    are documented on the estimators: EADCTransformerClassifier, EADCTransformerRegressor.
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
        label_smoothing="auto",
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
    _parameter_constraints = {**DeepSeriesEstimator._parameter_constraints, **EA_DC_TRANSFORMER}

    def _check_combinations(self) -> None:
        super()._check_combinations()
        d_attn = split_width(self.d_model, self.p)[0]
        if self.p > 0 and d_attn == 0:
            raise ValueError(f"p={self.p} gives no attention channel at d_model={self.d_model}; use p=0 or a larger p")
        if d_attn > 0 and d_attn % self.n_heads != 0:
            raise ValueError(f"n_heads={self.n_heads!r} must divide the attention width round(p * d_model) = {d_attn}")
        if self.attn_kernel_size % 2 == 0:
            raise ValueError(f"attn_kernel_size must be a positive odd integer, got {self.attn_kernel_size!r}")
        validate_attention_options(
            self.attention, self.head_mixing, self.deacon_m, self.n_heads, d_attn,
            self.deacon_dp, self.deacon_xi, self.deacon_inner_steps,
        )
        check_pretraining_combinations(self)
        check_front_end_combinations(self)

    # ----------------------------------------------------------------- the harness's hooks
    def _fit_front_end(self, cases: list) -> None:
        if self.pretrained_encoder is not None:
            # Keep the checkpoint's standardisation and positions: its encoder was trained on them.
            start_from_checkpoint(self, int(cases[0].shape[0]))
            return
        super()._fit_front_end(cases)  # standardisation and lengths
        # patch_len="auto": the token rule of tsrep.nn.patching, fixed here on the training data.
        self.patch_len_, self.patch_stride_ = resolve_front_end(
            self.patch_len, self.patch_stride, self.downsample, self.n_channels_, self.max_len_,
            per_step_only=bool(self.pretrain_epochs),
        )

    def _check_training_data(self, data) -> None:
        if str(self.attention).startswith("interacting"):  # Eq. 13: say so, never clamp n_heads
            # n counts the tokens attention sees: one per stride of a patch or downsample front end
            # (patch_stride None: the patch length); a checkpoint's encoder has one token per step.
            from_checkpoint = self.encoder_config_ is not None
            stride = 1 if from_checkpoint else self.patch_stride_ or self.patch_len_ or self.downsample or 1
            mean_tokens = float(np.mean([n_tokens(int(length), stride) for length in data.valid.sum(1)]))
            check_interacting_heads(self.n_heads, split_width(self.d_model, self.p)[0], mean_tokens)

    def _check_memory(self, n_cases: int, concurrent: int) -> None:
        check_estimator_memory(self, n_cases, concurrent=concurrent)

    def _pretrain(self, model, data, device, generator, checkpoint_path, settings) -> list:
        # Pretrained weights and/or masked-reconstruction pretraining, then optional freezing.
        return pretrain_stage(self, model, data, device, generator, checkpoint_path, settings)

    # ----------------------------------------------------------------- model
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
