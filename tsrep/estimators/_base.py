"""What the EA-DC-Transformer classifier and regressor share: their parameters, their checks and the
network; training and prediction are the shared harness's (tsrep.estimators._harness)."""

from __future__ import annotations

import numpy as np

from tsrep.backbones import DCTransformerConfig, DCTransformerEncoder, SeriesModel
from tsrep.backbones.config import split_width
from tsrep.estimators._cost import (
    check_front_end_combinations, compile_options, compiled_if_asked, encoder_cost_options, member_max_tokens,
)
from tsrep.estimators._harness import DeepSeriesEstimator
from tsrep.estimators._memory import check_estimator_memory
from tsrep.estimators._parameters import (
    COST, ENCODER, FRONT_END, LONG_RUNS, PREPROCESSING, PRETRAINING, TRAINING, keyword_parameters,
)
from tsrep.estimators._pretraining import (
    build_encoder,
    check_pretraining_combinations,
    pretrain_stage,
    start_from_checkpoint,
)
from tsrep.nn.interacting import check_interacting_heads
from tsrep.nn.patching import n_tokens, resolve_conv_stem, resolve_front_end, resolve_max_tokens

__all__ = ["EADCTransformerMixin"]


@keyword_parameters(ENCODER, PREPROCESSING, TRAINING, PRETRAINING, COST, FRONT_END, LONG_RUNS)
class EADCTransformerMixin(DeepSeriesEstimator):
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
        check_pretraining_combinations(self)
        check_front_end_combinations(self)
        compile_options(self.compile)

    # ----------------------------------------------------------------- the harness's hooks
    def _fit_front_end(self, cases: list) -> None:
        if self.pretrained_encoder is not None:
            # Keep the checkpoint's standardisation and positions: its encoder was trained on them.
            start_from_checkpoint(self, int(cases[0].shape[0]))
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
            self.n_channels_, self.max_len_, DCTransformerConfig.from_params(self.get_params(deep=False)),
            patch_len=self.patch_len_, patch_stride=self.patch_stride_, downsample=self.downsample,
            # A model saved before the stem existed has no conv_stem_: it was built without one.
            conv_stem=getattr(self, "conv_stem_", None), **encoder_cost_options(self),
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
