"""What the text and image estimators share (tsrep.estimators.text, tsrep.estimators.vision).

Their networks take whole tensors (token ids with their attention mask, images), not padded series, so
they do not use the series harness (tsrep.estimators._base); they follow the same conventions:
parameters declared once as data (tsrep.estimators._parameters; the training settings are TrainConfig's
fields as their loop takes them, :func:`tensor_training`) and stored untouched by ``__init__``,
checked by ``fit`` with errors naming the parameter; fitted attributes ending in ``_``; training by the
shared loop (tsrep.training.tensor_fit.fit_tensors, a tsrep.training.loop.Trainer) with ``callbacks``;
``save`` / ``load`` in tsrep's pickle-free model file (tsrep._serialization).

A subclass gives

    _check_X(X, fit)              the checked inputs (errors naming what is wrong), as a sequence of cases
    _fit_inputs(X)                the fitted preprocessing (attributes ending in ``_``)
    _model_inputs(X)              the network's inputs (tensor, tuple or dict of tensors, one row per case)
    _network_config(n_outputs)    JSON of everything the network is built from (``network_config_``)
    _build_network(config, pretrained)   the network; pretrained=False when load rebuilds it for saved weights
    _FITTED                       its own fitted attributes that the model file keeps

and the task comes from TensorClassifierMixin or TensorRegressorMixin, placed before the subclass.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from tsrep._serialization import ModelFileError, from_json, prefixed, to_json, write_model_file
from tsrep.backbones.config import check_constraints
from tsrep.estimators._checks import (
    check_class_labels, check_enough_cases, check_finite_outputs, check_optimizer, resolve_device, seed_from,
)
from tsrep.estimators._parameters import COST, LONG_RUNS, TRAINING
from tsrep.estimators._saving import _checked_params, _cpu_if_no_cuda, load_estimator, params_to_json
from tsrep.training.tensor_fit import accuracy, fit_tensors, predict_logits
from tsrep.training.callbacks import check_callbacks
from tsrep.training.loop import History, count_parameters

__all__ = [
    "AUTOCAST_DTYPES", "FITTED_ATTRIBUTES_DOC", "LOOP_SETTINGS", "TENSOR_COST", "TensorClassifierMixin",
    "TensorEstimator", "TensorRegressorMixin", "tensor_training",
]

#: TrainConfig's fields that the text and image loop (tsrep.training.tensor_fit.fit_tensors) takes, in the order of
#: the estimators' parameters: ``fields_table(TrainConfig, *LOOP_SETTINGS, lr=...)`` with an estimator's defaults.
LOOP_SETTINGS = ("lr", "batch_size", "max_epochs", "optimizer", "optimizer_kwargs", "weight_decay", "lr_schedule",
                 "grad_clip")


def tensor_training(settings: dict, **notes: str) -> dict:
    """The training parameters of a text or image estimator: `settings` (TrainConfig's LOOP_SETTINGS with the
    estimator's defaults, tsrep.estimators._parameters.fields_table) as the text and image loop takes them,
    then the series estimators' device, random_state and callbacks; `notes`, by parameter name, what an
    estimator adds to a parameter's text (e.g. the paper's grid of its setting)."""
    loop = {
        **settings,
        # fit_tensors holds out no validation split and has no min_steps: max_epochs epochs exactly.
        "max_epochs": settings["max_epochs"]._replace(
            doc="Epochs of training, all of them: these estimators hold out no validation split to stop early on and "
                "take no least number of steps (a callback may stop training sooner)."
        ),
        # fit_tensors knows by name only a per-step cosine decay and a constant lr, not the series loop's schedules.
        "lr_schedule": settings["lr_schedule"]._replace(
            constraints=[StrOptions({"cosine", "none"}), callable],
            doc="Per-step cosine decay from lr to 0, a constant lr, or a callable ``optimizer -> torch scheduler`` "
                "stepped after every epoch.",
        ),
        "device": TRAINING["device"],
        # No validation split, augmentation or ensemble here: the seed draws less than in the series estimators.
        "random_state": TRAINING["random_state"]._replace(
            doc="Seeds the weights drawn at random, dropout and the order of the training batches."
        ),
        # No validation split here: the logs have no val_loss or val_score.
        "callbacks": LONG_RUNS["callbacks"]._replace(
            doc=f"{LONG_RUNS['callbacks'].doc} These estimators hold out no validation split: their logs hold "
                "train_loss, lr and seconds."
        ),
    }
    unknown = set(notes) - set(loop)
    if unknown:
        raise KeyError(f"not training parameters: {sorted(unknown)}")
    return {name: entry._replace(doc=f"{entry.doc} {notes[name]}") if name in notes else entry
            for name, entry in loop.items()}


#: How the network runs, not what it computes (beyond float rounding): the series estimators' mixed_precision
#: (tsrep.estimators._parameters.COST), with the same accepted values; here the whole network runs under
#: autocast, in training and prediction (there: the encoder), and its outputs leave it in float32.
TENSOR_COST = {"mixed_precision": COST["mixed_precision"]._replace(
    doc="Run the network under torch.autocast with bfloat16 on the estimator's device, in training and in "
        "prediction: matrix products and convolutions in bf16, the attention softmax and the loss in float32; the "
        "network's outputs leave it in float32. Fast on GPUs and on CPUs with native bf16; on CPUs without it (AVX2 "
        "only) slower than float32. None: float32 throughout."
)}
#: mixed_precision -> the dtype of torch.autocast (None: no autocast, float32 throughout).
AUTOCAST_DTYPES = {None: None, "bf16": torch.bfloat16}

#: The numpydoc entries of the fitted attributes every estimator here has: a placeholder that
#: tsrep.estimators._parameters.keyword_parameters writes out from the shared declarations.
FITTED_ATTRIBUTES_DOC = "    {attributes: history_ n_epochs_ n_parameters_}"

# Fitted attributes of every estimator here that the model file keeps (the weights go to tensors).
_FITTED_COMMON = ("classes_", "n_classes_", "y_mean_", "y_std_", "network_config_", "n_parameters_", "n_epochs_")


class TensorEstimator(BaseEstimator):
    """Base of the text and image estimators: fit, prediction outputs, save and load (see the module doc)."""

    _task: str  # "classification" or "regression", set by the task mixin
    _FITTED: tuple = ()

    # ----------------------------------------------------------------- what a subclass gives
    def _check_X(self, X, fit: bool):
        raise NotImplementedError

    def _fit_inputs(self, X) -> None:
        raise NotImplementedError

    def _model_inputs(self, X):
        raise NotImplementedError

    def _network_config(self, n_outputs: int) -> dict:
        raise NotImplementedError

    def _build_network(self, config: dict, pretrained: bool) -> torch.nn.Module:
        raise NotImplementedError

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # texts or images, never a table of features
        return tags

    # ----------------------------------------------------------------- fit
    def _validate_params(self) -> None:
        """The declared constraints, then what they cannot say (optimiser, device, callbacks)."""
        check_constraints(type(self)._parameter_constraints, self.get_params(deep=False), type(self).__name__)
        check_optimizer(self.optimizer, self.optimizer_kwargs, self.lr)
        resolve_device(self.device)
        check_callbacks(self.callbacks, "callbacks")

    def fit(self, X, y):
        """Train the network on the cases X and targets y; returns self."""
        self._validate_params()
        X = self._check_X(X, fit=True)
        targets = self._fit_targets(y, len(X))
        check_enough_cases(len(X))
        self._fit_inputs(X)
        inputs = self._model_inputs(X)
        device = resolve_device(self.device)
        seed = seed_from(self.random_state)
        self.network_config_ = self._network_config(self._n_outputs())
        # Seeded locally: fit is reproducible without touching the user's global RNG (dropout draws from it).
        with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            model = self._build_network(self.network_config_, pretrained=True)
            fit_info = {"params": self.get_params(deep=False), "member": None, "phase": "train", "estimator": self}
            self.history_ = fit_tensors(
                model, inputs, targets, epochs=self.max_epochs, batch_size=self.batch_size, lr=self.lr,
                generator=torch.Generator().manual_seed(seed), optimizer=self.optimizer,
                optimizer_kwargs=self.optimizer_kwargs, weight_decay=self.weight_decay, grad_clip=self.grad_clip,
                lr_schedule=None if self.lr_schedule == "none" else self.lr_schedule, eval_data=None, device=device,
                callbacks=self.callbacks, loss_fn=self._loss, score_fn=self._score_outputs, fit_info=fit_info,
                what=f"{type(self).__name__}.fit", autocast_dtype=self._autocast_dtype(),
            )
        self.module_ = model.eval()  # a fitted model predicts; predicting must not change its state
        self.n_parameters_ = count_parameters(model)
        self.n_epochs_ = len(self.history_.train_loss)
        return self

    def _check_y(self, y, n_cases: int) -> np.ndarray:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        y = np.asarray(getattr(y, "values", y), dtype=object if self._task == "classification" else None)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, one target per case (got shape {y.shape}); several outputs per case "
                             "are not supported")
        if len(y) != n_cases:
            raise ValueError(f"X holds {n_cases} case(s) but y holds {len(y)} target(s); give one per case")
        return y

    def _autocast_dtype(self) -> torch.dtype | None:
        """The torch.autocast dtype of mixed_precision; checked again here, for a value set after fit."""
        check_constraints(type(self)._parameter_constraints, {"mixed_precision": self.mixed_precision},
                          type(self).__name__)
        return AUTOCAST_DTYPES[self.mixed_precision]

    # ----------------------------------------------------------------- predict
    def _outputs(self, X) -> torch.Tensor:
        """The fitted network's outputs (n_cases, n_outputs) for X, on the CPU in float32, refused when not
        finite."""
        check_is_fitted(self, "module_")
        X = self._check_X(X, fit=False)
        device = resolve_device(self.device)
        self.module_.to(device)
        outputs = predict_logits(self.module_, self._model_inputs(X), self.batch_size, device,
                                 autocast_dtype=self._autocast_dtype())
        return check_finite_outputs(outputs)

    # ----------------------------------------------------------------- save / load
    def save(self, path):
        """Write the fitted estimator to `path`: one safetensors file with the weights and, in its
        metadata, JSON of the parameters and fitted state (tsrep._serialization; no pickle). Written
        atomically. ``callbacks`` are not saved. Returns the path."""
        check_is_fitted(self, "module_")
        where = type(self).__name__
        fitted = {name: to_json(getattr(self, name), f"{where}.{name}")
                  for name in (*_FITTED_COMMON, *self._FITTED) if name in self.__dict__}
        history = self.history_
        fitted["history_"] = to_json({"train_loss": history.train_loss, "val_loss": history.val_loss,
                                      "val_score": history.val_score, "best_epoch": history.best_epoch,
                                      "epoch_seconds": history.epoch_seconds}, f"{where}.history_")
        document = {"estimator": where, "params": params_to_json(self.get_params(deep=False), where), "fitted": fitted}
        tensors = {f"module.{name}": t for name, t in self.module_.state_dict().items()}
        return write_model_file(path, document, tensors)

    @classmethod
    def load(cls, path, **params):
        """The fitted estimator saved at `path` by ``save``; `params` override saved parameters (e.g.
        device="cpu"). Nothing in the file can run code; a file of another kind, of a newer format
        version, or truncated is a ValueError (tsrep._serialization.ModelFileError)."""
        return load_estimator(path, expected=cls, **params)

    @classmethod
    def _from_model_file(cls, document: dict, tensors: dict, where: str, overrides: dict):
        """The estimator of a model file read by tsrep.estimators._saving.load_estimator."""
        params = _checked_params(cls, document.get("params"), where)
        _cpu_if_no_cuda(params, overrides, where)
        est = cls(**{**params, **overrides})
        fitted = from_json(document.get("fitted"), where)
        if not isinstance(fitted, dict) or not isinstance(fitted.get("network_config_"), dict):
            raise ModelFileError(f"{where} is corrupt: its fitted state has no network configuration")
        for name in (*_FITTED_COMMON, *cls._FITTED):
            if name in fitted:
                setattr(est, name, fitted[name])
        est.history_ = History(**fitted.get("history_", {}))
        est._check_loaded_targets(where)
        with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
            module = est._build_network(est.network_config_, pretrained=False)
        module.load_state_dict(prefixed(tensors, "module."), strict=True)
        est.module_ = module.eval()
        return est


class TensorClassifierMixin(ClassifierMixin):
    """Classification for TensorEstimator: class labels, cross-entropy, probabilities."""

    _task = "classification"

    @staticmethod
    def _loss(outputs, targets):
        return F.cross_entropy(outputs, targets)

    _score_outputs = staticmethod(accuracy)

    def _fit_targets(self, y, n_cases: int) -> torch.Tensor:
        y = self._check_y(y, n_cases)
        check_class_labels(y)  # missing labels, infinite ones, numbers mixed with strings
        self.classes_, index = np.unique(y.tolist(), return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"y holds one class ({self.classes_[0]!r}); a classifier needs at least two")
        self.n_classes_ = len(self.classes_)
        return torch.as_tensor(index, dtype=torch.long)

    def _n_outputs(self) -> int:
        return self.n_classes_

    def _check_loaded_targets(self, where: str) -> None:
        classes = getattr(self, "classes_", None)
        if not (isinstance(classes, np.ndarray) and classes.ndim == 1 and len(set(classes.tolist())) == len(classes) > 1
                and self.n_classes_ == len(classes) == self.network_config_.get("n_outputs")):
            raise ModelFileError(f"{where} is corrupt: its classes_ {classes!r} do not match its network's outputs")

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (n_cases, n_classes), columns in the order of ``classes_``."""
        return torch.softmax(self._outputs(X), dim=1).double().numpy()

    def predict(self, X) -> np.ndarray:
        """The most probable class of every case."""
        best = self._outputs(X).argmax(1).numpy()  # checks that the estimator is fitted before classes_ is read
        return self.classes_[best]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on (X, y); a label not seen in fit is a ValueError (it could never be predicted)."""
        check_is_fitted(self, "module_")
        labels = np.asarray(getattr(y, "values", y), dtype=object).ravel().tolist()
        known = set(self.classes_.tolist())
        unknown = sorted({str(v) for v in labels if v not in known})
        if unknown:
            raise ValueError(
                f"y holds labels not seen in fit: {unknown[:5]} (the classes are {self.classes_.tolist()})"
            )
        return super().score(X, y, sample_weight)


class TensorRegressorMixin(RegressorMixin):
    """Regression for TensorEstimator: one standardised target, MSE; score is R²."""

    _task = "regression"

    @staticmethod
    def _loss(outputs, targets):
        return F.mse_loss(outputs[:, 0], targets)

    @staticmethod
    def _score_outputs(outputs, targets) -> float:
        return -float(F.mse_loss(outputs[:, 0], targets))

    def _fit_targets(self, y, n_cases: int) -> torch.Tensor:
        y = self._check_y(y, n_cases)
        if y.dtype.kind not in "biuf":
            raise ValueError(f"y must hold numbers for a regressor, got dtype {y.dtype}")
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            bad = np.flatnonzero(~np.isfinite(y))[:5].tolist()
            raise ValueError(f"y holds NaN or infinite targets (at case(s) {bad})")
        # Standardised targets: the head starts at the right scale whatever the units of y.
        self.y_mean_, self.y_std_ = float(y.mean()), float(y.std()) or 1.0
        return torch.as_tensor((y - self.y_mean_) / self.y_std_, dtype=torch.float32)

    def _n_outputs(self) -> int:
        return 1

    def _check_loaded_targets(self, where: str) -> None:
        mean, std = getattr(self, "y_mean_", None), getattr(self, "y_std_", None)
        if not (isinstance(mean, numbers.Real) and isinstance(std, numbers.Real) and np.isfinite([mean, std]).all()
                and std > 0 and self.network_config_.get("n_outputs") == 1):
            raise ModelFileError(f"{where} is corrupt: its target standardisation or network outputs are not valid")

    def predict(self, X) -> np.ndarray:
        """The predicted target of every case."""
        return self._outputs(X)[:, 0].double().numpy() * self.y_std_ + self.y_mean_

