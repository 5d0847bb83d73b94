"""The archive benchmark of Tables I-IV of Wang et al., "Convolution-enhanced Evolving Attention Networks"
(IEEE TPAMI 2023): configs, cells, results store, tables, pictures.

Command line: ``tsrep-benchmark --config quick`` (or ``python benchmarks/run_archive.py``);
see tsrep.benchmarks.cli. Models by name: tsrep.models.get_model, and allow-listed aeon estimators as
``aeon:<name>`` (tsrep.benchmarks.registry). Published scores of other methods to show beside them:
tsrep.benchmarks.published.
"""

from tsrep.benchmarks.config import BenchmarkConfig, ConfigError, config_names, load_config, parse_config
from tsrep.benchmarks.published import published_methods, published_results
from tsrep.benchmarks.report import average_ranks, average_relative_difference, write_report
from tsrep.benchmarks.run import Cell, make_cells, run_benchmark, run_cell
from tsrep.benchmarks.store import ResultStore

__all__ = [
    "BenchmarkConfig", "Cell", "ConfigError", "ResultStore", "average_ranks", "average_relative_difference",
    "config_names", "load_config", "make_cells", "parse_config", "published_methods", "published_results",
    "run_benchmark", "run_cell", "write_report",
]
