"""Classifier and regressor around any backbone of tsrep.backbones: the baselines of the tables of Wang
et al., "Convolution-enhanced Evolving Attention Networks" (IEEE TPAMI 2023).

``BackboneClassifier(backbone="lstm")`` trains the named encoder on the harness every tsrep estimator
shares (tsrep.estimators._base: input handling, pooling, heads, training recipe, seeding, saving),
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
from tsrep.estimators._checks import resolve_device
from tsrep.estimators._memory import check_backbone_memory
from tsrep.estimators._parameters import BACKBONE, LONG_RUNS, PREPROCESSING, TRAINING, keyword_parameters
from tsrep.estimators._base import DeepSeriesEstimator
from tsrep.estimators._tasks import SeriesClassifierMixin, SeriesRegressorMixin

BACKBONES = baseline_names()
# Each backbone's norm when norm=None: BatchNorm (padding-aware) as in ResNet and TST, and as the
# EA-DC-Transformer's measured default (LayerNorm erases the amplitude of univariate inputs).
DEFAULT_NORM = {"resnet": "batch", "transformer": "batch"}


def baseline_encoder(backbone, in_channels, max_len, d_model, n_blocks, n_heads, kernel_size, dim_feedforward,
                  dropout, norm):
    """The encoder named `backbone`: forward(x (B, T, C), valid (B, T)) -> (B, T, encoder.d_model)."""
    build = baseline_builder(backbone)  # registered in tsrep.backbones.baselines
    norm = norm or DEFAULT_NORM.get(backbone, "batch")
    return build(in_channels, max_len, d_model=d_model, n_blocks=n_blocks, n_heads=n_heads, kernel_size=kernel_size,
                 dim_feedforward=dim_feedforward, dropout=dropout, norm=norm)


#: The baselines train as their papers did: BatchNorm keeps the running averages of training unless asked.
BASELINE_TRAINING = {
    **TRAINING,
    "precise_bn": TRAINING["precise_bn"]._replace(
        default=False,
        doc="After training, recompute the BatchNorm layers' running statistics over shuffled batches of the "
            "unaugmented training set, each batch weighted by its cases (PreciseBN: Wu and Johnson, \"Rethinking "
            "'Batch' in BatchNorm\", 2021; tsrep.training.precise_bn). Off by default so that a baseline trains as "
            'its paper did (the running averages of the last training batches); "auto": off, as in the '
            "EA-DC-Transformer estimators. The value used is ``precise_bn_``.",
    ),
    "blend_minirocket": TRAINING["blend_minirocket"]._replace(
        default=False,
        doc="Blend the network's answer with that of a MiniRocket fitted to the same training data, as the "
            "EA-DC-Transformer estimators do by default (their ``blend_minirocket``: a classifier's probabilities "
            "averaged, a regressor's predictions weighed by their held-out errors). Off by default so that a "
            'baseline answers as its paper did; "auto": on. The value used is ``blend_minirocket_``.',
    ),
}


@keyword_parameters(BACKBONE, PREPROCESSING, BASELINE_TRAINING, LONG_RUNS)
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
        encoder = baseline_encoder(
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

    {parameters}

    Attributes
    ----------
    {attributes: classes_ n_classes_ module_ n_parameters_ history_ best_epoch_ n_epochs_ validation_fraction_
    max_epochs_ min_steps_ patience_ augmentation_ label_smoothing_ mixup_ precise_bn_ blend_minirocket_ minirocket_
    network_weight_
    estimators_}

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

    {parameters}

    Attributes
    ----------
    {attributes: module_ n_parameters_ history_ best_epoch_ n_epochs_ validation_fraction_ max_epochs_ min_steps_
    patience_ mixup_ precise_bn_ augmentation_ y_mean_ y_std_ blend_minirocket_ minirocket_ network_weight_
    estimators_}

    See Also
    --------
    BackboneClassifier : The same encoders with an MLP head and cross-entropy.
    EADCTransformerRegressor : The EA-DC-Transformer on the same harness.
    """
