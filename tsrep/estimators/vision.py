"""Image classification and regression with EA-ViT trained from scratch (Dosovitskiy et al., "An Image is Worth
16x16 Words: Transformers for Image Recognition at Scale", ICLR 2021, with the evolving attention of Wang et al.,
"Convolution-enhanced Evolving Attention Networks", IEEE TPAMI 2023, Sec. 4.4), as scikit-learn estimators that
take arrays of images."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils._param_validation import StrOptions

from tsrep.backbones.config import positive_int, unit_interval
from tsrep.backbones.vision import EAViT
from tsrep.estimators._parameters import ENCODER, Declared, fields_table, keyword_parameters
from tsrep.estimators._tensor_base import (
    FITTED_ATTRIBUTES_DOC, LOOP_SETTINGS, TENSOR_COST, TensorClassifierMixin, TensorEstimator, TensorRegressorMixin,
    tensor_training,
)
from tsrep.training.config import TrainConfig

__all__ = ["EAViTClassifier", "EAViTRegressor", "auto_patch_size", "check_images"]

#: The network; alpha 0.1, beta 0.3 are the paper's EA-ViT setting (Sec. 4.4), as in tsrep.backbones.EAViT.
VISION_NETWORK = {
    "patch_size": Declared(
        "auto", [StrOptions({"auto"}), positive_int()],
        'Side of the square patches; it must divide the height and width. "auto": the largest side giving at least '
        "16 patches (a 4 x 4 grid; 1 when none does): 2 for 8 x 8 images, 7 for 28 x 28, 8 for 32 x 32 "
        "(tsrep.estimators.vision.auto_patch_size). The value used is ``patch_size_``. Attention maps are "
        "(1 + patches)^2 per head: a smaller patch costs quadratically more.",
    ),
    "d_model": Declared(64, [positive_int()], "Token width."),
    "n_layers": Declared(4, [positive_int()], "Encoder layers, each an attention and an MLP block."),
    "n_heads": Declared(4, [positive_int()], "Heads per layer; must divide d_model."),
    "dim_feedforward": Declared(None, [positive_int(), None], "Hidden width of the MLPs (None: 4 * d_model)."),
    "alpha": Declared(
        0.1, [unit_interval("both")],
        "Evolving attention (Eq. 1): weight of the previous layer's attention logits. The paper's EA-ViT setting "
        "(Sec. 4.4) is alpha 0.1, beta 0.3; alpha = beta = 0 gives the plain ViT.",
    ),
    "beta": Declared(
        0.3, [unit_interval("both")], "Evolving attention (Eq. 1): weight of the convolved attention maps."
    ),
    "attn_kernel_size": ENCODER["attn_kernel_size"],
    "dropout": Declared(
        0.0, [unit_interval("left")], "Dropout on the embeddings, in the MLPs and on the attention output."
    ),
}
#: From scratch on small images: tsrep.benchmarks.vision's settings on digits (batch 32, lr 3e-3, cosine, 30 epochs).
VISION_TRAINING = tensor_training(fields_table(
    TrainConfig, *LOOP_SETTINGS, lr=3e-3, batch_size=32, max_epochs=30, lr_schedule="cosine", grad_clip=1.0
))
#: patch_size="auto" gives at least this many patches (a 4 x 4 grid on a square image).
MIN_PATCHES = 16


def auto_patch_size(height: int, width: int, min_patches: int = MIN_PATCHES) -> int:
    """The largest patch side dividing both `height` and `width` that still cuts the image into at least
    `min_patches` patches; 1 (one token per pixel) when no larger one does. 8 x 8 digits get 2 (16 patches),
    28 x 28 MNIST 7 (16 patches), 32 x 32 CIFAR 8: the settings of tsrep.benchmarks.vision."""
    for side in range(min(height, width), 1, -1):
        if height % side == 0 and width % side == 0 and (height // side) * (width // side) >= min_patches:
            return side
    return 1


def check_images(X, image_shape=None) -> np.ndarray:
    """X as a float32 array (n, C, H, W): images (n, C, H, W), or (n, H, W) of one channel. ValueError or
    TypeError naming what is wrong: another number of dimensions, no numbers, NaN or infinite pixels, or
    (with `image_shape`, the fitted (C, H, W)) images of another shape."""
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    try:
        images = np.asarray(X)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"X must be an array of equally sized images, (n, C, H, W) or (n, H, W): {exc}") from None
    if images.dtype.kind not in "biuf":
        raise TypeError(f"X must hold numbers (pixel values), got an array of dtype {images.dtype}")
    if images.ndim not in (3, 4):
        raise ValueError(
            f"X must be images of shape (n_images, n_channels, height, width) or (n_images, height, width), got "
            f"an array of {images.ndim} dimension(s), shape {images.shape}"
        )
    if images.ndim == 3:
        images = images[:, None]
    if 0 in images.shape:
        raise ValueError(f"X is empty: found an image array of shape {images.shape}; every dimension needs at least 1")
    finite = np.isfinite(images).reshape(len(images), -1).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ValueError(f"X holds NaN or infinite pixel values in {len(bad)} image(s), the first at index {bad[0]}; "
                         "give finite numbers")
    if image_shape is not None and images.shape[1:] != tuple(image_shape):
        raise ValueError(f"X has images of shape (channels, height, width) = {images.shape[1:]}, but the estimator "
                         f"was fitted on {tuple(image_shape)}")
    return images.astype(np.float32)


@keyword_parameters(VISION_NETWORK, VISION_TRAINING, TENSOR_COST)
class _EAViTEstimator(TensorEstimator):
    """What EAViTClassifier and EAViTRegressor share: the image checks, the pixel standardisation, the patches
    and the network."""

    _FITTED = ("image_shape_", "patch_size_", "pixel_mean_", "pixel_std_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    def _check_X(self, X, fit: bool) -> np.ndarray:
        return check_images(X, None if fit else self.image_shape_)

    def _fit_inputs(self, X: np.ndarray) -> None:
        channels, height, width = (int(n) for n in X.shape[1:])
        self.image_shape_ = (channels, height, width)
        if self.patch_size == "auto":
            self.patch_size_ = auto_patch_size(height, width)
        elif height % self.patch_size or width % self.patch_size:
            raise ValueError(f"patch_size={self.patch_size} must divide the image height {height} and width {width}")
        else:
            self.patch_size_ = self.patch_size
        pixels = X.transpose(1, 0, 2, 3).reshape(channels, -1).astype(np.float64)
        self.pixel_mean_ = pixels.mean(axis=1).tolist()
        self.pixel_std_ = [float(s) or 1.0 for s in pixels.std(axis=1)]  # a constant channel is left as it is

    def _model_inputs(self, X: np.ndarray) -> torch.Tensor:
        mean = np.asarray(self.pixel_mean_, dtype=np.float32)[:, None, None]
        std = np.asarray(self.pixel_std_, dtype=np.float32)[:, None, None]
        return torch.from_numpy((X - mean) / std)

    def _network_config(self, n_outputs: int) -> dict:
        return {
            "image_size": self.image_shape_[1:], "patch_size": self.patch_size_, "in_channels": self.image_shape_[0],
            "n_outputs": n_outputs, "d_model": self.d_model, "n_layers": self.n_layers, "n_heads": self.n_heads,
            "dim_feedforward": self.dim_feedforward, "alpha": self.alpha, "beta": self.beta,
            "attn_kernel_size": self.attn_kernel_size, "dropout": self.dropout,
        }

    def _build_network(self, config: dict, pretrained: bool) -> EAViT:
        settings = dict(config)
        return EAViT(n_classes=settings.pop("n_outputs"), **settings)


_ATTRIBUTES_DOC = """    image_shape_ : tuple of int
        (channels, height, width) of the training images; prediction takes images of this shape.
    patch_size_ : int
        The patch side used (patch_size="auto" resolved).
    pixel_mean_, pixel_std_ : list of float
        The per-channel standardisation of the pixels.
    module_ : tsrep.backbones.EAViT
        The trained network.
    network_config_ : dict
        What the network was built from.
""" + FITTED_ATTRIBUTES_DOC


def _sections(task_attributes: str, sibling: str) -> str:
    """The Attributes and See Also sections of an EA-ViT estimator's docstring: `task_attributes`, the fitted
    attributes of its task; `sibling`, the See Also entry of the estimator of the other task."""
    return f"""    Attributes
    ----------
    {{attributes: {task_attributes}}}
{_ATTRIBUTES_DOC}

    See Also
    --------
    {sibling}
    tsrep.backbones.EAViT : The network, for one's own training loop.
"""


class EAViTClassifier(TensorClassifierMixin, _EAViTEstimator):
    __doc__ = f"""Image classifier: a Vision Transformer with evolving attention (EA-ViT), trained from scratch.

    Takes images as an array (n_images, n_channels, height, width), or (n_images, height, width) for one
    channel, channels first, any numeric dtype. Pixels are standardised per channel with the training
    mean and standard deviation; the image is cut into square patches, each a token (Dosovitskiy et al.,
    "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale", ICLR 2021), with a class
    token whose final state feeds a linear head; every attention layer carries its maps to the next
    through the residual link and convolution of Wang et al., "Convolution-enhanced Evolving Attention
    Networks" (IEEE TPAMI 2023, Eq. 1). Cross-entropy, AdamW and a cosine schedule. Parameters are stored
    untouched in __init__ and validated in fit (scikit-learn contract).

    {{parameters}}

{_sections("classes_ n_classes_", "EAViTRegressor : The same network with one output and MSE.")}
    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from tsrep.estimators import EAViTClassifier
    >>> images, labels = load_digits(return_X_y=True)
    >>> images = images.reshape(-1, 8, 8)[:200]      # (n_images, height, width): one channel
    >>> clf = EAViTClassifier(d_model=16, n_layers=1, n_heads=2, max_epochs=2, random_state=0)
    >>> clf = clf.fit(images, labels[:200])
    >>> clf.patch_size_, clf.predict(images[:3]).shape, clf.predict_proba(images[:3]).shape
    (2, (3,), (3, 10))
    """


class EAViTRegressor(TensorRegressorMixin, _EAViTEstimator):
    __doc__ = f"""Image regressor: :class:`EAViTClassifier`'s network with one output, MSE on standardised targets.

    Takes images as :class:`EAViTClassifier` does and one number per image; the targets are standardised with
    their training mean and standard deviation, and predictions are in the units of y.

    {{parameters}}

{_sections("y_mean_ y_std_", "EAViTClassifier : The same network with a head per class and cross-entropy.")}
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_digits
    >>> from tsrep.estimators import EAViTRegressor
    >>> digits = load_digits()                       # the digit shown, as a float, is the target
    >>> reg = EAViTRegressor(d_model=16, n_layers=1, n_heads=2, max_epochs=2, random_state=0)
    >>> reg = reg.fit(digits.images[:200], np.asarray(digits.target[:200], dtype=float))
    >>> reg.patch_size_, reg.predict(digits.images[:3]).shape, reg.y_std_ > 0
    (2, (3,), True)
    """
