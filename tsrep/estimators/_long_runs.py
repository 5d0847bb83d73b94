"""Long runs of the estimators: what a warm start carries over from the previous fit and may change,
and what a resumable checkpoint is keyed to."""

from __future__ import annotations

import numbers

import numpy as np


# Parameters a warm start may change: how the network is trained, where and how loudly, not the
# network itself. Every other parameter must keep its value of the previous fit.
RECIPE_PARAMS = frozenset({
    "lr", "batch_size", "max_epochs", "min_steps", "validation_fraction", "patience", "optimizer",
    "optimizer_kwargs", "weight_decay", "lr_schedule", "label_smoothing", "mixup", "class_weight", "grad_clip", "n_jobs",
    "device", "random_state", "verbose", "callbacks", "checkpoint_dir", "warm_start", "pretrain_epochs",
    "mask_ratio", "mask_mean_length", "masking", "pretrained_encoder",
})
# Parameters that do not change the result of a fit: a resumed fit may differ in them.
NOT_RESUME_SETTINGS = ("verbose", "device", "n_jobs", "callbacks", "checkpoint_dir", "warm_start")

_FITTED_PREPROCESSING = ("standardizer_", "max_len_", "n_channels_", "patch_len_", "patch_stride_", "max_tokens_",
                         "conv_stem_", "encoder_config_")


def warm_state(est) -> dict:
    """What a warm start takes from the fitted `est` (before aeon's reset removes it)."""
    names = ("module_", "classes_", "y_mean_", "y_std_", "estimators_", "_fitted_params", *_FITTED_PREPROCESSING)
    return {name: getattr(est, name, None) for name in names}


def check_warm_start(est, warm: dict) -> None:
    """ValueError unless `est` (parameters set, classes_ of the new y known) can continue `warm`."""
    fitted = warm["_fitted_params"] or {}
    changed = [
        f"{name} (fitted {fitted[name]!r}, now {value!r})"
        for name, value in est.get_params(deep=False).items()
        if name not in RECIPE_PARAMS and name in fitted and not _same(fitted[name], value)
    ]
    if changed:
        raise ValueError(
            "warm_start=True continues the network of the previous fit, but these parameters change the network: "
            + "; ".join(changed) + ". Set them back, or fit with warm_start=False to start from new weights"
        )
    n_before = 1 if warm["estimators_"] is None else len(warm["estimators_"])
    if n_before != est.n_estimators:
        raise ValueError(
            f"warm_start=True continues the {n_before} network(s) of the previous fit, but n_estimators="
            f"{est.n_estimators}; set it back, or fit with warm_start=False"
        )
    if warm["classes_"] is not None:
        old, new = np.asarray(warm["classes_"]), np.asarray(est.classes_)
        if old.shape != new.shape or not np.array_equal(old, new):
            raise ValueError(
                f"warm_start=True needs y with the classes of the previous fit {old.tolist()}, got {new.tolist()}: "
                "the output head has one unit per class. Fit with warm_start=False to train a new network"
            )
    if warm["estimators_"] is None and warm["module_"] is None:
        raise ValueError("warm_start=True: the previous fit left no network to continue")


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return a is b


def restore_preprocessing(est, warm: dict, n_channels: int) -> None:
    """The previous fit's standardisation, lengths and token front end, for a warm start on X."""
    if warm["n_channels_"] is not None and int(warm["n_channels_"]) != n_channels:
        raise ValueError(
            f"warm_start=True: X has {n_channels} channel(s), the previous fit had {warm['n_channels_']}; "
            "fit with warm_start=False"
        )
    for name in _FITTED_PREPROCESSING:
        setattr(est, name, warm[name])


def resume_settings(est, seed: int) -> dict:
    """The settings a training checkpoint is keyed to: the estimator's class, every parameter that
    changes the result, and the seed actually used (random_state may be None or a RandomState)."""
    settings = {k: v for k, v in est.get_params(deep=False).items() if k not in NOT_RESUME_SETTINGS}
    if not (settings.get("random_state") is None or isinstance(settings["random_state"], numbers.Integral)):
        settings["random_state"] = "RandomState"
    settings["estimator"] = type(est)
    settings["seed"] = int(seed)
    return settings
