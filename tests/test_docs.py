"""The documentation builds with warnings as errors, its example gallery runs and draws its pictures, the API
reference lists every public class and function, and the docstring examples pass as doctests.

The build takes about a minute on two busy cores (the gallery trains tiny models on data shipped with aeon); it
runs on a copy of docs/, so nothing is written into the repository."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = (DOCS / "api.rst").read_text(encoding="utf-8")
EXAMPLES = sorted(p.stem for p in (DOCS / "examples").glob("plot_*.py"))
# Objects whose docstrings hold runnable examples (each runs in seconds).
DOCTESTED = [
    "tsrep.EADCTransformerClassifier",
    "tsrep.EADCTransformerRegressor",
    "tsrep.TSRepEncoder",
    "tsrep.tuning.tune",
    "tsrep.tuning.TSRepSearchCV",
    "tsrep.data.load_archive",
    "tsrep.models.get_model",
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
    assert set(DOCTESTED) <= listed


def _same(name: str, obj) -> bool:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr) is obj


@pytest.mark.parametrize("name", DOCTESTED)
def test_docstring_examples_run(name):
    module, _, attr = name.rpartition(".")
    obj = getattr(importlib.import_module(module), attr)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name)
    assert tests and "Examples" in obj.__doc__, f"{name} has no Examples section"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0, result


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
