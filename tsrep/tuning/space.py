"""Search spaces: the paper's default (Wang et al., TPAMI 2023, Sec. 4.1) and user overrides, turned into Optuna distributions.

A search space is a mapping ``parameter name -> spec``. A spec is one of

* a **fixed value** (a number, string, bool or None): the parameter is set, not tuned;
* a **list or tuple** of choices: categorical, e.g. ``[0.1, 0.3, 0.5]``;
* a **range** dict ``{"low": a, "high": b}`` with optional ``"log": True``, ``"step": s`` and
  ``"type": "int" | "float"`` (int when both ends are ints and no type is given), e.g.
  ``{"low": 0.0, "high": 1.0}`` (continuous) or ``{"low": 2, "high": 5}`` (integers 2..5);
  ``{"choices": [...]}`` is a categorical too;
* an ``optuna.distributions`` object, used as it is.

User entries replace the default's entries of the same name; the default's other entries stay,
except those of parameters set on the estimator given (a value other than the class's default,
e.g. ``EADCTransformerClassifier(d_model=16)``): these keep the estimator's value, as parameters
outside the search space do. To stop tuning any other default parameter, give it a fixed value
(``{"d_model": 64}``); to tune a parameter set on the estimator, name it in the search space.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
from collections.abc import Mapping

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from tsrep.backbones.config import check_constraints
from tsrep.backbones.dc_transformer import split_width
from tsrep.exceptions import SearchSpaceError

ALPHA_BETA_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)
P_GRID = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875)

#: The paper's grid (Wang et al. 2023, Sec. 4.1): alpha, beta in {0.1, ..., 0.9}; p in {0.125, ..., 0.875};
#: d in {64, 128}; blocks n in {2, 3, 4, 5}.
PAPER_SEARCH_SPACE: dict = {
    "alpha": list(ALPHA_BETA_GRID),
    "beta": list(ALPHA_BETA_GRID),
    "p": list(P_GRID),
    "d_model": [64, 128],
    "n_blocks": [2, 3, 4, 5],
}

#: The same box, continuous in alpha, beta and p (p is snapped to an attention width that n_heads
#: divides, see :func:`adjust_params`), integer range for the blocks.
PAPER_SEARCH_SPACE_CONTINUOUS: dict = {
    "alpha": {"low": 0.1, "high": 0.9},
    "beta": {"low": 0.1, "high": 0.9},
    "p": {"low": 0.125, "high": 0.875},
    "d_model": [64, 128],
    "n_blocks": {"low": 2, "high": 5},
}

_RANGE_KEYS = {"low", "high", "log", "step", "type"}


def _plain(value):
    """numpy scalars -> Python scalars (Optuna and the estimators' checks want Python types)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def to_distribution(name: str, spec) -> BaseDistribution | None:
    """The Optuna distribution for a spec, or None for a fixed value. Raises SearchSpaceError."""
    if isinstance(spec, BaseDistribution):
        return spec
    if isinstance(spec, (range, np.ndarray)):
        spec = [_plain(v) for v in spec]
    if isinstance(spec, Mapping) and "choices" in spec:
        extra = set(spec) - {"choices"}
        if extra:
            raise SearchSpaceError(f"search space entry {name!r}: a choices dict takes no other key, got {sorted(extra)}")
        spec = list(spec["choices"])
    if isinstance(spec, (list, tuple)):
        choices = tuple(_plain(v) for v in spec)
        if not choices:
            raise SearchSpaceError(f"search space entry {name!r} has an empty list of choices")
        for c in choices:
            if c is not None and not isinstance(c, (bool, int, float, str)):
                raise SearchSpaceError(
                    f"search space entry {name!r}: choice {c!r} is a {type(c).__name__}; choices must be "
                    "None, bool, int, float or str (give a fixed value instead of a list to set other objects)"
                )
        return CategoricalDistribution(choices)
    if isinstance(spec, Mapping):
        unknown = set(spec) - _RANGE_KEYS
        if unknown:
            raise SearchSpaceError(
                f"search space entry {name!r}: unknown key(s) {sorted(unknown)}; a range takes "
                f"{sorted(_RANGE_KEYS)} and a categorical {{'choices': [...]}}"
            )
        if "low" not in spec or "high" not in spec:
            raise SearchSpaceError(f"search space entry {name!r}: a range needs both 'low' and 'high', got {dict(spec)}")
        low, high = _plain(spec["low"]), _plain(spec["high"])
        for end, v in (("low", low), ("high", high)):
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise SearchSpaceError(f"search space entry {name!r}: {end}={v!r} is not a finite number")
        kind = spec.get("type")
        if kind is None:
            kind = "int" if _is_int(low) and _is_int(high) else "float"
        if kind not in ("int", "float"):
            raise SearchSpaceError(f"search space entry {name!r}: type must be 'int' or 'float', got {kind!r}")
        if low > high:
            raise SearchSpaceError(f"search space entry {name!r} is an empty range: low={low!r} > high={high!r}")
        log = bool(spec.get("log", False))
        step = _plain(spec.get("step"))
        if log and low <= 0:
            raise SearchSpaceError(f"search space entry {name!r}: a log range needs low > 0, got low={low!r}")
        if step is not None:
            if log:
                raise SearchSpaceError(f"search space entry {name!r}: 'step' and 'log' cannot be combined")
            if isinstance(step, bool) or not isinstance(step, numbers.Real) or step <= 0:
                raise SearchSpaceError(f"search space entry {name!r}: step must be a positive number, got {step!r}")
        if kind == "int":
            if not (float(low).is_integer() and float(high).is_integer()):
                raise SearchSpaceError(f"search space entry {name!r}: an int range needs integer ends, got {low!r}, {high!r}")
            if step is not None and not float(step).is_integer():
                raise SearchSpaceError(f"search space entry {name!r}: an int range needs an integer step, got {step!r}")
            return IntDistribution(int(low), int(high), log=log, step=int(step) if step is not None else 1)
        return FloatDistribution(float(low), float(high), log=log, step=float(step) if step is not None else None)
    return None  # a fixed value


def check_distribution(estimator, name: str, dist: BaseDistribution) -> None:
    """Refuse a tuned range or list of choices holding values the estimator's declared parameter
    constraints (scikit-learn's ``_parameter_constraints``) refuse: every trial drawing them would fail.

    A range is checked at its ends (the constraints are intervals or sets of options), a categorical
    at every choice. Estimators without declared constraints are not checked; fixed values are
    checked with the whole setting before any trial (tsrep.tuning.tune)."""
    constraints = getattr(type(estimator), "_parameter_constraints", None)
    if not isinstance(constraints, Mapping) or name not in constraints:
        return
    if isinstance(dist, CategoricalDistribution):
        values = [(f"choice {c!r}", c) for c in dist.choices]
    elif isinstance(dist, (FloatDistribution, IntDistribution)):
        values = [(f"low={dist.low!r}", dist.low), (f"high={dist.high!r}", dist.high)]
    else:
        return
    for what, value in values:
        try:
            check_constraints({name: constraints[name]}, {name: value}, type(estimator).__name__)
        except ValueError as err:  # InvalidParameterError
            raise SearchSpaceError(
                f"search space entry {name!r}: {what} is outside what the parameter accepts: {err}"
            ) from None


def set_params_of(estimator) -> dict:
    """The parameters of `estimator` whose value differs from its class's default: what the user set
    (a value set equal to the default cannot be told apart from it)."""
    try:
        signature = inspect.signature(type(estimator).__init__)
    except (TypeError, ValueError):  # pragma: no cover - a constructor without a signature
        return {}
    changed = {}
    for name, value in estimator.get_params(deep=False).items():
        parameter = signature.parameters.get(name)
        if parameter is None or parameter.default is inspect.Parameter.empty:
            continue
        if not _same_value(value, parameter.default):
            changed[name] = value
    return changed


def _same_value(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a == b)
    except (TypeError, ValueError):  # objects without a plain equality
        return False


class SearchSpace:
    """A validated search space for one estimator: tuned distributions and fixed values.

    Attributes
    ----------
    distributions : dict of str to optuna distribution
        The tuned parameters.
    fixed : dict
        Values the search space sets in every trial.
    kept : dict
        Parameters of the default space left untuned because the estimator sets them: every trial
        uses the estimator's value.
    """

    def __init__(self, estimator, search_space: Mapping | None = None, continuous: bool = False, default=True):
        base = {}
        self.kept: dict = {}
        if default:
            base = dict(PAPER_SEARCH_SPACE_CONTINUOUS if continuous else PAPER_SEARCH_SPACE)
            # A parameter the user set on the estimator is their choice: the default space does not
            # overrule it (the search space given here still may, by naming it).
            named = set(search_space) if isinstance(search_space, Mapping) else set()
            self.kept = {k: v for k, v in set_params_of(estimator).items() if k in base and k not in named}
            base = {k: v for k, v in base.items() if k not in self.kept}
        if search_space is not None and not isinstance(search_space, Mapping):
            raise SearchSpaceError(
                f"search_space must be a dict of parameter name -> spec, got {type(search_space).__name__}"
            )
        merged = {**base, **dict(search_space or {})}
        valid = sorted(estimator.get_params(deep=False))
        unknown = [k for k in merged if k not in valid]
        if unknown:
            hints = []
            for k in unknown:
                close = difflib.get_close_matches(str(k), valid, n=1)
                hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise SearchSpaceError(
                f"unknown parameter(s) in the search space for {type(estimator).__name__}: {', '.join(hints)}; "
                f"its parameters are: {', '.join(valid)}"
            )
        self.distributions: dict[str, BaseDistribution] = {}
        self.fixed: dict = {}
        for name, spec in merged.items():
            dist = to_distribution(name, spec)
            if dist is None:
                self.fixed[name] = _plain(spec)
            else:
                check_distribution(estimator, name, dist)
                self.distributions[name] = dist
        self.estimator_params = estimator.get_params(deep=False)

    def suggest(self, trial: optuna.Trial) -> dict:
        """Sampled values for the tuned parameters, plus the fixed ones."""
        params = {name: _suggest(trial, name, dist) for name, dist in self.distributions.items()}
        return {**self.fixed, **params}

    def first_point(self) -> dict:
        """One point of the space (first choice or lower end of each tuned parameter) plus the fixed values."""
        point = {}
        for name, dist in self.distributions.items():
            point[name] = dist.choices[0] if isinstance(dist, CategoricalDistribution) else dist.low
        return {**self.fixed, **point}

    def describe(self) -> dict:
        """A JSON-friendly description (stored with the study, written to the config's metadata)."""
        out = {}
        for name, dist in self.distributions.items():
            if isinstance(dist, CategoricalDistribution):
                out[name] = list(dist.choices)
            else:
                d = {"low": dist.low, "high": dist.high, "type": "int" if isinstance(dist, IntDistribution) else "float"}
                if dist.log:
                    d["log"] = True
                if dist.step is not None and not (isinstance(dist, IntDistribution) and dist.step == 1):
                    d["step"] = dist.step
                out[name] = d
        for name, value in self.fixed.items():
            out[name] = value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)
        return out


def _suggest(trial: optuna.Trial, name: str, dist: BaseDistribution):
    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    if isinstance(dist, FloatDistribution):
        return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)
    raise SearchSpaceError(f"search space entry {name!r}: unsupported distribution {dist!r}")


def adjust_params(params: dict, estimator_params: dict) -> tuple[dict, dict]:
    """Snap p so that n_heads divides the attention width round(p * d_model).

    Off the paper's grid (continuous p, small d_model, another n_heads) most p give a width that
    n_heads does not divide, which the estimator rejects. p is moved to the nearest multiple of
    n_heads in [n_heads, d_model] channels. Returns (params used, {name: value} of what changed).
    """
    if "p" not in params:
        return params, {}
    full = {**estimator_params, **params}
    p, d, heads = full.get("p"), full.get("d_model"), full.get("n_heads")
    if not (_is_int(d) and _is_int(heads) and isinstance(p, numbers.Real)) or heads < 1 or d < heads or p <= 0:
        return params, {}
    d_attn, _ = split_width(d, p)
    if d_attn > 0 and d_attn % heads == 0:
        return params, {}
    widths = np.arange(heads, d + 1, heads)
    width = int(widths[np.argmin(np.abs(widths - p * d))])
    new_p = width / d
    return {**params, "p": new_p}, {"p": new_p}
