"""``tsrep-benchmark``: run an archive benchmark from a YAML config and write paper-style tables.

    tsrep-benchmark                                   # the packaged quick config: shipped data, offline
    tsrep-benchmark --config shipped-paper-budget --jobs 2
    tsrep-benchmark --config paper --device cuda      # the paper's 17 problems (download once)
    tsrep-benchmark --config quick --report-only      # tables and pictures from stored results
    tsrep-benchmark --config ucr-dev --published MiniROCKET HC2 --published-in-ranks

--config takes a YAML file or a name: ./configs/<name>.yaml in the working directory (your own), else
one of the configs that ship with tsrep (quick, shipped-paper-budget, paper, ucr-dev, ucr).

Finished cells are stored in OUT/results.sqlite as they finish; running the same command again
after an interruption runs only the missing cells. Outputs in OUT (default results/archive/<name>):
tables.md, classification.md/.csv, regression.md/.csv, cells.csv, cd_<task>.png, bar_<task>.png, and
with several seeds <task>_seed_ensembles.md/.csv (each model's seeds averaged into one ensemble); with
`groups` in the config, a "Means by group" table under each task's table, also <task>_groups.csv.

On a Dask cluster (pip install 'tsrep[dask]'; `dask scheduler` on one machine, `dask worker
tcp://HOST:8786` on the others, each with tsrep installed):

    tsrep-benchmark --config paper --scheduler tcp://HOST:8786 --store postgresql://me@db-host/bench

The workers run the cells; only this process writes results. --store takes an SQLAlchemy URL or an
SQLite path, so that runs on several machines share one store.

Progress: a bar over the cells, and inside a cell a line on standard error after each fit's first epoch
and then about every 30 s (epoch, training loss, validation score, seconds), from the --jobs worker
processes as well; on a Dask cluster the workers send their lines to this process (and to their own
logs). --quiet turns both off.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tsrep._cli import positive_float, positive_int


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tsrep-benchmark", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="quick",
                   help="a YAML file, or a name: ./configs/<name>.yaml here, else tsrep's own (default: quick)")
    p.add_argument("--out", help="output directory (default: results/archive/<config name>)")
    p.add_argument("--jobs", type=positive_int, help="cells run in parallel (processes; default 1)")
    p.add_argument("--threads", type=positive_int,
                   help="torch threads per cell (default: CPU cores / jobs, on a Dask worker cores / its threads)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the cells on the workers of this Dask scheduler (default: the config's, else here)")
    p.add_argument("--scheduler-timeout", type=positive_float, default=10.0, metavar="SECONDS",
                   help="give up connecting to the scheduler after this long (default 10)")
    p.add_argument("--store", metavar="URL_OR_PATH",
                   help="results store: SQLAlchemy URL (postgresql://user@host/db) or SQLite path "
                        "(default: the config's, else OUT/results.sqlite)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ... (default auto)")
    p.add_argument("--datasets", nargs="+", help="run only these datasets (names or collections)")
    p.add_argument("--models", nargs="+",
                   help="run only these models (tsrep.models names, aeon:<name>, the config's variants)")
    p.add_argument("--seeds", nargs="+", type=int, help="run only these seeds")
    p.add_argument("--offline", nargs="?", const=True, default=None,
                   help="never download (optionally: a directory of .ts files to read first)")
    p.add_argument("--cache-dir", help="where archives are downloaded to and looked for")
    p.add_argument("--published", nargs="+", metavar="METHOD",
                   help="show these methods' published test scores beside the models (replaces the config's)")
    p.add_argument("--published-split", choices=("fold0", "mean"),
                   help="published scores on the archive's split (fold0) or their mean over resamples")
    p.add_argument("--published-in-ranks", action=argparse.BooleanOptionalAction, default=None,
                   help="count the published columns in the summary rows and the critical-difference diagram")
    p.add_argument("--report-only", action="store_true", help="only write tables and pictures from stored results")
    p.add_argument("--no-plots", action="store_true", help="no PNG pictures")
    p.add_argument("--list", action="store_true", help="list the models and the config's cells, then exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no progress lines of the fits")
    return p


def _override(raw: dict, args) -> dict:
    from tsrep.data.archive import COLLECTIONS

    raw = dict(raw)
    if args.datasets:
        raw["collections"] = [d for d in args.datasets if d.lower() in COLLECTIONS]
        raw["datasets"] = [d for d in args.datasets if d.lower() not in COLLECTIONS]
    if args.models:
        # Here, not at the top: the config module imports the models (torch), which --help does not wait for.
        from tsrep.benchmarks.config import model_resolver

        # The config's variants are named like models (parse_config checks the section itself).
        variants = raw.get("variants")
        resolve = model_resolver([v for v in variants if isinstance(v, str)] if isinstance(variants, dict) else [])
        raw["models"] = args.models
        kept = {resolve(m) for m in args.models}
        for key in ("model_params", "model_grid"):  # keep the entries of the models still run
            raw[key] = {k: v for k, v in (raw.get(key) or {}).items() if resolve(k) in kept}
    if args.seeds:
        raw["seeds"] = args.seeds
    for key in ("scheduler", "store"):
        if getattr(args, key):
            raw[key] = getattr(args, key)
    for key, value in (("published", args.published), ("published_split", args.published_split),
                       ("published_in_ranks", args.published_in_ranks)):
        if value is not None:
            raw[key] = value
    data = dict(raw.get("data") or {})
    if args.offline is not None:
        data["offline"] = args.offline
    if args.cache_dir:
        data["cache_dir"] = args.cache_dir
    raw["data"] = data
    return raw


def _output_problem(out: Path) -> str | None:
    """Why the output directory cannot be written (None when it can), found before any cell runs."""
    from tsrep.training.resume import check_writable_directory

    try:
        check_writable_directory(out, "--out")
    except OSError as err:
        return str(err)
    return None


def _error(message) -> int:
    print(f"tsrep-benchmark: error: {message}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # Imported once the arguments are read: --help and usage errors do not wait for torch and aeon.
    from tsrep.benchmarks.config import ConfigError, parse_config, read_config
    from tsrep.benchmarks.run import make_cells

    try:
        raw, name, where = read_config(args.config)
        # --datasets runs a part of the config: its groups keep the datasets still run.
        cfg = parse_config(_override(raw, args), name=name, path=where, datasets_narrowed=bool(args.datasets))
    except (ConfigError, ValueError) as err:
        return _error(err)
    out = Path(args.out or Path("results") / "archive" / cfg.name)
    if cfg.scheduler is not None and args.jobs is not None:
        return _error("--jobs runs cells on this machine; with a Dask scheduler its workers decide how many run "
                      "at once")
    if not args.list:
        problem = _run_problem(args.device, cfg, out)
        if problem:
            return _error(problem)
    cells = make_cells(cfg, args.device)
    if args.list:
        _print_listing(cfg, cells, out)
        return 0
    print(f"{cfg.name}: {len(cfg.datasets)} datasets x {len(cfg.models)} models x {len(cfg.seeds)} seeds = "
          f"{len(cells)} cells; results in {out}", flush=True)
    start = time.perf_counter()
    results, failed = _run_and_read_results(args, cfg, out, cells)
    if results is None:
        return failed
    df, outputs = results
    files = _write_report(args, cfg, out, df, outputs)
    ok = int((df["status"] == "ok").sum()) if len(df) else 0
    print(f"{ok}/{len(cells)} cells done; wall time {time.perf_counter() - start:.0f} s; files:")
    for f in files:
        print(f"  {f}")
    return 0 if ok == len(cells) else 1


def _run_problem(device, cfg, out: Path) -> str | None:
    """Why no cell could run (a device torch refuses, an output directory that cannot be written), or None."""
    from tsrep.benchmarks.run import check_device

    try:
        check_device(device, local=cfg.scheduler is None)
    except ValueError as err:
        return f"--device: {err}"
    return _output_problem(out)


def _print_listing(cfg, cells: list, out: Path) -> None:
    """--list: the models tsrep and aeon offer, the published methods, the config's variants and its cells."""
    from tsrep.benchmarks.published import STUDIES, published_methods
    from tsrep.benchmarks.registry import AEON_ESTIMATORS, AEON_PREFIX
    from tsrep.models import MODELS

    for name, spec in MODELS.items():
        print(f"{name:20s} {spec.label:12s} {spec.description}")
    for name, entry in AEON_ESTIMATORS.items():
        print(f"{AEON_PREFIX + name:20s} {entry.label:12s} aeon's {', '.join(entry.class_names())}")
    for task in STUDIES:
        print(f"published ({task}): {', '.join(published_methods(task))}")
    if cfg.variants:
        print(f"\nvariants of {cfg.name} (run when listed in 'models'):")
    for name, variant in cfg.variants.items():
        params = ", ".join(f"{k}={v!r}" for k, v in variant.params.items()) or "its defaults"
        run = "" if name in cfg.models else " [not run]"
        print(f"{name:20s} {variant.label}: {variant.model} with {params}{run}")
    print(f"\n{cfg.name}: {len(cfg.datasets)} datasets x {len(cfg.models)} models x {len(cfg.seeds)} seeds "
          f"= {len(cells)} cells -> {out}")
    print("datasets:", ", ".join(cfg.datasets))


def _run_and_read_results(args, cfg, out: Path, cells: list):
    """Run the cells missing from the store (none with --report-only); returns ((the cells' stored rows as a
    DataFrame, their stored test outputs), None), or (None, exit status) when the store or the scheduler
    fails or the run is interrupted."""
    from tsrep.benchmarks.run import SchedulerError, run_benchmark, superseded_cells
    from tsrep.benchmarks.store import DEFAULT_NAME, ResultStore, StoreError

    store = None
    try:
        store = ResultStore(cfg.store or out / DEFAULT_NAME)
        if args.report_only:
            older = superseded_cells(store, cells)
            if older:
                print(f"note: {len(older)} of the {len(cells)} cells are stored in {store.where} under another "
                      "specification only (a changed default or 'auto' rule, another package version, or other "
                      "parameters): they are not reported; run without --report-only to fit them again",
                      file=sys.stderr)
        else:
            store, cells = run_benchmark(cfg, out, jobs=args.jobs or 1, device=args.device, threads=args.threads,
                                         progress=not args.quiet, store=store,
                                         scheduler_timeout=args.scheduler_timeout)
        keys = [c.key for c in cells]
        return (store.frame(keys=keys), store.outputs(keys=keys)), None
    except (StoreError, SchedulerError) as err:
        return None, _error(err)
    except KeyboardInterrupt:
        where = store.where if store is not None else out / DEFAULT_NAME
        print(f"\ninterrupted: finished cells are stored in {where}; "
              "run the same command again to finish the others", file=sys.stderr)
        return None, 130


def _write_report(args, cfg, out: Path, df, outputs: dict) -> list:
    """Write the tables (and pictures) of the stored rows to `out`, print the markdown; returns the files."""
    from tsrep.benchmarks.report import reference_scores, write_report

    references = reference_scores(cfg.datasets, cfg.offline, cfg.cache_dir)
    report = write_report(df, cfg.models, cfg.datasets, out, title=f"{cfg.name} ({len(cfg.seeds)} seed(s))",
                          plots=not args.no_plots, references=references, published=cfg.published,
                          published_split=cfg.published_split, published_in_ranks=cfg.published_in_ranks,
                          outputs=outputs, groups=cfg.groups, labels=cfg.labels())
    print(report["markdown"])
    return report["files"]


if __name__ == "__main__":
    raise SystemExit(main())
