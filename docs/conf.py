"""Sphinx configuration of the tsrep documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (tests/test_docs.py does the same into a
temporary folder). The example gallery (docs/examples/plot_*.py) runs at build time on data that ships with aeon.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "tsrep" / "__init__.py").is_file():
    sys.path.insert(0, str(ROOT))  # the source tree, when tsrep is not installed

import tsrep  # noqa: E402

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)

project = "tsrep"
author = "the tsrep developers"
copyright = "the tsrep developers (MIT licence)"
release = version = tsrep.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
# The references page lists works the other pages cite only in passing (by author and year).
suppress_warnings = ["ref.citation"]
exclude_patterns = ["_build", "examples/*", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json", "**/sg_execution_times.rst"]

# API pages: one per public object (api.rst lists them), written by autosummary at build time.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {
    "member-order": "bysource",
    # scikit-learn's metadata-routing setters: generated on every estimator, documented by scikit-learn.
    "exclude-members": "set_fit_request, set_predict_request, set_score_request, set_transform_request, "
                       "set_partial_fit_request, set_inverse_transform_request, set_output",
}
autodoc_typehints = "none"  # the numpydoc Parameters sections say the types
numpydoc_show_class_members = False  # the class template lists the methods
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# The example gallery: tiny budgets (seconds each), shipped data only, executed at every build.
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "write_computation_times": False,
    "show_memory": False,
    "show_signature": False,
    "backreferences_dir": None,
    "doc_module": (),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
}

html_theme = "pydata_sphinx_theme"
html_title = f"tsrep {version}"
html_static_path = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": [],
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "references": []}


def _shape_tables_as_literal_blocks(app, what, name, obj, options, lines):
    """``forward`` docstrings are aligned tables of tensor shapes (``x: (B, N, d) ...``): show them verbatim."""
    if what == "method" and name.rsplit(".", 1)[-1] in ("forward", "forward_features") and lines:
        text = [line for line in lines]
        lines[:] = ["Shapes::", ""] + ["    " + line if line else "" for line in text]


#: Inherited members from these packages are left off the API pages: torch.nn.Module's hundred-odd methods
#: (``apply``, ``buffers``, ``cuda``, ...), torch.optim.Optimizer's and the built-in exceptions' are documented
#: by torch and Python, and would bury the methods tsrep adds. Inherited estimator methods (``fit``,
#: ``predict``, ``score``, ``get_params``, ... from tsrep, aeon, scikit-learn or sktime) are listed, as on
#: scikit-learn's API pages.
_FOREIGN_BASES = ("torch", "builtins")


def _defining_module(obj) -> str:
    """Module of the class that defines a method or property ("" for data: its value's type says nothing)."""
    if not (inspect.isroutine(obj) or isinstance(obj, property)):
        return ""
    obj = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj  # property, classmethod
    owner = getattr(obj, "__objclass__", None)  # methods of built-in types (BaseException.add_note, ...)
    return getattr(owner, "__module__", None) or getattr(obj, "__module__", None) or ""


def _skip_foreign_inherited_members(app, what, name, obj, skip, options):
    if what == "class" and _defining_module(obj).split(".")[0] in _FOREIGN_BASES:
        return True
    return None


def _summarise_foreign_methods(app, what, name, obj, options, lines):
    """A method inherited from aeon, scikit-learn or sktime: its summary and where it comes from.

    Their full docstrings use those projects' own glossary terms and labels (sktime's ``mtype``, scikit-learn's
    ``metadata_routing``) and markup that only their builds accept, so rendered here they fail the ``-W`` build;
    the summary says what the method does, the class named is where its parameters are documented.
    """
    if what not in ("method", "property", "attribute") or not lines:
        return
    module = _defining_module(obj)
    if not module or module.split(".")[0] == "tsrep":
        return
    func = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    owner = getattr(func, "__qualname__", "").rpartition(".")[0]
    summary = []
    for line in lines:
        if not line.strip():
            if summary:
                break
            continue
        summary.append(line.strip())
    text = re.sub(r":[\w:.-]+:`(?:([^`<]*?)\s*<[^`>]*>|([^`]*))`", lambda m: f"``{m.group(1) or m.group(2)}``",
                  " ".join(summary))
    text = re.sub(r"(?<!`)\*+|(?<!`)`(?!`)", "", text)  # stray emphasis and interpreted-text markers
    lines[:] = [text, "", f"Inherited from ``{module}.{owner}``, where its parameters are documented."
                if owner else f"Inherited from ``{module}``."]


def setup(app):
    app.connect("autodoc-process-docstring", _shape_tables_as_literal_blocks)
    # Before numpydoc (priority 500), which then sees a plain summary.
    app.connect("autodoc-process-docstring", _summarise_foreign_methods, priority=400)
    app.connect("autodoc-skip-member", _skip_foreign_inherited_members)
