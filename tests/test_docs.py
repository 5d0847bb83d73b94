"""The documentation builds with warnings as errors, its example gallery runs and draws its pictures, the API
reference lists every public class and function (an estimator's page with its inherited methods), the docs extra
installs everything the build imports, and every docstring example of the public API passes as a doctest.

The build takes about a minute on two busy cores (the gallery trains tiny models on data shipped with aeon); it
runs on a copy of docs/, so nothing is written into the repository."""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = (DOCS / "api.rst").read_text(encoding="utf-8")
EXAMPLES = sorted(p.stem for p in (DOCS / "examples").glob("plot_*.py"))
#: Public objects that must show an example (every docstring example of the public API runs, see
#: docstring_examples; these must have one): the estimators, the tuner, the loaders and the callbacks.
MUST_HAVE_EXAMPLES = [
    "tsrep.EADCTransformerClassifier",
    "tsrep.EADCTransformerRegressor",
    "tsrep.TSRepEncoder",
    "tsrep.sktime.EADCTransformerClassifier",
    "tsrep.sktime.EADCTransformerRegressor",
    "tsrep.tuning.tune",
    "tsrep.tuning.TSRepSearchCV",
    "tsrep.data.load_archive",
    "tsrep.models.get_model",
    "tsrep.training.callbacks.Callback",
    "tsrep.training.callbacks.CSVLogger",
    "tsrep.training.callbacks.TensorBoardLogger",
    "tsrep.training.callbacks.MLflowLogger",
    "tsrep.training.callbacks.OptunaPruning",
]
PUBLIC_MODULES = ["tsrep", "tsrep.estimators", "tsrep.data", "tsrep.tuning", "tsrep.benchmarks", "tsrep.analysis",
                  "tsrep.training", "tsrep.backbones", "tsrep.nn", "tsrep.exceptions"]


def api_entries() -> set[str]:
    """Fully qualified names of api.rst: each autosummary entry under its currentmodule."""
    names, module = set(), None
    for line in API.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
        elif (m := re.match(r"   ([A-Za-z_][\w]*)$", line)) and module:
            names.add(f"{module}.{m.group(1)}")
    return names


def test_api_reference_lists_every_public_class_and_function():
    listed = api_entries()
    for name in listed:  # every entry exists
        module, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), name
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if callable(obj) and not any(n.endswith(f".{attr}") and _same(n, obj) for n in listed):
                missing.append(f"{module_name}.{attr}")
    assert not missing, f"public objects without an API page: {missing}"
    assert set(MUST_HAVE_EXAMPLES) <= listed


def _same(name: str, obj) -> bool:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr) is obj


def _documented_objects() -> dict[str, object]:
    """The public API by name: api.rst's entries, the tsrep classes they inherit from (whose methods they
    show), and the public modules (their own docstrings)."""
    objects = {name: importlib.import_module(name) for name in PUBLIC_MODULES}
    for name in sorted(api_entries()):
        module, _, attr = name.rpartition(".")
        objects[name] = getattr(importlib.import_module(module), attr)
    for obj in list(objects.values()):
        for base in getattr(obj, "__mro__", ())[1:]:
            if base.__module__.split(".")[0] == "tsrep":
                objects.setdefault(f"{base.__module__}.{base.__qualname__}", base)
    return objects


def docstring_examples() -> dict[str, doctest.DocTest]:
    """Every docstring example of the public API (the objects above and their own methods), by name."""
    finder = doctest.DocTestFinder(recurse=True)
    found: dict[tuple, doctest.DocTest] = {}
    for name, obj in _documented_objects().items():
        for test in finder.find(obj, name):
            if test.examples:
                found.setdefault((test.filename, test.lineno), test)  # one object listed under two names runs once
    return {test.name: test for test in found.values()}


EXAMPLES_FOUND = docstring_examples()


def test_every_examples_section_of_the_public_api_is_run_as_doctests():
    assert set(MUST_HAVE_EXAMPLES) <= set(EXAMPLES_FOUND), sorted(set(MUST_HAVE_EXAMPLES) - set(EXAMPLES_FOUND))
    assert set(MUST_HAVE_EXAMPLES) <= api_entries()
    # An Examples section written as a plain code block (no >>>) would be skipped silently by doctest.
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=False)
    without = [test.name for name, obj in _documented_objects().items() for test in finder.find(obj, name)
               if re.search(r"^\s*Examples\n\s*-{8}", test.docstring or "", re.M) and not test.examples]
    assert not without, f"Examples sections with no doctest (>>>) lines: {without}"


@pytest.mark.parametrize("name", sorted(EXAMPLES_FOUND))
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    # Examples write only into temporary directories: run from an empty folder, which must stay empty (a
    # relative path, or a tool's default location such as MLflow's ./mlflow.db, would land here).
    monkeypatch.chdir(tmp_path)
    tracking_uri = os.environ.get("MLFLOW_TRACKING_URI")
    test = EXAMPLES_FOUND[name]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    try:
        runner.run(test, out=report.append)
    finally:
        test.globs.clear()  # the example's models and data are not kept until the end of the session
        if "mlflow" in sys.modules:  # MLflowLogger sets MLflow's process-wide tracking URI (and its variable)
            sys.modules["mlflow"].set_tracking_uri(tracking_uri)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 1 and result.failed == 0, "".join(report)
    assert not list(tmp_path.iterdir()), f"{name} wrote into the working directory: {list(tmp_path.iterdir())}"


def _distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(requirements: list[str]) -> set[str]:
    return {_distribution(Requirement(r).name) for r in requirements}


def _third_party(modules) -> dict[str, set[str]]:
    """{top-level module: the distributions that install it}, for the modules not in the standard library."""
    installed = importlib.metadata.packages_distributions()
    tops = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {"tsrep", "__main__"}
    return {top: {_distribution(d) for d in installed.get(top, [])} for top in sorted(tops)}


def test_docs_extra_holds_every_package_the_docs_build_imports():
    # `pip install -e '.[docs]'` must be enough to build the documentation: the Sphinx extensions and theme of
    # conf.py, the gallery's imports, and the optional packages of tsrep that the documented modules import
    # (autosummary imports every module of api.rst: tsrep.sktime imports sktime).
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = {name: _requirements(reqs) for name, reqs in project["optional-dependencies"].items()}
    installs = _requirements(project["dependencies"]) | extras["docs"]

    conf = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse((DOCS / "conf.py").read_text())
            .body if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in ("extensions",
                                                                                                 "html_theme")}
    direct = {*conf["extensions"], conf["html_theme"]}
    for example in (DOCS / "examples").glob("*.py"):
        for node in ast.walk(ast.parse(example.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                direct |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                direct.add(node.module)
    missing = {top: dists for top, dists in _third_party(direct).items() if not dists & installs}
    assert not missing, f"the docs build imports these, which the docs extra does not install: {missing}"

    documented = sorted({name.rpartition(".")[0] for name in api_entries()} | set(PUBLIC_MODULES))
    probe = ("import importlib, json, sys\n"
             f"for name in {documented!r}: importlib.import_module(name)\n"
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-3000:]
    optional = set().union(*(reqs for name, reqs in extras.items() if name not in ("docs", "dev")))
    imported = _third_party(json.loads(done.stdout.splitlines()[-1]))
    missing = {top: dists for top, dists in imported.items() if dists & optional and not dists & installs}
    assert not missing, f"documented modules import optional packages the docs extra does not install: {missing}"


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("docs-src")
    shutil.copytree(DOCS, src, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("_build", "generated", "auto_examples", "__pycache__"))
    out = tmp_path_factory.mktemp("docs-html")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src),
                           str(out)], capture_output=True, text=True, env=env, timeout=900)
    warnings = [line for line in done.stderr.splitlines() if re.search(r"WARNING|ERROR|CRITICAL", line)]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or done.stderr[-5000:]
    return out


def test_docs_build_without_warnings_with_an_api_page_per_public_object(html):
    for name in sorted(api_entries()):
        page = html / "generated" / f"{name}.html"
        assert page.is_file(), page
    text = (html / "generated" / "tsrep.EADCTransformerClassifier.html").read_text(encoding="utf-8")
    assert "min_steps" in text and "Examples" in text  # numpydoc rendered the parameters and the examples
    for page in ("index", "design", "references", "api", "user_guide/install", "user_guide/recipe",
                 "user_guide/tuning", "user_guide/benchmark", "user_guide/backbones", "user_guide/parallel",
                 "user_guide/cost", "user_guide/pretraining", "user_guide/estimators"):
        assert (html / f"{page}.html").is_file(), page
    references = (html / "references.html").read_text(encoding="utf-8")
    for title in ("Convolution-enhanced Evolving Attention Networks", "Diversifying Multi-Head Attention",
                  "Interacting-Head Attention", "Crossed Co-Attention Networks", "Bake off redux",
                  "extrinsic regression", "The UCR Time Series Archive"):
        assert title in references, title


def test_gallery_examples_ran_and_drew_their_pictures(html):
    assert len(EXAMPLES) >= 4
    for stem in EXAMPLES:
        page = (html / "auto_examples" / f"{stem}.html").read_text(encoding="utf-8")
        images = re.findall(rf'src="[^"]*(sphx_glr_{stem}_\d+\.png)"', page)
        assert images, f"{stem}: no picture"
        for image in images:
            assert (html / "_images" / image).stat().st_size > 5000, image


def test_estimator_pages_list_their_methods_inherited_ones_included(html):
    # Most of an estimator's methods are inherited (fit from tsrep's training harness, predict_proba and score
    # from aeon, get_params from scikit-learn); its page lists them all, as scikit-learn's API pages do.
    estimator = ("fit", "predict", "score", "save", "load", "get_params", "set_params")
    expected = {
        "tsrep.EADCTransformerClassifier": (*estimator, "predict_proba"),
        "tsrep.EADCTransformerRegressor": estimator,
        "tsrep.estimators.BackboneClassifier": (*estimator, "predict_proba"),
        "tsrep.estimators.BackboneRegressor": estimator,
        "tsrep.TSRepEncoder": ("fit", "transform", "fit_transform", "save", "load", "get_params"),
        "tsrep.sktime.EADCTransformerClassifier": ("fit", "predict", "predict_proba", "score", "get_params"),
        "tsrep.sktime.EADCTransformerRegressor": ("fit", "predict", "score", "get_params"),
    }
    for name, methods in expected.items():
        listed = _methods_on_page(html, name)
        assert set(methods) <= listed, f"{name}: no entry for {sorted(set(methods) - listed)}"
    # torch.nn.Module's own methods (documented by torch) stay off the network pages: only what tsrep adds.
    listed = _methods_on_page(html, "tsrep.nn.MultiHeadAttention")
    assert "forward" in listed and not listed & {"apply", "cuda", "state_dict", "zero_grad"}, listed


def _methods_on_page(html: Path, name: str) -> set[str]:
    text = (html / "generated" / f"{name}.html").read_text(encoding="utf-8")
    return set(re.findall(rf'<dt class="sig sig-object py" id="{re.escape(name)}\.(\w+)"', text))
