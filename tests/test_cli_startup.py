"""The command lines answer --help without loading the heavy libraries: tsrep-benchmark, tsrep-tune and
``python -m tsrep`` import neither torch nor aeon, Optuna or scikit-learn (seconds of start-up each) before
their arguments are read, and tsrep's packages load their public names on first use."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "aeon", "optuna", "sklearn")
COMMANDS = ("tsrep-benchmark", "tsrep-tune", "python -m tsrep")

# Runs a command as it is started from a shell (a console script of pyproject.toml through its entry point, or
# python -m), then prints which heavy modules it had imported when it exited.
PROBE = """
import importlib.metadata, json, runpy, sys
command, args = sys.argv[1], sys.argv[2:]
sys.argv = [command, *args]
try:
    if command == "python -m tsrep":
        runpy.run_module("tsrep", run_name="__main__", alter_sys=True)
    else:
        (entry,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == command]
        entry.load()()
    code = None
except SystemExit as exited:
    code = exited.code
print(json.dumps({"code": code, "loaded": [m for m in HEAVY if m in sys.modules]}))
"""


def run_probe(command: str, *args: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}", command, *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    *printed, last = done.stdout.splitlines()
    return json.loads(last), "\n".join(printed)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_imports_no_heavy_library(command):
    result, printed = run_probe(command, "--help")
    assert result["code"] == 0 and printed.startswith("usage: "), printed
    assert result["loaded"] == [], f"{command} --help imported {result['loaded']}"


@pytest.mark.parametrize("command, args", [
    ("tsrep-benchmark", ["--jobs", "0"]),
    ("tsrep-tune", ["--n-trials", "1"]),  # --dataset missing
    ("python -m tsrep", ["--min-steps", "lots"]),
])
def test_usage_errors_import_no_heavy_library(command, args):
    result, _ = run_probe(command, *args)
    assert result["code"] == 2 and result["loaded"] == [], result


@pytest.mark.parametrize("package", ["tsrep.nn", "tsrep.data", "tsrep.training", "tsrep.backbones", "tsrep.tuning",
                                     "tsrep.benchmarks"])
def test_every_public_name_of_a_package_loads_on_first_use(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        exec(f"from {package} import {name}", {})
        assert name in dir(module)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")


def test_tsrep_tuning_tune_is_the_function_whichever_import_comes_first():
    # The submodule tsrep.tuning.tune shares its name with the function it defines: loading the module first (as
    # `from tsrep.tuning.tune import ...` does) must not leave the package's `tune` bound to the module.
    code = ("import importlib, types; importlib.import_module('tsrep.tuning.tune'); "
            "from tsrep.tuning import tune; print(isinstance(tune, types.FunctionType))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr
