"""Every hyperparameter and training setting is declared once: the training settings are TrainConfig's and
PretrainConfig's fields (default, constraint, documentation), the estimators' parameters of the same names are
derived from them, the estimators' Parameters sections are written from the declarations, and tsrep.training
imports without a circle."""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import fields
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pytest
from numpydoc.docscrape import ClassDoc
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep.estimators import BackboneClassifier, BackboneRegressor
from tsrep.estimators._parameters import (
    PRETRAINING, TRAINING, Declared, describe_constraints, fill_doc, keyword_parameters,
)
from tsrep.training import fit_classifier
from tsrep.training.config import PretrainConfig, TrainConfig, parameter_name

from test_docstrings import ESTIMATORS as DOCUMENTED_ESTIMATORS

ROOT = Path(__file__).resolve().parents[1]
# The public estimators whose Parameters sections are checked by the docstring tests, and sktime's adapters.
ESTIMATORS = [*DOCUMENTED_ESTIMATORS, "tsrep.sktime.EADCTransformerClassifier", "tsrep.sktime.EADCTransformerRegressor"]
SERIES_ESTIMATORS = [EADCTransformerClassifier, EADCTransformerRegressor, BackboneClassifier, BackboneRegressor]


def _load(name: str) -> type:
    module, _, attr = name.rpartition(".")
    if module == "tsrep.sktime":
        pytest.importorskip("sktime")
    return getattr(importlib.import_module(module), attr)


def _documented_names(cls: type) -> list[str]:
    """Parameter names of the numpydoc Parameters section, in order (a shared entry "alpha, beta" gives both)."""
    return [name.strip() for entry in ClassDoc(cls)["Parameters"] for name in entry.name.split(",")]


# ----------------------------------------------------------------- the Parameters sections
@pytest.mark.parametrize("name", ESTIMATORS)
def test_the_parameters_section_lists_exactly_the_init_parameters_in_order(name):
    cls = _load(name)
    assert _documented_names(cls) == list(inspect.signature(cls).parameters)


@pytest.mark.parametrize("cls", SERIES_ESTIMATORS, ids=lambda cls: cls.__name__)
def test_a_parameter_is_documented_by_its_declaration(cls):
    entries = {entry.name: entry for entry in ClassDoc(cls)["Parameters"]}
    declarations = cls._parameter_declarations
    for name, declared in declarations.items():
        text = " ".join(" ".join(entries[name].desc).split())
        assert text == " ".join(declared.doc.split()), name
        assert entries[name].type.endswith(f"default={cls().get_params()[name]!r}".replace("'", '"')), name


def test_shared_parameters_read_alike_in_every_estimator_and_the_task_variants_differ():
    @keyword_parameters({"fraction": Declared(0.5, [Interval(Real, 0, 1, closed="both")], "Shared."),
                         "smoothing": Declared(None, [None], {"classification": "Per class.",
                                                              "regression": "Per target."}, "None")})
    class Base:
        """Summary."""

    class Classifier(Base):
        """Classifier.

        {parameters}

        Attributes
        ----------
        {attributes: classes_
        n_classes_ estimators_}
        """

        _task = "classification"

    class Regressor(Base):
        """Regressor.

        {parameters}
        """

        _task = "regression"

    classifier, regressor = ClassDoc(Classifier), ClassDoc(Regressor)
    assert [(p.name, p.type, p.desc) for p in classifier["Parameters"]] == [
        ("fraction", "float in [0, 1], default=0.5", ["Shared."]), ("smoothing", "None, default=None", ["Per class."])
    ]
    assert regressor["Parameters"][1].desc == ["Per target."]
    assert [(p.name, p.type) for p in classifier["Attributes"]] == [
        ("classes_", "ndarray of shape (n_classes,)"), ("n_classes_", "int"),
        ("estimators_", "list of classifiers or None"),
    ]


def test_an_undocumented_parameter_or_attribute_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="'depth' has no documentation"):
        @keyword_parameters({"depth": (3, [int])})
        class Undocumented:
            """Summary.

            {parameters}
            """
    with pytest.raises(KeyError, match="fitted_"):
        fill_doc("Summary.\n\n    {attributes: fitted_}\n", object)


def test_the_type_shown_is_read_from_the_constraints():
    auto_or_count = [StrOptions({"auto"}), Interval(Integral, 0, None, closed="left")]
    assert describe_constraints(auto_or_count) == '"auto" or int >= 0'
    assert describe_constraints([Interval(Real, 0, 1, closed="left")]) == "float in [0, 1)"
    assert describe_constraints([StrOptions({"b", "a"}), None]) == '{"a", "b"} or None'
    assert describe_constraints(["boolean", dict]) == "bool or dict"
    with pytest.raises(TypeError, match="type_name"):
        describe_constraints("no_validation")


# ----------------------------------------------------------------- the configs are the source
def test_the_estimators_training_parameters_are_trainconfigs_fields():
    for f in fields(TrainConfig):
        declared = TRAINING[f.name]
        if f.name in ("max_epochs", "min_steps", "mixup", "patience"):  # "auto" in the estimators, resolved first
            assert declared.default == "auto"
            assert declared.constraints[1:] == f.metadata["constraints"]
            assert declared.doc.startswith(f.metadata["doc"])
        else:
            assert declared == (f.default, f.metadata["constraints"], f.metadata["doc"], f.metadata["type_name"])


def test_the_estimators_pretraining_parameters_are_pretrainconfigs_fields():
    for f in fields(PretrainConfig):
        name = parameter_name(f)
        declared = PRETRAINING.get(name, TRAINING.get(name))
        # One estimator parameter serves pretraining and fine-tuning alike (lr, batch_size, optimizer, ...).
        assert declared.default == f.default, name
        assert describe_constraints(declared.constraints) == describe_constraints(f.metadata["constraints"]), name


def test_the_defaults_a_user_meets_are_unchanged():
    expected = {"lr": 1e-3, "batch_size": 64, "max_epochs": "auto", "min_steps": "auto", "patience": "auto",
                "optimizer": "adamw", "weight_decay": 0.01, "lr_schedule": "onecycle", "mixup": "auto",
                "grad_clip": 4.0, "label_smoothing": "auto", "validation_fraction": "auto"}
    for cls in SERIES_ESTIMATORS:
        params = cls().get_params()
        assert {name: params[name] for name in expected} == expected, cls.__name__
    assert {"pretrain_epochs": 0, "mask_mean_length": 3}.items() <= EADCTransformerClassifier().get_params().items()
    encoder = TSRepEncoder().get_params()
    assert [encoder[name] for name in ("pretrain_epochs", "optimizer", "lr", "batch_size")] == [50, "radam", 1e-3, 64]
    loop = inspect.signature(fit_classifier).parameters  # the text and image loop keeps its own
    assert (loop["optimizer"].default, loop["weight_decay"].default, loop["grad_clip"].default) == ("adamw", 0.0, 1.0)


def test_from_params_takes_the_fields_by_name_and_the_resolved_values():
    params = EADCTransformerClassifier(lr=np.float64(3e-3), batch_size=np.int64(16), pretrain_epochs=np.int64(2),
                                       mask_mean_length=2, optimizer="radam").get_params()
    config = TrainConfig.from_params(params, max_epochs=50, min_steps=800, mixup=0.2, patience=None)
    assert (config.lr, config.batch_size, config.min_steps, config.mixup, config.patience) == (3e-3, 16, 800, 0.2, None)
    assert config.max_epochs == 50
    assert config.optimizer == "radam"
    assert type(config.batch_size) is np.int64  # handed on untouched, as the estimators always did
    pretrain = PretrainConfig.from_params(params)
    assert (pretrain.epochs, pretrain.batch_size, pretrain.mask_mean_length) == (2, 16, 2.0)
    assert pretrain.optimizer == "radam"
    # plain numbers: the settings are recorded as JSON in a resumable state
    assert type(pretrain.epochs) is int and type(pretrain.mask_mean_length) is float
    assert PretrainConfig.from_estimator(TSRepEncoder()) == PretrainConfig(epochs=50, optimizer="radam")
    with pytest.raises(InvalidParameterError, match="'min_steps' parameter of TrainConfig"):
        TrainConfig.from_params(params, max_epochs=100)  # min_steps="auto" not resolved
    with pytest.raises(KeyError, match="lacks mask_ratio"):
        PretrainConfig.from_params({"pretrain_epochs": 1})


def test_a_config_is_valid_by_construction():
    with pytest.raises(InvalidParameterError, match="'batch_size' parameter of TrainConfig"):
        TrainConfig(batch_size=1)
    with pytest.raises(InvalidParameterError, match="'masking' parameter of PretrainConfig"):
        PretrainConfig(masking="random")


# ----------------------------------------------------------------- no import circle in tsrep.training
def _module_imports(path: Path) -> tuple[set[str], list[str]]:
    """(tsrep.training modules imported at module level, tsrep modules imported inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, nested = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tsrep"):
            (top.add(node.module) if node in tree.body else nested.append(node.module))
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.startswith("tsrep")]
            (top.update(names) if node in tree.body else nested.extend(names))
    return {m for m in top if m.startswith("tsrep.training.")}, nested


def test_tsrep_training_imports_without_a_circle_and_nothing_dodges_one_inside_a_function():
    graph = {}
    for path in sorted((ROOT / "tsrep" / "training").glob("*.py")):
        top, nested = _module_imports(path)
        graph[f"tsrep.training.{path.stem}"] = top
        assert not nested, f"{path.name} imports {nested} inside a function"

    def visit(module, stack):
        assert module not in stack, f"import circle: {' -> '.join([*stack, module])}"
        for imported in graph.get(module, ()):
            visit(imported, [*stack, module])

    for module in graph:
        visit(module, [])


# ----------------------------------------------------------------- the text and image estimators
TENSOR_ESTIMATORS = {  # name -> its own defaults of TrainConfig's fields
    "tsrep.EATextClassifier": {"lr": 1e-4, "batch_size": 8, "max_epochs": 3},
    "tsrep.estimators.EATextRegressor": {"lr": 1e-4, "batch_size": 8, "max_epochs": 3},
    "tsrep.EAViTClassifier": {"lr": 3e-3, "batch_size": 32, "max_epochs": 30},
    "tsrep.estimators.EAViTRegressor": {"lr": 3e-3, "batch_size": 32, "max_epochs": 30},
}


@pytest.mark.parametrize("name", TENSOR_ESTIMATORS)
def test_the_text_and_image_estimators_training_parameters_are_the_shared_declarations(name):
    from tsrep.estimators._parameters import COST, LONG_RUNS
    from tsrep.estimators._tensor_base import LOOP_SETTINGS

    cls = _load(name)
    declarations = cls._parameter_declarations
    expected = {**TENSOR_ESTIMATORS[name], "optimizer": "adamw", "optimizer_kwargs": None, "weight_decay": 0.01,
                "lr_schedule": "cosine", "grad_clip": 1.0, "device": "auto", "random_state": None, "callbacks": None,
                "mixed_precision": None}
    assert list(declarations)[-len(expected):] == [*LOOP_SETTINGS, "device", "random_state", "callbacks",
                                                   "mixed_precision"]
    assert {key: cls().get_params()[key] for key in expected} == expected
    settings = {f.name: f for f in fields(TrainConfig)}
    for setting in LOOP_SETTINGS:
        if setting != "lr_schedule":  # the loop names fewer schedules
            assert declarations[setting].constraints is settings[setting].metadata["constraints"], setting
    assert declarations["lr_schedule"].constraints[1] is callable
    assert declarations["lr_schedule"].constraints[0].options == {"cosine", "none"}
    shared = {"device": TRAINING, "random_state": TRAINING, "callbacks": LONG_RUNS, "mixed_precision": COST}
    for parameter, table in shared.items():
        assert declarations[parameter].constraints == table[parameter].constraints, parameter
    entries = {entry.name: " ".join(" ".join(entry.desc).split()) for entry in ClassDoc(cls)["Parameters"]}
    assert all(entries[key] == " ".join(declared.doc.split()) for key, declared in declarations.items())


@pytest.mark.parametrize("name", TENSOR_ESTIMATORS)
def test_the_text_and_image_estimators_refuse_a_schedule_their_loop_has_not(name):
    cls = _load(name)
    for accepted in ("cosine", "none", lambda optimizer: None):
        cls(lr_schedule=accepted)._validate_params()
    with pytest.raises(InvalidParameterError, match=f"'lr_schedule' parameter of {cls.__name__} must be a str among"):
        cls(lr_schedule="onecycle").fit(["a text", "another"] if "Text" in name else np.zeros((2, 8, 8)), [0, 1])
