"""The archive benchmark on a Dask cluster: a LocalCluster on loopback (2 worker processes of 1 thread)
runs a 4-cell config to the same table as a run on this machine, into a results store on a PostgreSQL
server that a second run shares; a worker killed mid-cell loses no cell and stores none twice; an
unreachable scheduler is a quick one-line error."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import dask
import pytest
import yaml
from distributed import Client, LocalCluster
from test_tuning_postgres import postgres_url  # noqa: F401  (the throw-away PostgreSQL server)

import tsrep.benchmarks.run as run_mod
from tsrep.benchmarks import parse_config, run_benchmark, write_report
from tsrep.benchmarks.cli import main as cli_main
from tsrep.benchmarks.store import ResultStore

TINY = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 3, "min_steps": 0, "batch_size": 16}
RESULT_COLUMNS = ["key", "dataset", "model", "seed", "status", "score", "n_params", "params", "n_epochs", "best_epoch"]


def four_cells(**params):
    return parse_config({
        "name": "dask4", "datasets": ["BasicMotions", "CardanoSentiment"], "models": ["dc-transformer", "ea-dc-transformer"],
        "seeds": [0], "params": {**TINY, **params}, "data": {"offline": True},
    })


def results(store, cells):
    return store.frame([c.key for c in cells])[RESULT_COLUMNS].sort_values("key").reset_index(drop=True)


def score_rows(df, cfg, out):
    """The per-dataset rows of the report's tables (the timing rows differ between runs)."""
    markdown = write_report(df, cfg.models, cfg.datasets, out, plots=False)["markdown"]
    return [line for line in markdown.splitlines() if line.startswith(("| BasicMotions", "| CardanoSentiment"))]


@pytest.fixture(scope="module")
def cluster():
    # One task per worker thread (no second one waiting on a worker): the killed worker holds one cell.
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as local_cluster:
            yield local_cluster


def test_cluster_run_matches_the_local_run_and_shares_a_postgresql_store(cluster, postgres_url, tmp_path,  # noqa: F811
                                                                         monkeypatch):
    cfg = four_cells()
    local_store, cells = run_benchmark(cfg, tmp_path / "local", threads=1, progress=False)
    local = results(local_store, cells)
    assert len(local) == 4 and (local["status"] == "ok").all()

    store, cells = run_benchmark(cfg, tmp_path / "dask", scheduler=cluster.scheduler_address, store=postgres_url,
                                 threads=1, progress=False)
    assert store.url.startswith("postgresql")
    on_cluster = results(store, cells)
    assert on_cluster.equals(local), (on_cluster, local)
    keys = [c.key for c in cells]
    tables = score_rows(store.frame(keys), cfg, tmp_path / "r1")
    assert len(tables) == 2 and tables == score_rows(local_store.frame(keys), cfg, tmp_path / "r2")

    # A run on another machine pointed at the same store finds every cell done and runs none.
    def never(cell):
        raise AssertionError(f"finished cell {cell.key} was run again")

    monkeypatch.setattr(run_mod, "run_cell", never)
    shared, cells = run_benchmark(cfg, tmp_path / "elsewhere", store=postgres_url, threads=1, progress=False)
    assert results(shared, cells).equals(local)


def test_a_worker_killed_mid_cell_loses_no_cell_and_stores_none_twice(cluster, tmp_path):
    cfg = four_cells(max_epochs=40)  # cells of several seconds, so that one is under way when its worker dies
    cells = run_mod.make_cells(cfg)
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        pids = client.run(os.getpid)  # worker address -> process id
        outcome = {}

        def benchmark():
            try:
                outcome["run"] = run_benchmark(cfg, tmp_path, scheduler=cluster.scheduler_address, threads=1,
                                               progress=False)
            except BaseException as err:  # re-raised in the test's thread below
                outcome["error"] = err

        runner = threading.Thread(target=benchmark)
        runner.start()
        deadline = time.monotonic() + 120
        victim = None
        while victim is None and time.monotonic() < deadline and runner.is_alive():
            busy = [addr for addr, keys in client.processing().items() if keys and addr in pids]
            if busy:
                time.sleep(1.0)  # into the cell: its data loaded, training
                busy = [addr for addr, keys in client.processing().items() if keys and addr in pids]
                victim = busy[0] if busy else None
            else:
                time.sleep(0.2)
        assert victim is not None, "no worker was running a cell"
        os.kill(pids[victim], signal.SIGKILL)
        runner.join(timeout=240)
        assert not runner.is_alive(), "the benchmark did not finish after the kill"
        removals = [event for _, event in client.get_events(victim)
                    if isinstance(event, dict) and event.get("action") == "remove-worker"]
    if "error" in outcome:
        raise outcome["error"]
    killed = sorted(key.removeprefix("tsrep-cell-") for event in removals for key in event["processing-tasks"])
    assert killed, removals  # the worker died with a cell under way (and maybe one more sent to it)

    store, _ = outcome["run"]
    df = store.frame()
    assert sorted(df["key"]) == sorted(c.key for c in cells)  # every cell once: none lost, none twice
    assert (df["status"] == "ok").all(), df["error"].tolist()
    # The cell whose worker died was run again elsewhere, to the result a run here gives.
    (cell,) = [c for c in cells if c.key == killed[0]]
    again = run_mod.run_cell(cell)
    row = df.set_index("key").loc[cell.key]
    assert row["score"] == again["score"] and row["n_epochs"] == again["n_epochs"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_a_quick_one_line_error(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({"models": ["dc-transformer"], "datasets": ["BasicMotions"], "params": TINY,
                                      "data": {"offline": True}}))
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    start = time.monotonic()
    code = cli_main(["--config", str(config), "--out", str(tmp_path / "out"), "--scheduler", address,
                     "--scheduler-timeout", "2", "--quiet", "--no-plots"])
    seconds = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("tsrep-benchmark: error:")]
    assert len(errors) == 1, err
    assert f"cannot reach the Dask scheduler at '{address}' within 2 s" in errors[0]
    assert seconds < 20, seconds  # gives up after the 2 s asked for (and a moment to read the config)
    assert not ResultStore(tmp_path / "out" / "results.sqlite").frame().shape[0]  # nothing stored as if run
    assert cli_main(["--config", str(config), "--out", str(tmp_path / "out"), "--scheduler", "http://127.0.0.1:1",
                     "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "'http://127.0.0.1:1' is not a Dask scheduler address (unknown address scheme 'http'" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    # The config's scheduler key does what the flag does.
    config.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), "scheduler": address}))
    assert cli_main(["--config", str(config), "--out", str(tmp_path / "out"), "--scheduler-timeout", "1",
                     "--quiet", "--no-plots"]) == 2
    assert f"cannot reach the Dask scheduler at '{address}' within 1 s" in capsys.readouterr().err


def test_progress_lines_of_the_workers_reach_this_process(cluster, tmp_path, capsys):
    # The workers may be other machines: their lines come through the scheduler (distributed's print).
    cfg = parse_config({"name": "dask1", "datasets": ["BasicMotions"], "models": ["dc-transformer"], "seeds": [0],
                        "params": {**TINY, "max_epochs": 2}, "data": {"offline": True}})
    store, cells = run_benchmark(cfg, tmp_path, scheduler=cluster.scheduler_address, threads=1, progress=True)
    assert (store.frame([c.key for c in cells])["status"] == "ok").all()
    assert "BasicMotions / dc-transformer / seed 0: epoch 1/2, train loss" in capsys.readouterr().err
