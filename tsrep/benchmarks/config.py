"""Benchmark configurations (YAML): which models, datasets and seeds, with what budget.

A config is named by a path to a YAML file, or by a name looked up as ``configs/<name>.yaml`` in the
working directory (your own configs), then among the configs that ship with tsrep (package data in
``tsrep/configs``, read with importlib.resources): quick, shipped-paper-budget, paper, ucr-dev, ucr.

Format (every key but ``models`` and one of ``datasets``/``collections`` is optional)::

    name: quick                      # names the output directory (default: the file's stem)
    datasets: [BasicMotions, Covid3Month]   # archive names (tsrep.data.load_archive)
    collections: [shipped]           # and/or whole collections (tsrep.data.list_datasets)
    models: [lstm, ea-dc-transformer, ea-dc-t-inception, aeon:minirocket]  # tsrep.models names, aeon:<name>
                                     # of an allow-list, names of `variants`
    variants:                        # a registered model under a name of its own, with parameters of its own
      ea-dc-t-inception:
        model: ea-dc-transformer     # the model it is a variant of (a tsrep.models name or aeon:<name>)
        params: {stem_kind: inception, stem_skip: true}   # checked like model_params
        label: EA-DC-T inception     # its header in the report (default: "EA-DC-T (ea-dc-t-inception)")
    seeds: [0, 1, 2]                 # default [0]
    params:                          # constructor parameters for every model that takes them
      max_epochs: 100
      d_model: 64
    model_params:                    # per model or variant, over `params` (a model must take every one)
      ea-dc-transformer: {alpha: 0.5, beta: 0.5}
    dataset_params:                  # per dataset, over both (applied where a model takes them)
      Covid3Month: {scaling: symlog}
    grid:                            # hyperparameters chosen per cell on a validation split of TRAIN
      d_model: [64, 128]
      n_blocks: [2, 3, 4, 5]
    model_grid:                      # per model, added to `grid` (a model must take every one)
      ea-dc-transformer: {alpha: [0.1, 0.5, 0.9]}
    selection:
      validation_fraction: 0.2       # of TRAIN (stratified for classification); TEST is never used
      refit: true                    # refit the chosen point on all of TRAIN before scoring TEST
    data:
      offline: true                  # never download (or a directory of .ts / UCR .tsv files)
      cache_dir: null                # default $TSREP_DATA_DIR or ~/.cache/tsrep/archives
      available_offline: false       # true: collections keep only their problems on this machine
    published: [MiniROCKET, HC2]     # published test scores shown beside the models (not run)
    published_split: fold0           # fold0 (the archive's split, as run here) or mean (over resamples)
    published_in_ranks: false        # true: count them in Avg Rank / Avg Accuracy / Rel. diff and the CD diagram
    groups:                          # named sets of the config's datasets: the report adds their means
      panel: [BasicMotions]
      all: [BasicMotions, Covid3Month]
    scheduler: tcp://head:8786       # run the cells on this Dask scheduler's workers (default: this machine)
    store: postgresql://me@db/bench  # results store: SQLAlchemy URL or SQLite path (default OUT/results.sqlite)

Models: tsrep.models names, and ``aeon:<name>`` for an aeon estimator of the fixed allow-list
tsrep.benchmarks.registry.AEON_ESTIMATORS (``aeon:minirocket``); nothing else is imported.

Variants (``variants: {name: {model, params, label}}``) run one model several times in one run and one table,
e.g. a default beside a candidate: a variant is its ``model`` (required; a registered model, not another
variant) built with its ``params`` (optional; only parameters that model takes, checked like ``model_params``)
and headed ``label`` in the report (optional; default the model's label followed by the variant's name in
parentheses, ``EA-DC-T (ea-dc-t-inception)``). Its name (letters, digits, ``-``, ``_``, ``.``; matched
case-insensitively, like model names) must not be a model's name or alias, and is used like one: in
``models`` (a variant that is not listed there is not run), ``model_params``, ``model_grid`` and
``tsrep-benchmark --models``. Its cells are stored under its name, so a variant and its model are separate
cells, rows and columns. A variant cell's fixed parameters, later ones winning: the shared ``params`` its model
takes, ``dataset_params`` (likewise), the variant's ``params``, ``model_params.<variant>``; its grid: the shared
``grid`` its model takes and ``model_grid.<variant>``. The model's own ``model_params`` and ``model_grid`` are
that model's settings and do not reach its variants.

Published columns (tsrep.benchmarks.published): test scores of the named methods from the studies
whose result files ship with tsrep (classification: Middlehurst, Schäfer, Bagnall, "Bake off redux",
DMKD 2024, on the 112 equal-length UCR problems; regression: Guijo-Rubio et al., "Unsupervised feature
based algorithms for time series extrinsic regression", DMKD 2024). They are printed as extra columns
marked "†" with a footnote citing the study, for the problems of the run that the study has. By
default they are not ranked (they were not measured here); ``published_in_ranks: true`` counts them
in the summary rows and the critical-difference diagram, over the problems where every model and
every published method has a score.

Groups (``groups: {name: [datasets]}``): each names some of the config's datasets (any other name is a
ConfigError naming the group); under each task's table the report adds "Means by group", a row per group
with the mean score of every model and published column over the group's datasets where all of them have
one (how many of how many were counted) and the models' mean fit+predict seconds there. Groups may overlap.
When ``tsrep-benchmark --datasets`` runs a part of a config (parse_config's ``datasets_narrowed``), each
group keeps the datasets still run, and one left empty is dropped.

Shared ``params``/``grid``/``dataset_params`` apply to a model only where it has that parameter (an
LSTM has no alpha) and never override a model's defining parameters (beta=0 of "w/o Convolution");
``model_params`` and ``model_grid`` are checked strictly. Anything malformed raises ConfigError
naming the key.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PureWindowsPath
from typing import TYPE_CHECKING, Callable

import yaml

from tsrep.benchmarks.published import resolve_methods, resolve_split
from tsrep.benchmarks.registry import all_params, build_model, model_label, model_params, resolve_model
from tsrep.data.archive import canonical_name, list_datasets
from tsrep.exceptions import ConfigError

if TYPE_CHECKING:
    from importlib.abc import Traversable

KEYS = (
    "name", "description", "datasets", "collections", "models", "seeds", "params", "model_params",
    "dataset_params", "grid", "model_grid", "selection", "data", "published", "published_split",
    "published_in_ranks", "groups", "scheduler", "store", "variants",
)
VARIANT_KEYS = ("model", "params", "label")
# A variant's name heads CSV columns and is stored as a cell's model: a plain name, never "aeon:..." or
# "published:..." (prefixes the registry and the report read as kinds of column).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SELECTION_KEYS = ("validation_fraction", "refit")
DATA_KEYS = ("offline", "cache_dir", "available_offline")

# Where a config name is looked up (after a path as given): ./configs of the working directory (users'
# own configs, which override tsrep's), then the configs that ship inside the package (tsrep/configs).
USER_CONFIG_DIR = Path("configs")
CONFIG_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Variant:
    """A registered model (``model``) run under a name of its own with parameters of its own."""

    name: str
    model: str
    params: dict = field(default_factory=dict, hash=False)
    label: str = ""


@dataclass
class BenchmarkConfig:
    name: str
    datasets: list[str]
    models: list[str]
    seeds: list[int] = field(default_factory=lambda: [0])
    params: dict = field(default_factory=dict)
    model_params: dict = field(default_factory=dict)
    dataset_params: dict = field(default_factory=dict)
    grid: dict = field(default_factory=dict)
    model_grid: dict = field(default_factory=dict)
    validation_fraction: float = 0.2
    refit: bool = True
    offline: object = None
    cache_dir: str | None = None
    available_offline: bool = False
    published: list[str] = field(default_factory=list)
    published_split: str = "fold0"
    published_in_ranks: bool = False
    groups: dict = field(default_factory=dict)  # {name: [datasets of the config]}, for the report's means
    description: str = ""
    path: str | None = None
    scheduler: str | None = None
    store: str | None = None
    variants: dict = field(default_factory=dict)  # {name: Variant}, the names usable like models'

    def base_model(self, model: str) -> str:
        """The registered model that builds the cells of `model` (a model, or a variant's name)."""
        return self.variants[model].model if model in self.variants else model

    def label(self, model: str) -> str:
        """The report's header of `model` (a model, or a variant's name)."""
        return self.variants[model].label if model in self.variants else model_label(model)

    def labels(self) -> dict[str, str]:
        """{name: header} of the variants (the report's headers that are not a model's own label)."""
        return {name: variant.label for name, variant in self.variants.items()}

    def params_for(self, model: str, dataset: str) -> dict:
        """Fixed constructor parameters of one cell (without the grid)."""
        accepted = model_params(self.base_model(model))
        out = {k: v for k, v in self.params.items() if k in accepted}
        out.update({k: v for k, v in self.dataset_params.get(dataset, {}).items() if k in accepted})
        if model in self.variants:
            out.update(self.variants[model].params)
        out.update(self.model_params.get(model, {}))
        return out

    def grid_for(self, model: str) -> dict:
        accepted = model_params(self.base_model(model))
        grid = {k: list(v) for k, v in self.grid.items() if k in accepted}
        grid.update({k: list(v) for k, v in self.model_grid.get(model, {}).items()})
        return grid


def _close(word, options) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def plain_folder_name(value: str) -> bool:
    """Whether `value` is one plain path component: a folder made under another stays inside it."""
    return (bool(value.strip()) and value not in (".", "..") and not any(c in value for c in "/\\\0")
            and not PureWindowsPath(value).drive)


def _config_name(raw: dict, default: str) -> str:
    """The config's name: 'name', else `default` (its file's stem). It names the output folder
    results/archive/<name>, so a path ('../x', '/abs') that would put cells.csv, the results store
    and the tables outside that folder is refused."""
    given = raw.get("name")
    if given is None:
        value, where = str(default), "the config's name (its file name)"
    elif isinstance(given, bool) or not isinstance(given, (str, int, float)):
        raise ConfigError(f"'name' must be a string, got {type(given).__name__}: {given!r}")
    else:
        value, where = str(given), "'name'"
    if not plain_folder_name(value):
        raise ConfigError(
            f"{where} names the output folder results/archive/<name> and must be a single plain folder name "
            f"(not empty, no '/' or '\\', not '.' or '..', not an absolute path), got {value!r}"
        )
    return value


def _mapping(raw, key) -> dict:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"'{key}' must be a mapping, got {type(value).__name__}: {value!r}")
    return value


def _name_list(raw, key, what) -> list:
    """A list of names (one name alone is a list of one)."""
    value = raw.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"'{key}' must be a list of {what}, got {value!r}")
    return value


def _flag(section: dict, key: str, default: bool, where: str) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _grid(value, where) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a mapping of parameter -> list of values, got {value!r}")
    for k, v in value.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{where}.{k} must be a non-empty list of values, got {v!r}")
    return value


def _named_parameter_mappings(section: dict, resolve, where: str):
    """(key as written, its name by `resolve`, value) of each entry of a section keyed by model or dataset names
    (model_params, model_grid, dataset_params); ConfigError for a name `resolve` refuses or a value that is not a
    mapping of parameters."""
    for raw_name, value in section.items():
        try:
            name = resolve(raw_name)
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from None
        if not isinstance(value, dict):
            raise ConfigError(f"{where}.{raw_name} must be a mapping of parameters, got {value!r}")
        yield raw_name, name, value


def model_resolver(variants) -> Callable[[str], str]:
    """resolve(name): the name of the variant `name` names (variants: their names; matched case-insensitively),
    else the registry name of a model (resolve_model); ValueError, with the closest variant's name where one is
    close, for neither."""
    by_key = {str(v).strip().lower(): v for v in variants}

    def resolve(name) -> str:
        key = name.strip().lower() if isinstance(name, str) else None
        if key in by_key:
            return by_key[key]
        try:
            return resolve_model(name)
        except ValueError:
            close = difflib.get_close_matches(str(key), list(by_key), n=1)
            if close:
                raise ValueError(f"unknown model or variant {name!r} (did you mean {by_key[close[0]]!r}?); "
                                 f"variants: {', '.join(by_key.values())}") from None
            raise

    return resolve


def _refuse_unaccepted(params: dict, model: str, where: str) -> None:
    """ConfigError naming the first of `params` that the registered `model` does not let a config set."""
    accepted = model_params(model)
    bad = sorted(set(params) - accepted)
    if bad:
        raise ConfigError(f"{where}: {model!r} takes no (free) parameter {', '.join(map(repr, bad))}"
                          f"{_close(bad[0], accepted)}")


def _check_model_keys(section: dict, models: list[str], variants: dict, where: str, values_are_lists: bool) -> dict:
    """model_params or model_grid keyed by the names of `models` (a variant's: its name), each checked against
    the parameters of its registered model."""
    out = {}
    for raw_name, name, value in _named_parameter_mappings(section, model_resolver(variants), where):
        if values_are_lists:
            _grid(value, f"{where}.{raw_name}")
        if name not in models:
            raise ConfigError(f"{where}.{raw_name}: model {name!r} is not in 'models' ({', '.join(models)})")
        _refuse_unaccepted(value, variants[name].model if name in variants else name, f"{where}.{raw_name}")
        out[name] = dict(value)
    return out


def _variants(raw: dict) -> dict[str, Variant]:
    """'variants' by name, each a registered model with its parameters and the label the report heads it with."""
    section = _mapping(raw, "variants")
    keys = set()
    for name in section:
        if not isinstance(name, str) or not VARIANT_NAME.fullmatch(name):
            raise ConfigError(f"variants: a variant's name must be letters, digits, '-', '_' or '.', got {name!r}")
        try:
            model = resolve_model(name)
        except ValueError:
            model = None
        if model is not None:
            raise ConfigError(f"variants.{name}: {name!r} is already the name of the model {model!r}; give the "
                              "variant a name of its own")
        if name.lower() in keys:
            raise ConfigError(f"variants.{name}: a second variant of the name {name!r} (names are matched "
                              "case-insensitively)")
        keys.add(name.lower())
    return {name: _variant(name, entry, keys, f"variants.{name}") for name, entry in section.items()}


def _variant(name: str, entry, variant_keys: set, where: str) -> Variant:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping with 'model' (and 'params', 'label'), got {entry!r}")
    unknown = [k for k in entry if k not in VARIANT_KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{_close(unknown[0], VARIANT_KEYS)}; known keys: "
                          f"{', '.join(VARIANT_KEYS)}")
    if "model" not in entry:
        raise ConfigError(f"{where}: no 'model' (the registered model it is a variant of)")
    if str(entry["model"]).strip().lower() in variant_keys:
        raise ConfigError(f"{where}.model: {entry['model']!r} is a variant; a variant's model is a registered "
                          "model (tsrep.models or aeon:<name>)")
    try:
        model = resolve_model(entry["model"])
    except ValueError as err:
        raise ConfigError(f"{where}.model: {err}") from None
    params = entry.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"{where}.params must be a mapping of parameters, got {params!r}")
    _refuse_unaccepted(params, model, f"{where}.params")
    label = entry.get("label")
    if label is None:
        label = f"{model_label(model)} ({name})"
    elif not isinstance(label, str) or not label.strip():
        raise ConfigError(f"{where}.label must be a non-empty string, got {label!r}")
    return Variant(name=name, model=model, params=dict(params), label=label.strip())


def _check_shared_keys(section: dict, models: list[str], where: str) -> None:
    # Any parameter of any registered model is fine here (a config keeps working when --models
    # narrows it to an LSTM); this check catches typos, params_for decides where a value goes.
    known = all_params()
    for key in section:
        if key not in known:
            raise ConfigError(f"{where}: no model takes a parameter {key!r}{_close(key, known)}")


def parse_config(raw: dict, name: str = "benchmark", path: str | None = None,
                 datasets_narrowed: bool = False) -> BenchmarkConfig:
    """The BenchmarkConfig of a config's YAML mapping; ConfigError naming the first malformed key.
    datasets_narrowed: 'datasets'/'collections' were replaced by a part of the config's own (tsrep-benchmark
    --datasets), so a group keeps those of its datasets still run instead of being refused for the others."""
    _check_keys(raw)
    variants = _variants(raw)
    models = _models(raw, variants)
    data, available_offline = _data_section(raw)
    datasets = _datasets(raw, data, available_offline)
    groups = _groups(raw, datasets, datasets_narrowed)
    seeds = _seeds(raw)
    params = _mapping(raw, "params")
    _check_shared_keys(params, models, "params")
    grid = _grid(_mapping(raw, "grid"), "grid")
    _check_shared_keys(grid, models, "grid")
    model_params = _check_model_keys(_mapping(raw, "model_params"), models, variants, "model_params", False)
    model_grid = _check_model_keys(_mapping(raw, "model_grid"), models, variants, "model_grid", True)
    dataset_params = _dataset_params(raw, models)
    fraction, refit = _selection(raw)
    published, published_split, published_in_ranks = _published(raw)
    for key in ("scheduler", "store"):
        if raw.get(key) is not None and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise ConfigError(f"'{key}' must be a non-empty string, got {raw[key]!r}")

    cfg = BenchmarkConfig(
        name=_config_name(raw, name),
        datasets=datasets,
        models=models,
        seeds=seeds,
        params=dict(params),
        model_params=model_params,
        dataset_params=dataset_params,
        grid={k: list(v) for k, v in grid.items()},
        model_grid=model_grid,
        validation_fraction=float(fraction),
        refit=refit,
        offline=data.get("offline"),
        cache_dir=data.get("cache_dir"),
        available_offline=available_offline,
        published=published,
        published_split=published_split,
        published_in_ranks=published_in_ranks,
        groups=groups,
        description=str(raw.get("description") or ""),
        path=path,
        scheduler=raw.get("scheduler"),
        store=raw.get("store"),
        variants=variants,
    )
    _check_labels(cfg)
    _check_every_cell(cfg)
    return cfg


def _check_keys(raw) -> None:
    if not isinstance(raw, dict):
        raise ConfigError(f"a benchmark config must be a YAML mapping, got {type(raw).__name__}")
    unknown = [k for k in raw if k not in KEYS]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}{_close(unknown[0], KEYS)}; known keys: {', '.join(KEYS)}")


def _models(raw: dict, variants: dict) -> list[str]:
    """The registry names of 'models' (a variant's: its name), each once, in their order."""
    models_raw = raw.get("models")
    if not isinstance(models_raw, list) or not models_raw:
        raise ConfigError("'models' must be a non-empty list of model names (tsrep.models, or aeon:<name>)")
    resolve = model_resolver(variants)
    try:
        return list(dict.fromkeys(resolve(m) for m in models_raw))
    except ValueError as err:
        raise ConfigError(f"models: {err}") from None


def _data_section(raw: dict) -> tuple[dict, bool]:
    """The 'data' mapping and its available_offline flag."""
    data = _mapping(raw, "data")
    bad = [k for k in data if k not in DATA_KEYS]
    if bad:
        raise ConfigError(f"data: unknown key {bad[0]!r}{_close(bad[0], DATA_KEYS)}")
    offline = data.get("offline")
    if not (offline is None or isinstance(offline, bool) or Path(str(offline)).expanduser().is_dir()):
        raise ConfigError(f"data.offline must be true, false or a directory of data files; {offline!r} is "
                          "not a directory")
    return data, _flag(data, "available_offline", False, "data.available_offline")


def _datasets(raw: dict, data: dict, available_offline: bool) -> list[str]:
    """The problems of 'collections', then of 'datasets', each once, by their archive names."""
    datasets = []
    ds_raw = raw.get("datasets") or []
    if not isinstance(ds_raw, list):
        raise ConfigError(f"'datasets' must be a list of dataset names, got {ds_raw!r}")
    col_raw = _name_list(raw, "collections", "collection names")
    try:
        for c in col_raw:
            datasets.extend(list_datasets(c, cache_dir=data.get("cache_dir"), available_offline=available_offline,
                                          offline=data.get("offline")))
        datasets.extend(canonical_name(d) for d in ds_raw)
    except (ValueError, NotADirectoryError) as err:
        raise ConfigError(f"datasets: {err}") from None
    datasets = list(dict.fromkeys(datasets))
    if not datasets:
        found = " (none of the collections' problems is on this machine: data.available_offline)" * bool(
            col_raw and available_offline)
        raise ConfigError(f"no datasets: give 'datasets' (names) and/or 'collections'{found}")
    return datasets


def _groups(raw: dict, datasets: list[str], narrowed: bool) -> dict[str, list[str]]:
    """'groups' with each group's datasets by their archive names, each once, in the order given. A name that
    is not one of `datasets` is a ConfigError naming the group (with `narrowed`, only one that is no archive
    name: the others were left out of this run, and a group left with none is dropped)."""
    groups = {}
    for group, members in _mapping(raw, "groups").items():
        if not isinstance(group, str) or not group.strip():
            raise ConfigError(f"groups: a group's name must be a non-empty string, got {group!r}")
        where = f"groups: group {group!r}"
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise ConfigError(f"{where} must be a non-empty list of dataset names, got {members!r}")
        named, stray = [], []
        for member in members:
            try:
                name = canonical_name(member)
            except ValueError:
                stray.append(member)
                continue
            if name in datasets:
                named.append(name)
            elif not narrowed:
                stray.append(member)
        if stray:
            raise ConfigError(f"{where} has datasets that are not the config's: {', '.join(map(repr, stray))}"
                              f"{_close(stray[0], datasets)}")
        if named:
            groups[group] = list(dict.fromkeys(named))
    return groups


def _seeds(raw: dict) -> list[int]:
    """'seeds' (one integer alone is a list of one), each once."""
    seeds = raw.get("seeds", [0])
    if isinstance(seeds, int):
        seeds = [seeds]
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
        raise ConfigError(f"'seeds' must be a non-empty list of integers, got {seeds!r}")
    return list(dict.fromkeys(seeds))


def _dataset_params(raw: dict, models: list[str]) -> dict:
    """'dataset_params' keyed by the archive names of its problems."""
    dataset_params = {}
    for ds, ds_name, value in _named_parameter_mappings(_mapping(raw, "dataset_params"), canonical_name,
                                                         "dataset_params"):
        _check_shared_keys(value, models, f"dataset_params.{ds}")
        dataset_params[ds_name] = dict(value)
    return dataset_params


def _selection(raw: dict) -> tuple[float, bool]:
    """(validation_fraction, refit) of the 'selection' mapping."""
    selection = _mapping(raw, "selection")
    bad = [k for k in selection if k not in SELECTION_KEYS]
    if bad:
        raise ConfigError(f"selection: unknown key {bad[0]!r}{_close(bad[0], SELECTION_KEYS)}")
    fraction = selection.get("validation_fraction", 0.2)
    if not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ConfigError(f"selection.validation_fraction must be in (0, 1), got {fraction!r}")
    return fraction, _flag(selection, "refit", True, "selection.refit")


def _published(raw: dict) -> tuple[list[str], str, bool]:
    """(published methods, published_split, published_in_ranks)."""
    published_raw = _name_list(raw, "published", "method names")
    try:
        published = resolve_methods(published_raw)
        published_split = resolve_split(raw.get("published_split", "fold0"))
    except ValueError as err:
        raise ConfigError(f"published: {err}") from None
    return published, published_split, _flag(raw, "published_in_ranks", False, "published_in_ranks")


def _check_labels(cfg: BenchmarkConfig) -> None:
    """A variant run beside another model must not share its header: the report's columns would be told apart
    by nothing."""
    headers = {}
    for model in cfg.models:
        headers.setdefault(cfg.label(model), []).append(model)
    for label, models in headers.items():
        variants = [m for m in models if m in cfg.variants]
        if len(models) > 1 and variants:
            other = next(m for m in models if m != variants[0])
            raise ConfigError(f"variants.{variants[0]}.label: {label!r} is also the header of {other!r}; give the "
                              "variant a label of its own")


def _check_every_cell(cfg: BenchmarkConfig) -> None:
    """Every cell's parameters must build a valid estimator: catch contradictions (e.g. beta for
    "w/o Convolution") and bad values (d_model: -8) now, not in every cell after an hour of training.
    A variant's cells are built from its registered model, and a failure names the variant."""
    checked = set()
    for model in cfg.models:
        base = cfg.base_model(model)
        for dataset in cfg.datasets:
            for point in grid_points(cfg.grid_for(model)):
                settings = repr((base, sorted(cfg.params_for(model, dataset).items()), sorted(point.items())))
                if settings in checked:  # datasets without params of their own share one check
                    continue
                checked.add(settings)
                try:
                    estimator = build_model(base, "classification", **{**cfg.params_for(model, dataset), **point})
                    if hasattr(estimator, "_validate_params"):  # tsrep's checks of its parameters, without data
                        estimator._validate_params()
                except (ValueError, TypeError) as err:
                    where = f" with grid point {point}" if point else ""
                    what = f"variant {model!r} of {base!r}" if model in cfg.variants else f"model {model!r}"
                    raise ConfigError(f"{what} on {dataset}{where}: {err}") from None


def grid_points(grid: dict) -> list[dict]:
    """The points of a grid ({name: [values]}), in scikit-learn's ParameterGrid order; [{}] for no grid."""
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid)) if grid else [{}]


def packaged_configs() -> Traversable:
    """The folder of the configs that ship with tsrep (package data; a Path in an ordinary install)."""
    return resources.files("tsrep") / "configs"


def config_names() -> list[str]:
    """The names a config can be given by: ./configs/<name>.yaml here, then tsrep's packaged configs."""
    names = []
    for folder in (USER_CONFIG_DIR, packaged_configs()):
        if folder.is_dir():
            names += sorted(Path(e.name).stem for e in folder.iterdir()
                            if e.is_file() and Path(e.name).suffix in CONFIG_SUFFIXES)
    return list(dict.fromkeys(names))


def find_config(spec) -> Path | Traversable:
    """A config file: `spec` as a path if that file exists, else the name `spec` looked up as
    ./configs/<spec>.yaml in the working directory, then among tsrep's packaged configs (a spec ending
    in .yaml/.yml is a path only).

    Returns a Path, or for a packaged config an importlib.resources Traversable (a Path in an ordinary
    install); both have read_text() and name."""
    path = Path(spec)
    if path.is_file():
        return path
    if path.suffix in CONFIG_SUFFIXES:
        raise ConfigError(f"config file {spec} does not exist")
    for folder in (USER_CONFIG_DIR, packaged_configs()):
        for suffix in CONFIG_SUFFIXES:
            candidate = folder / f"{spec}{suffix}"
            if candidate.is_file():
                return candidate
    names = config_names()
    raise ConfigError(f"no config named {spec!r}{_close(spec, names)}; available: {', '.join(names) or 'none'} "
                      f"({USER_CONFIG_DIR}/<name>.yaml in the working directory, then tsrep's own), or a YAML file")


def read_config(spec) -> tuple[dict, str, str]:
    """The raw mapping of the config `spec` (find_config), its name (the file's stem) and where it was found."""
    found = find_config(spec)
    try:
        raw = yaml.safe_load(found.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"{found} is not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{found}: a benchmark config must be a YAML mapping, got {type(raw).__name__}")
    return raw, Path(found.name).stem, str(found)


def load_config(spec: str) -> BenchmarkConfig:
    raw, name, where = read_config(spec)
    try:
        return parse_config(raw, name=name, path=where)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
