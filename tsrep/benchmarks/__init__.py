"""The archive benchmark of paper 002's Tables I-IV: configs, cells, results store, tables, pictures.

Command line: ``tsrep-benchmark --config quick`` (or ``python benchmarks/run_archive.py``);
see tsrep.benchmarks.cli. Models by name: tsrep.models.get_model.
"""

from tsrep.benchmarks.config import BenchmarkConfig, ConfigError, load_config, parse_config
from tsrep.benchmarks.report import average_ranks, average_relative_difference, write_report
from tsrep.benchmarks.run import Cell, make_cells, run_benchmark, run_cell
from tsrep.benchmarks.store import ResultStore

__all__ = [
    "BenchmarkConfig", "Cell", "ConfigError", "ResultStore", "average_ranks", "average_relative_difference",
    "load_config", "make_cells", "parse_config", "run_benchmark", "run_cell", "write_report",
]
