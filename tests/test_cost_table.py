"""benchmarks/cost_table.py: the ratios and medians of its table, and the imports it keeps off the clock."""

from __future__ import annotations

import sys

import pytest
from helpers import load_benchmark_script


@pytest.fixture(scope="module")
def script():
    return load_benchmark_script("cost_table")


def test_the_table_gives_each_problems_ratio_to_minirocket_and_the_medians(script):
    rows = [
        {"problem": "A", "model": "ea-dc-transformer", "accuracy": 0.9, "fit_s": 19.0, "predict_s": 1.0},
        {"problem": "A", "model": "minirocket", "accuracy": 0.8, "fit_s": 0.4, "predict_s": 0.1},
        {"problem": "B", "model": "ea-dc-transformer", "accuracy": 0.7, "fit_s": 59.0, "predict_s": 1.0},
        {"problem": "B", "model": "minirocket", "accuracy": 0.6, "fit_s": 1.0, "predict_s": 0.5},
        {"problem": "C", "model": "ea-dc-transformer", "error": "stopped"},
        {"problem": "C", "model": "minirocket", "accuracy": 1.0, "fit_s": 0.1, "predict_s": 0.1},
    ]
    lines = script.table(rows, ["ea-dc-transformer", "minirocket"]).splitlines()
    assert lines[2] == "| A | 0.900 | 20.0 | 0.800 | 0.5 | 40x |"  # 20 s against 0.5 s
    assert lines[3] == "| B | 0.700 | 60.0 | 0.600 | 1.5 | 40x |"
    assert lines[4] == "| C | failed |  | 1.000 | 0.2 |  |"  # a failed cell has no ratio and stays out of the medians
    assert lines[5] == "| **median** |  | 40.0 |  | 0.5 | 40x |"


def test_a_tsrep_cell_imports_its_first_use_modules_before_the_clock(script):
    assert script.import_first_use_modules("minirocket") == 0.0  # its modules come with building it
    assert script.import_first_use_modules("ea-dc-transformer") >= 0.0
    assert "aeon.transformations.collection.convolution_based" in sys.modules
    assert "torch._dynamo" in sys.modules
