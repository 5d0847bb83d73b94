"""Every public estimator documents every ``__init__`` parameter, with the default ``__init__`` has.

The check reads the class docstring's numpydoc Parameters section: an entry is a line at the section's
indentation, ``name : type, default=value`` (several names may share an entry, ``alpha, beta : ...``);
the stated default must be a Python literal equal to the real default.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import pytest

ESTIMATORS = [
    "tsrep.EADCTransformerClassifier",
    "tsrep.EADCTransformerRegressor",
    "tsrep.estimators.BackboneClassifier",
    "tsrep.estimators.BackboneRegressor",
    "tsrep.TSRepEncoder",
    "tsrep.tuning.TSRepSearchCV",
    "tsrep.EATextClassifier",
    "tsrep.estimators.EATextRegressor",
    "tsrep.EAViTClassifier",
    "tsrep.estimators.EAViTRegressor",
]
#: sktime adapters take exactly the parameters of the tsrep estimator they wrap (their __init__ is generated
#: from its signature) and point at its documentation instead of repeating it.
ADAPTERS = {
    "tsrep.sktime.EADCTransformerClassifier": "tsrep.EADCTransformerClassifier",
    "tsrep.sktime.EADCTransformerRegressor": "tsrep.EADCTransformerRegressor",
}

_NO_DEFAULT = object()


def _load(name: str) -> type:
    module, _, attr = name.rpartition(".")
    if module == "tsrep.sktime":
        pytest.importorskip("sktime")
    return getattr(importlib.import_module(module), attr)


def documented_parameters(doc: str) -> dict[str, str | object]:
    """{parameter name: the text after ``default=`` in its entry's first line, or _NO_DEFAULT}."""
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = next(i for i, line in enumerate(lines[:-1]) if line.strip() == "Parameters"
                     and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return {}
    indent = len(lines[start]) - len(lines[start].lstrip())
    entries: dict[str, str | object] = {}
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if not line.strip() or len(line) - len(line.lstrip()) > indent:  # blank, or an entry's description
            continue
        if i + 1 < len(lines) and lines[i + 1].strip() and set(lines[i + 1].strip()) == {"-"}:
            break  # the next section's title
        names, _, kind = line.strip().partition(":")
        match = re.search(r"default=(.*)$", kind)
        for name in names.split(","):
            entries[name.strip()] = match.group(1).strip() if match else _NO_DEFAULT
    return entries


def init_defaults(cls: type) -> dict[str, object]:
    signature = inspect.signature(cls.__init__)
    return {name: p.default for name, p in signature.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_docstring_states_every_init_parameter_with_its_real_default(name):
    cls = _load(name)
    documented = documented_parameters(cls.__doc__ or "")
    assert documented, f"{name}: no Parameters section in the class docstring"
    for param, default in init_defaults(cls).items():
        assert param in documented, f"{name}: parameter {param!r} is not in the docstring's Parameters section"
        if default is inspect.Parameter.empty:
            continue
        stated = documented[param]
        assert stated is not _NO_DEFAULT, f"{name}: parameter {param!r} states no default (real: {default!r})"
        try:
            value = ast.literal_eval(stated)
        except (ValueError, SyntaxError):
            pytest.fail(f"{name}: parameter {param!r} states default={stated}, not a Python literal "
                        f"(real: {default!r})")
        assert type(value) is type(default) and value == default, (
            f"{name}: parameter {param!r} states default={stated}, but __init__ has {default!r}"
        )


@pytest.mark.parametrize("name", ESTIMATORS)
def test_docstring_documents_no_parameter_init_lacks(name):
    cls = _load(name)
    unknown = set(documented_parameters(cls.__doc__ or "")) - set(init_defaults(cls))
    assert not unknown, f"{name}: the docstring documents {sorted(unknown)}, which __init__ does not take"


@pytest.mark.parametrize("name", ADAPTERS)
def test_sktime_adapter_takes_the_wrapped_estimators_parameters_and_points_at_their_documentation(name):
    adapter, wrapped = _load(name), _load(ADAPTERS[name])
    assert init_defaults(adapter) == init_defaults(wrapped)
    assert f":class:`{ADAPTERS[name]}`" in adapter.__doc__


def test_parser_reads_shared_entries_and_stops_at_the_next_section():
    doc = """Summary.

    Parameters
    ----------
    alpha, beta : float, default=0.5
        Two weights.
    name : str
        No default stated.

    Attributes
    ----------
    fitted_ : int
    """
    assert documented_parameters(doc) == {"alpha": "0.5", "beta": "0.5", "name": _NO_DEFAULT}


#: Parameters whose entries may read differently in two estimators that share them, with the reason; every
#: other shared parameter (the training recipe above all, which is the same in every estimator) must be written
#: word for word alike, so that an edit to one copy that misses the others fails here instead of drifting.
TASK_SPECIFIC = {"validation_fraction"}  # the auto rule's threshold differs for a classifier and a regressor
NETWORK_SPECIFIC = {
    "d_model", "n_blocks", "n_heads", "kernel_size", "dim_feedforward", "pooling", "norm",  # other networks
    "augmentation", "checkpoint_dir", "warm_start",  # the EA-DC-Transformer's stem, pretraining, token front end
    "n_estimators",  # the EA-DC-Transformer's entry also states the measured ensemble gains and max_tokens
    "precise_bn",  # "auto" with its measurements for the EA-DC-Transformer, off for the baselines (as their papers)
    "blend_minirocket",  # on for the EA-DC-Transformer classifier (measured), off for the baselines (as their papers)
}
SHARED_ENTRY_PAIRS = [
    ("tsrep.EADCTransformerClassifier", "tsrep.EADCTransformerRegressor",
     TASK_SPECIFIC | {"n_estimators", "max_tokens"}),  # the measured gains and the token rule: classifier only
    ("tsrep.estimators.BackboneClassifier", "tsrep.estimators.BackboneRegressor", TASK_SPECIFIC),
    ("tsrep.EADCTransformerClassifier", "tsrep.estimators.BackboneClassifier", NETWORK_SPECIFIC),
    ("tsrep.EADCTransformerRegressor", "tsrep.estimators.BackboneRegressor", NETWORK_SPECIFIC),
]


def _parameter_entries(cls: type) -> dict[str, tuple[str, str]]:
    from numpydoc.docscrape import ClassDoc

    return {p.name: (p.type, " ".join(" ".join(p.desc).split())) for p in ClassDoc(cls)["Parameters"]}


@pytest.mark.parametrize("first, second, may_differ", SHARED_ENTRY_PAIRS,
                         ids=[f"{a.rpartition('.')[2]}-{b.rpartition('.')[2]}" for a, b, _ in SHARED_ENTRY_PAIRS])
def test_parameters_two_estimators_share_are_documented_word_for_word_alike(first, second, may_differ):
    a, b = _parameter_entries(_load(first)), _parameter_entries(_load(second))
    shared = (a.keys() & b.keys()) - may_differ
    assert len(shared) >= 15, f"{first} and {second} share only {sorted(shared)}: the parser lost the entries"
    drifted = sorted(name for name in shared if a[name] != b[name])
    assert not drifted, (
        f"{first} and {second} document {drifted} differently; write the shared entries alike (or list the "
        "parameter, with its reason, among those that may differ)"
    )
