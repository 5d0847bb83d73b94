"""Published test scores of other methods, to print beside the models a benchmark runs.

    published_results("classification", split="fold0", methods=["MiniROCKET", "HC2"])
    # DataFrame: index = archive problem name (GunPoint, ...), columns = method, values = test accuracy

Two studies, whose result files were published with tsml-eval (BSD-3-Clause licence) and ship with
tsrep (``tsrep/benchmarks/data``, with a README):

- classification, test accuracy on the 112 equal-length UCR problems: Middlehurst, Schäfer, Bagnall,
  "Bake off redux: a review and experimental evaluation of recent time series classification
  algorithms", Data Mining and Knowledge Discovery 38 (2024);
- regression, test RMSE on 62 problems of the expanded TSER archive: Guijo-Rubio, Middlehurst,
  Arcencio, Furtado Silva, Bagnall, "Unsupervised feature based algorithms for time series extrinsic
  regression", Data Mining and Knowledge Discovery (2024).

Splits: "fold0" is the archive's own TRAIN/TEST split, the one tsrep's benchmark runs, so its figures
are directly comparable with a run; "mean" is the mean over the studies' resamples of TRAIN + TEST
(30 for classification, hence also spelled "mean30"), a steadier figure for another split.

Names: the classification study uses the archive's names. The regression study ran its own versions
of some archive problems without missing values (``BenzeneConcentration_nmv``) or of equal length
(``PPGDalia_eq``); they are listed under the archive's name, and ``frame.attrs["study_names"]`` maps
such a problem to the study's name, so that a table can say which figures are of such a version.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from importlib import resources

import pandas as pd


@dataclass(frozen=True)
class Study:
    file: str
    metric: str
    split_suffixes: dict  # split name -> column suffix in the file
    citation: str


STUDIES = {
    "classification": Study(
        file="ucr112_bakeoff2023_accuracy.csv",
        metric="accuracy",
        split_suffixes={"fold0": "_fold0", "mean": "_mean30"},
        citation=(
            'Middlehurst, Schäfer, Bagnall, "Bake off redux: a review and experimental evaluation of recent '
            'time series classification algorithms", Data Mining and Knowledge Discovery 38 (2024); '
            "result files of tsml-eval"
        ),
    ),
    "regression": Study(
        file="tser63_2023_rmse.csv",
        metric="RMSE",
        split_suffixes={"fold0": "_fold0", "mean": "_mean"},
        citation=(
            'Guijo-Rubio, Middlehurst, Arcencio, Furtado Silva, Bagnall, "Unsupervised feature based algorithms '
            'for time series extrinsic regression", Data Mining and Knowledge Discovery (2024); result files of '
            "tsml-eval"
        ),
    ),
}

SPLITS = ("fold0", "mean")
_SPLIT_ALIASES = {"mean30": "mean"}
SPLIT_DESCRIPTION = {
    "fold0": "on the archive's own TRAIN/TEST split",
    "mean": "mean over the study's resamples of TRAIN + TEST",
}
# The regression study's own versions of archive problems: no missing values, equal length.
_VERSION_SUFFIXES = ("_nmv", "_eq")


def _check_task(task: str) -> Study:
    if task not in STUDIES:
        raise ValueError(f"task must be one of {tuple(STUDIES)}, got {task!r}")
    return STUDIES[task]


def resolve_split(split: str) -> str:
    """'fold0' or 'mean' ('mean30' accepted); ValueError otherwise."""
    key = str(split).lower()
    key = _SPLIT_ALIASES.get(key, key)
    if key not in SPLITS:
        raise ValueError(f"published split must be one of {SPLITS} ('mean30' means 'mean'), got {split!r}")
    return key


@functools.lru_cache(maxsize=None)
def _read(task: str) -> pd.DataFrame:
    study = _check_task(task)
    with resources.files("tsrep.benchmarks").joinpath("data", study.file).open("r", encoding="utf-8") as f:
        return pd.read_csv(f, index_col="dataset")


def published_methods(task: str) -> list[str]:
    """The methods a task's study published, in the file's order."""
    study = _check_task(task)
    suffix = study.split_suffixes["fold0"]
    return [c[: -len(suffix)] for c in _read(task).columns if c.endswith(suffix)]


def resolve_methods(methods, task: str | None = None) -> list[str]:
    """The studies' spelling of each method (case-insensitive); ValueError naming close ones for an unknown one.

    With task=None a method may come from either study (ResNet is in both).
    """
    if isinstance(methods, str):
        methods = [methods]
    known = list(dict.fromkeys(m for t in ([task] if task else STUDIES) for m in published_methods(t)))
    by_lower = {m.lower(): m for m in known}
    out = []
    for method in methods:
        if not isinstance(method, str) or method.lower() not in by_lower:
            close = difflib.get_close_matches(str(method).lower(), list(by_lower), n=2, cutoff=0.5)
            hint = f" (did you mean {' or '.join(repr(by_lower[c]) for c in close)}?)" if close else ""
            raise ValueError(f"no published results for method {method!r}{hint}; published: {', '.join(known)}")
        out.append(by_lower[method.lower()])
    return list(dict.fromkeys(out))


def archive_name(study_name: str) -> str:
    """The archive's name of a problem of the studies (``BenzeneConcentration_nmv`` -> ``BenzeneConcentration``)."""
    for suffix in _VERSION_SUFFIXES:
        if study_name.endswith(suffix):
            return study_name[: -len(suffix)]
    return study_name


def published_results(task: str = "classification", split: str = "fold0", methods=None) -> pd.DataFrame:
    """Published test scores: index = archive problem name, columns = method, values = accuracy or RMSE.

    Parameters
    ----------
    task : {"classification", "regression"}
        Which study: accuracy on the UCR archive, or RMSE on the TSER archive.
    split : {"fold0", "mean"}, default="fold0"
        "fold0": the archive's own TRAIN/TEST split (comparable with a tsrep run); "mean": the mean
        over the study's resamples ("mean30" is accepted for classification's 30 resamples).
    methods : list of str or None
        Methods to keep (case-insensitive), in this order; None keeps every method of the study.

    Returns
    -------
    DataFrame; ``attrs["study_names"]`` maps each problem listed under another name than the study's
    to the study's name, ``attrs["metric"]`` and ``attrs["citation"]`` say what and whose the figures are.
    """
    study = _check_task(task)
    split = resolve_split(split)
    methods = published_methods(task) if methods is None else resolve_methods(methods, task)
    suffix = study.split_suffixes[split]
    frame = _read(task)[[m + suffix for m in methods]].copy()
    frame.columns = methods
    names = [archive_name(n) for n in frame.index]
    if len(set(names)) < len(names):  # both versions of a problem published: keep the study's names
        names = list(frame.index)
    frame.index = pd.Index(names, name="dataset")
    frame.attrs.update(
        study_names={a: s for a, s in zip(names, _read(task).index) if a != s},
        metric=study.metric, citation=study.citation, split=split,
    )
    return frame
