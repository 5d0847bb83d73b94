"""The model names a benchmark config may use: tsrep's models (tsrep.models) and a fixed allow-list of
aeon estimators, written ``aeon:<name>`` (``aeon:minirocket``), which run in the same cells under the
same protocol (same data, seeds, validation split and scoring) as tsrep's models.

Only the estimators listed in AEON_ESTIMATORS can be named; a config names an entry of this list,
never a module or class to import. An entry is spelled by its key or by its aeon class name
(``aeon:MiniRocketClassifier``), case-insensitively.

Input aeon's estimator cannot take. The convolution estimators of the list take neither
unequal-length series nor missing values (aeon's ``capability:unequal_length`` and
``capability:missing_values`` tags), which eleven and four UCR problems have. Rather than leaving
those cells empty, such an estimator gets the preparation tsrep's own estimators apply to all their
input (tsrep.estimators): missing values linearly interpolated along time (tsrep.data.fill_missing),
then each series padded with zeros at its end to the longest training series; a longer test series
is cut to that length (the estimator was fitted at that length). Input the estimator can take is
passed to it unchanged, so on the equal-length complete problems the cell is aeon's estimator as it
is: aeon's ``MiniRocketClassifier(random_state=0)`` reproduces the MiniROCKET accuracies published by
Middlehurst, Schäfer and Bagnall ("Bake off redux", DMKD 2024) on the archive's split.

#params of an aeon estimator: the weights of its fitted linear model (the ridge on top of the
ROCKET features), the part that is learnt; the random kernels and their bias quantiles are not counted.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import inspect
from dataclasses import dataclass
from importlib.metadata import version as installed_version

import numpy as np

import tsrep
from tsrep import models as tsrep_models

AEON_PREFIX = "aeon:"


@dataclass(frozen=True)
class AeonEstimator:
    name: str
    label: str  # column header in the tables
    classifier: str  # "module.Class" in aeon, fixed here (never read from a config)
    regressor: str

    def estimator_class(self, task: str):
        path = self.classifier if task == "classification" else self.regressor
        module, _, cls = path.rpartition(".")
        return getattr(importlib.import_module(module), cls)

    def class_names(self) -> tuple[str, str]:
        return self.classifier.rpartition(".")[2], self.regressor.rpartition(".")[2]


#: The aeon estimators a benchmark may run: ROCKET and its successors (Dempster et al., "ROCKET",
#: DMKD 2020; "MINIROCKET", KDD 2021; Tan et al., "MultiRocket", DMKD 2022).
AEON_ESTIMATORS = {
    e.name: e
    for e in (
        AeonEstimator("minirocket", "MiniRocket", "aeon.classification.convolution_based.MiniRocketClassifier",
                      "aeon.regression.convolution_based.MiniRocketRegressor"),
        AeonEstimator("multirocket", "MultiRocket", "aeon.classification.convolution_based.MultiRocketClassifier",
                      "aeon.regression.convolution_based.MultiRocketRegressor"),
        AeonEstimator("rocket", "Rocket", "aeon.classification.convolution_based.RocketClassifier",
                      "aeon.regression.convolution_based.RocketRegressor"),
    )
}


def _aeon_entry(name: str) -> AeonEstimator | None:
    """The allow-list entry of an ``aeon:`` name, None for a tsrep name; ValueError for an unlisted aeon name."""
    if not name.strip().lower().startswith(AEON_PREFIX):
        return None
    wanted = name.strip()[len(AEON_PREFIX):].strip().lower().replace("-", "").replace("_", "")
    spellings = {}
    for entry in AEON_ESTIMATORS.values():
        for spelling in (entry.name, *entry.class_names()):
            spellings[spelling.lower()] = entry
    if wanted in spellings:
        return spellings[wanted]
    close = difflib.get_close_matches(wanted, list(spellings), n=1, cutoff=0.5)
    hint = f" (did you mean '{AEON_PREFIX}{spellings[close[0]].name}'?)" if close else ""
    raise ValueError(
        f"unknown aeon estimator {name!r}{hint}; a benchmark runs only the aeon estimators of "
        f"tsrep.benchmarks.registry.AEON_ESTIMATORS: {', '.join(AEON_PREFIX + n for n in AEON_ESTIMATORS)}"
    )


def resolve_model(name: str) -> str:
    """The registry name: ``aeon:<key>`` for an allow-listed aeon estimator, else tsrep.models.resolve_name."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model name must be a non-empty string, got {name!r}")
    entry = _aeon_entry(name)
    return AEON_PREFIX + entry.name if entry else tsrep_models.resolve_name(name)


def model_label(name: str) -> str:
    """The table header of a model."""
    entry = _aeon_entry(name)
    return entry.label if entry else tsrep_models.model_spec(name).label


def model_params(name: str) -> set[str]:
    """Constructor parameters a config may set for a model (not the defining ones of a tsrep model)."""
    entry = _aeon_entry(name)
    if entry:
        return set(entry.estimator_class("classification")._get_param_names())
    return tsrep_models.accepted_params(name)


def all_params() -> set[str]:
    """Every parameter of any model a config may name (tsrep's and the aeon allow-list's)."""
    known = set()
    for name in tsrep_models.MODELS:
        known |= set(tsrep_models.model_class(name, "classification")._get_param_names())
    for entry in AEON_ESTIMATORS.values():
        known |= model_params(AEON_PREFIX + entry.name)
    return known


def build_model(name: str, task: str, seed: int | None = None, device: str | None = None, **params):
    """An unfitted estimator of a model for a task.

    tsrep models get random_state=seed, the device and verbose=False (tsrep.models.get_model); aeon
    estimators get random_state=seed and are wrapped in AeonModel. Parameters a model does not take
    raise ValueError naming them.
    """
    entry = _aeon_entry(name)
    if entry is None:
        run = {} if seed is None else {"random_state": seed, "device": device or "auto", "verbose": False}
        return tsrep_models.get_model(name, task, **{**params, **run})
    if task not in tsrep_models.TASKS:
        raise ValueError(f"task must be one of {tsrep_models.TASKS}, got {task!r}")
    cls = entry.estimator_class(task)
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ValueError(
            f"model '{AEON_PREFIX}{entry.name}' ({cls.__name__}) takes no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {', '.join(cls._get_param_names())}"
        )
    if seed is not None:
        params = {**params, "random_state": seed}
    return AeonModel(cls(**params))


#: Modules whose source holds the "auto" rules of tsrep's estimators (what a default resolves to on a given
#: problem: token budget, stem, augmentation, validation split, steps, mixup, ...). Their digest is part of a
#: benchmark cell's key, so that cells fitted under an earlier rule are run again rather than reused.
RULE_MODULES = ("tsrep.estimators._tasks", "tsrep.nn.patching", "tsrep.nn.augmentation")

#: Constructor parameters that do not change what a fit computes: the seed (a cell's own field), where the fit
#: runs (a CPU and a GPU run are one cell), what it prints or saves on the way, and how its ensemble members are
#: scheduled (processes, or trained together: the same recipe, other random draws, as on another device).
NOT_RESULT_PARAMS = frozenset({"random_state", "device", "verbose", "callbacks", "n_jobs", "checkpoint_dir",
                               "train_members_together"})


def estimator_fingerprint(name: str, task: str, params: dict) -> dict:
    """What a cell's estimator is beyond the config's own parameters: every constructor parameter with its
    default (``get_params``), the version of the package that implements it and, for tsrep's models, a digest
    of the modules holding the "auto" rules (RULE_MODULES). A benchmark cell's key includes it, so a stored
    cell is reused only by an estimator that would compute it the same way: a changed default, rule or
    package version runs the cell again."""
    estimator = build_model(name, task, **params)  # no seed: a cell's seed is a field of its own
    if isinstance(estimator, AeonModel):
        estimator, versions = estimator.estimator, {"aeon": installed_version("aeon")}
    else:
        digest = hashlib.sha1()
        for module in RULE_MODULES:
            digest.update(inspect.getsource(importlib.import_module(module)).encode())
        versions = {"tsrep": tsrep.__version__, "rules": digest.hexdigest()[:12]}
    values = {k: _plain_param(v) for k, v in estimator.get_params(deep=False).items() if k not in NOT_RESULT_PARAMS}
    return {"params": values, **versions}


def _plain_param(value):
    """A parameter's value as JSON can hold it, stable from one process to the next (no object addresses)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, type) or inspect.isroutine(value):  # a class or function given as a parameter
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, (list, tuple)):
        return [_plain_param(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain_param(v) for k, v in value.items()}
    if hasattr(value, "get_params"):  # an estimator given as a parameter: its class and its own parameters
        return {"class": f"{type(value).__module__}.{type(value).__qualname__}",
                "params": {k: _plain_param(v) for k, v in value.get_params(deep=False).items()}}
    return f"{type(value).__module__}.{type(value).__qualname__}"


class AeonModel:
    """An aeon estimator given input it can take (see the module docstring); fit/predict as aeon's."""

    def __init__(self, estimator):
        self.estimator = estimator

    def _prepare(self, X):
        from tsrep.data import as_case_list, fill_missing

        tags = self.estimator.get_tags()
        fill = not tags.get("capability:missing_values", False)
        pad = not tags.get("capability:unequal_length", False)
        unequal = not isinstance(X, np.ndarray)
        missing = any(np.isnan(x).any() for x in X) if unequal else bool(np.isnan(X).any())
        if not ((fill and missing) or (pad and unequal)):
            return X
        cases = as_case_list(X)
        if fill and missing:
            cases = [fill_missing(x) for x in cases]
        if not (pad and unequal):
            return cases if unequal else np.stack(cases)
        out = np.zeros((len(cases), cases[0].shape[0], self.n_timepoints_))
        for i, x in enumerate(cases):
            n = min(x.shape[1], self.n_timepoints_)
            out[i, :, :n] = x[:, :n]
        return out

    def fit(self, X, y):
        # The longest training series sets the length every series is padded (or cut) to.
        self.n_timepoints_ = X.shape[2] if isinstance(X, np.ndarray) else max(np.shape(x)[1] for x in X)
        self.estimator.fit(self._prepare(X), y)
        return self

    def predict(self, X):
        return self.estimator.predict(self._prepare(X))

    @property
    def n_parameters_(self) -> int | None:
        """Weights of the fitted linear model at the end of aeon's pipeline, or None where there is none."""
        pipeline = getattr(self.estimator, "pipeline_", None)
        final = pipeline.steps[-1][1] if pipeline is not None and hasattr(pipeline, "steps") else None
        if final is None or not hasattr(final, "coef_"):
            return None
        return int(np.size(final.coef_) + np.size(getattr(final, "intercept_", 0)))
