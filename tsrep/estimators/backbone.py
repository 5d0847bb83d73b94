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

from aeon.classification.base import BaseClassifier
from aeon.regression.base import BaseRegressor

from tsrep.backbones import SeriesModel
from tsrep.backbones.baselines import baseline_builder, baseline_names
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
    """Parameters
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
    pooling, scaling, lr, batch_size, max_epochs, min_steps, validation_fraction, patience, optimizer,
    optimizer_kwargs, weight_decay, lr_schedule, label_smoothing, class_weight, augmentation, grad_clip, n_estimators,
    n_jobs, device, random_state, verbose, callbacks, checkpoint_dir, warm_start :
        As EADCTransformerClassifier: the baselines train with the same recipe.
    norm : {None, "layer", "batch"}, default=None
        Normalisation of ResNet and the transformer (None: BatchNorm for both, as in ResNet and TST,
        and as the EA-DC-Transformer's default); both are padding-aware. LSTM, GRU and the dilated
        conv have none.
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
    __doc__ = (
        "Time series classifier with a baseline backbone (LSTM, GRU, ResNet, dilated conv, TST), mean-pooled,\n"
        "MLP head, cross-entropy: the EA-DC-Transformer's training harness with another encoder.\n\n"
        + _BackboneMixin.__doc__
    )


class BackboneRegressor(_BackboneMixin, SeriesRegressorMixin, BaseRegressor):
    __doc__ = (
        "Time series regressor with a baseline backbone (LSTM, GRU, ResNet, dilated conv, TST), mean-pooled,\n"
        "linear head, MSE on standardised targets: the EA-DC-Transformer's harness with another encoder.\n\n"
        + _BackboneMixin.__doc__
    )
