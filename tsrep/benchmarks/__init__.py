"""The archive benchmark of Tables I-IV of Wang et al., "Convolution-enhanced Evolving Attention Networks"
(IEEE TPAMI 2023): configs, cells, results store, tables, pictures.

Command line: ``tsrep-benchmark --config quick`` (or ``python benchmarks/run_archive.py``);
see tsrep.benchmarks.cli. Models by name: tsrep.models.get_model, and allow-listed aeon estimators as
``aeon:<name>`` (tsrep.benchmarks.registry). Published scores of other methods to show beside them:
tsrep.benchmarks.published.
"""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): `tsrep-benchmark --help` (tsrep.benchmarks.cli) does not pay for torch and aeon.
__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(["BenchmarkConfig", "ConfigError", "config_names", "load_config", "parse_config"],
                    "tsrep.benchmarks.config"),
    **dict.fromkeys(["published_methods", "published_results"], "tsrep.benchmarks.published"),
    **dict.fromkeys(["average_ranks", "average_relative_difference", "write_report"], "tsrep.benchmarks.report"),
    **dict.fromkeys(["Cell", "make_cells", "run_benchmark", "run_cell"], "tsrep.benchmarks.run"),
    "ResultStore": "tsrep.benchmarks.store",
})

__all__ = [
    "BenchmarkConfig", "Cell", "ConfigError", "ResultStore", "average_ranks", "average_relative_difference",
    "config_names", "load_config", "make_cells", "parse_config", "published_methods", "published_results",
    "run_benchmark", "run_cell", "write_report",
]
