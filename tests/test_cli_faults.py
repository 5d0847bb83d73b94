"""Faults and bad input at the command lines of the benchmark (tsrep-benchmark) and the tuner (tsrep-tune),
and the tuning API's up-front checks: runs killed with SIGKILL lose and double nothing when resumed, a
killed benchmark takes its worker processes with it, Ctrl-C and bad arguments are one line, not a
traceback, and a reused study name says what clashes before any trial runs."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import psutil
import pytest
import yaml
from aeon.datasets import load_classification
from optuna.trial import TrialState

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.benchmarks.cli import main as benchmark_main
from tsrep.tuning import tune
from tsrep.tuning.cli import main as tune_main
from tsrep.tuning.tune import StudyMismatchError

tune_mod = importlib.import_module("tsrep.tuning.tune")  # the module; tsrep.tuning.tune is also the function
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TINY = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 3, "min_steps": 0, "batch_size": 16}
TUNE_SPACE = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "alpha": 0.5, "beta": 0.5, "min_steps": 0,
              "batch_size": 8, "lr": {"low": 1e-4, "high": 1e-2, "log": True}}


def benchmark_config(path: Path, **over) -> Path:
    raw = {"name": "faults", "datasets": ["BasicMotions", "CardanoSentiment"],
           "models": ["dc-transformer", "ea-dc-transformer"], "params": TINY, "data": {"offline": True}, **over}
    path.write_text(yaml.safe_dump(raw))
    return path


def stored_rows(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
        try:
            return con.execute("SELECT key, status, finished_at, seconds FROM cells ORDER BY key").fetchall()
        except sqlite3.OperationalError:  # the table is not created yet
            return []


def wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# ----------------------------------------------------------------------------- benchmark CLI: SIGKILL


def test_benchmark_killed_with_sigkill_resumes_without_losing_or_doubling_a_cell(tmp_path, capsys):
    config = benchmark_config(tmp_path / "faults.yaml")
    out = tmp_path / "out"
    db = out / "results.sqlite"
    args = ["--config", str(config), "--out", str(out), "--quiet", "--no-plots", "--threads", "1"]
    cmd = [sys.executable, "-m", "tsrep.benchmarks.cli", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(stored_rows(db)) >= 1 or proc.poll() is not None, 180, "a finished cell")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    before = stored_rows(db)
    assert 1 <= len(before) < 4, before  # killed with cells finished and cells to do

    code = benchmark_main(args)  # the same command again (here, in this process)
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    after = stored_rows(db)
    assert len(after) == 4 and len({row[0] for row in after}) == 4  # every cell, each once
    assert all(row[1] == "ok" for row in after)
    assert set(before) <= set(after)  # the cells finished before the kill were kept, not run again
    assert "4/4 cells done" in printed.out


def test_a_benchmark_killed_with_sigkill_takes_its_worker_processes_with_it(tmp_path):
    # The CardanoSentiment cells run for minutes: without the parent's watch their workers would too.
    config = benchmark_config(tmp_path / "slow.yaml", datasets=["CardanoSentiment"],
                              params={**TINY, "max_epochs": 2000, "patience": None})
    cmd = [sys.executable, "-m", "tsrep.benchmarks.cli", "--config", str(config), "--out", str(tmp_path / "out"),
           "--quiet", "--no-plots", "--jobs", "2", "--threads", "1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)
    children: list[psutil.Process] = []
    try:
        def busy_workers():
            # Worker processes that have imported torch and are training (seconds of CPU time each).
            assert proc.poll() is None, "the benchmark ended before its workers trained"
            found = []
            for child in parent.children(recursive=True):
                try:
                    if child.cpu_times().user > 4:
                        found.append(child)
                except psutil.NoSuchProcess:
                    pass
            return found if len(found) >= 2 else None

        wait_for(busy_workers, 240, "two worker processes training a cell")
        children = parent.children(recursive=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive, f"worker processes outlived their killed parent: {alive}"
    finally:
        proc.kill()
        proc.wait()
        for child in children:  # leave nothing behind if the assertion failed
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass


# ----------------------------------------------------------------------------- benchmark CLI: bad input


@pytest.mark.parametrize("flag", ["--jobs", "--threads"])
def test_zero_jobs_or_threads_is_one_usage_error(flag, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        benchmark_main(["--config", "quick", "--out", str(tmp_path / "out"), flag, "0"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"argument {flag}: must be a positive integer, got '0'" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_bad_benchmark_settings_are_refused_before_any_cell(tmp_path, capsys):
    config = benchmark_config(tmp_path / "faults.yaml")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    cases = [
        (["--out", str(a_file / "out")], f"--out='{a_file / 'out'}' cannot be created or written (Not a directory)"),
        (["--out", str(a_file)], f"--out='{a_file}' is a file, not a directory"),
        (["--out", "/proc/tsrep-out"], "--out='/proc/tsrep-out' cannot be created or written"),
        (["--device", "bogus"], "--device: device 'bogus' is not a device: use auto, cpu, cuda, cuda:N or mps"),
    ]
    for args, message in cases:
        argv = ["--config", str(config), "--out", str(tmp_path / "out"), "--quiet", "--no-plots", *args]
        assert benchmark_main(argv) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("tsrep-benchmark: error: ") and message in err, err
        assert err.count("\n") == 1 and "Traceback" not in err
    bad_width = benchmark_config(tmp_path / "bad.yaml", params={**TINY, "d_model": -8})
    assert benchmark_main(["--config", str(bad_width), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "The 'd_model' parameter of EADCTransformerClassifier must be an int in the range [1, inf). Got -8 instead." in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out" / "results.sqlite").exists()  # no cell ran


def test_a_damaged_results_store_gives_guidance(tmp_path, capsys):
    from tsrep.benchmarks.store import ResultStore

    config = benchmark_config(tmp_path / "faults.yaml")
    out = tmp_path / "out"
    store = ResultStore(out / "results.sqlite")
    for i in range(200):  # a store of some pages, as a long run leaves it
        store.write({"key": f"cell{i}", "status": "ok", "score": 0.5, "error": "x" * 400})
    store.close()
    db = out / "results.sqlite"
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)  # a copy cut short
    code = benchmark_main(["--config", str(config), "--out", str(out), "--quiet", "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "DatabaseError" not in err
    assert f"the results store '{db}' is damaged or truncated" in err
    assert f"mv {db} {db}.damaged" in err and "run the same command again" in err


# ----------------------------------------------------------------------------- tsrep-tune: SIGKILL, Ctrl-C, bad input


def test_tune_killed_with_sigkill_fails_and_retries_the_trial_on_resume(tmp_path):
    db = tmp_path / "study.db"
    space = tmp_path / "space.yaml"
    # 40 epochs (about 0.1 s each here): the kill must land while trial 1 trains, seconds after its first epoch
    space.write_text(yaml.safe_dump({**TUNE_SPACE, "max_epochs": 40, "patience": None}))
    args = ["--dataset", "BasicMotions", "--storage", str(db), "--study-name", "killed", "--max-trials", "3",
            "--search-space", str(space), "--pruner", "none", "--no-plots", "--quiet", "--output", str(tmp_path / "out")]
    cmd = [sys.executable, "-m", "tsrep.tuning.cli", *args]
    url = f"sqlite:///{db}"

    def second_trial_training() -> bool:
        try:
            trials = optuna.load_study(study_name="killed", storage=url).get_trials(deepcopy=False)
        except KeyError:  # the study is not created yet
            return False
        return (len(trials) >= 2 and trials[0].state == TrialState.COMPLETE
                and trials[1].state == TrialState.RUNNING and bool(trials[1].intermediate_values))  # an epoch done

    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: second_trial_training() or proc.poll() is not None, 240, "the second trial training")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    study = optuna.load_study(study_name="killed", storage=url)
    first, killed = study.trials[:2]
    assert first.state == TrialState.COMPLETE and killed.state == TrialState.RUNNING  # left as the kill found it

    # The default heartbeat (60 s, failed after 120 s) would still call the killed trial alive: the
    # resumed run fails it at once, because its process on this machine is gone, and runs it again.
    said: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: said.append(record.getMessage())
    logging.getLogger("tsrep").addHandler(handler)
    try:
        assert tune_main(args) == 0  # the same command again (here, in this process)
    finally:
        logging.getLogger("tsrep").removeHandler(handler)
    trials = optuna.load_study(study_name="killed", storage=url).trials
    assert trials[1].state == TrialState.FAIL
    assert any("trial 1 was left running by a process of this machine that is gone; marked failed" in m for m in said)
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == 1]
    assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE and retries[0].params == killed.params
    finished = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(finished) == 3  # max_trials: none lost, none run twice
    assert (trials[0].value, trials[0].datetime_complete) == (first.value, first.datetime_complete)  # kept as it was
    assert not [t for t in trials if t.state == TrialState.RUNNING]


def test_tune_ctrl_c_is_one_line_and_keeps_finished_trials(tmp_path, monkeypatch, capsys):
    real = tune_mod.make_objective

    def interrupted_at_second_trial(*args, **kwargs):
        objective = real(*args, **kwargs)

        def run(trial):
            if trial.number == 1:
                signal.raise_signal(signal.SIGINT)  # what Ctrl-C sends
            return objective(trial)

        return run

    monkeypatch.setattr(tune_mod, "make_objective", interrupted_at_second_trial)
    # Ctrl-C as a terminal delivers it: Python's own handler, whatever an earlier test or library left installed
    # (in one full-suite run the signal was swallowed and the study ran to its end).
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({**TUNE_SPACE, "max_epochs": 1}))
    db = tmp_path / "study.db"
    try:
        code = tune_main(["--dataset", "BasicMotions", "--storage", str(db), "--study-name", "ctrl-c", "--n-trials", "3",
                          "--search-space", str(space), "--no-plots", "--quiet", "--output", str(tmp_path / "out")])
    finally:
        signal.signal(signal.SIGINT, inherited)
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, (code, inherited, err)
    assert [line for line in err.splitlines() if line.strip()] == [
        "tsrep-tune: interrupted: the trial under way is marked failed, the finished trials stay; they are kept in "
        "the study's storage; run the same command again to go on"]
    states = [t.state for t in optuna.load_study(study_name="ctrl-c", storage=f"sqlite:///{db}").trials]
    assert states == [TrialState.COMPLETE, TrialState.FAIL]


def test_tune_cli_bad_output_and_search_space_are_refused_before_any_trial(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    good = tmp_path / "space.yaml"
    good.write_text(yaml.safe_dump({**TUNE_SPACE, "max_epochs": 1}))
    broken = tmp_path / "broken.yaml"
    broken.write_text("d_model: 8\nalpha: [0.1, 0.5\n")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    db = tmp_path / "study.db"
    cases = [
        (["--output", str(a_file / "out"), "--search-space", str(good)], f"--output='{a_file / 'out'}' cannot be created"),
        (["--output", str(a_file), "--search-space", str(good)], f"--output='{a_file}' is a file, not a directory"),
        (["--search-space", str(broken)], f"--search-space '{broken}' is not valid YAML (line 3, column 1)"),
        (["--search-space", str(binary)], f"--search-space '{binary}' is not a text file"),
        (["--search-space", str(listed)], "must hold a mapping of parameter -> spec, got a list"),
        (["--search-space", str(tmp_path)], f"--search-space '{tmp_path}' is a directory"),
        (["--set", "d_model=True"], "the fixed setting(s) d_model=True cannot be used: The 'd_model' parameter of EADCTransformerClassifier must be an int"),
    ]
    for args, message in cases:
        argv = ["--dataset", "BasicMotions", "--storage", str(db), "--study-name", "s", "--n-trials", "1", "--quiet",
                "--no-plots", "--output", str(tmp_path / "out"), *args]
        assert tune_main(argv) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("tsrep-tune: error: ") and message in err, err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert not db.exists()  # refused before any study or trial was written


@pytest.mark.parametrize("args, message", [
    (["--set", "alpha={low: 0.0, high: 5.0}"],
     "argument --set: 'alpha={low: 0.0, high: 5.0}': search space entry 'alpha': high=5.0 is outside what the "
     "parameter accepts: The 'alpha' parameter of EADCTransformerClassifier must be a float in the range [0.0, 1.0]. "
     "Got 5.0 instead."),
    (["--cv", "1"], "argument --cv: must be an integer >= 2 (the number of folds), got '1'"),
    (["--cv", "1000"], "argument --cv: 1000 stratified folds need 1000 training cases of every class, but class "
                       "'badminton' of BasicMotions has 10; use --cv 10 or fewer"),
    (["--validation-size", "0"], "argument --validation-size: must be a number in (0, 1), the share of TRAIN held "
                                 "out, got '0'"),
    (["--validation-size", "1.5"], "argument --validation-size: must be a number in (0, 1), the share of TRAIN held "
                                   "out, got '1.5'"),
], ids=["--set range outside the parameter's", "one fold", "more folds than a class has cases",
        "validation size 0", "validation size above 1"])
def test_tune_cli_bad_options_are_usage_errors_before_any_trial(args, message, tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({**TUNE_SPACE, "max_epochs": 1}))
    db = tmp_path / "study.db"
    with pytest.raises(SystemExit) as info:
        tune_main(["--dataset", "BasicMotions", "--storage", str(db), "--study-name", "s", "--n-trials", "1",
                   "--search-space", str(space), "--quiet", "--no-plots", "--output", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert err.startswith("usage: tsrep-tune") and err.splitlines()[-1] == f"tsrep-tune: error: {message}"
    assert not db.exists() and not (tmp_path / "out").exists()  # refused before any study or trial was written


def test_tune_cli_study_name_that_is_not_one_folder_name_writes_nothing_outside_tuning(tmp_path, monkeypatch, capsys):
    # Without --output, best.yaml and the pictures go to tuning/<study name>.
    work = tmp_path / "a" / "b" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({**TUNE_SPACE, "max_epochs": 1}))
    db = tmp_path / "study.db"
    common = ["--dataset", "BasicMotions", "--storage", str(db), "--n-trials", "1", "--search-space", str(space),
              "--quiet", "--no-plots"]
    for name in ("../../../escaped", str(tmp_path / "escaped"), "..", ""):
        with pytest.raises(SystemExit) as info:
            tune_main([*common, "--study-name", name])
        err = capsys.readouterr().err
        assert info.value.code == 2 and "Traceback" not in err
        assert err.splitlines()[-1] == (
            "tsrep-tune: error: argument --study-name: the study name names the output folder tuning/<study name> "
            "and must be a single plain folder name (not empty, no '/' or '\\', not '.' or '..', not an absolute "
            f"path), got {name!r}; give --output to write elsewhere")
    assert list(work.iterdir()) == [] and not db.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b", "space.yaml", "work"]
    # A folder chosen with --output may be anywhere, and the study then may have any name.
    assert tune_main([*common, "--study-name", "../team/s", "--output", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "best.yaml").is_file() and list(work.iterdir()) == []


# ----------------------------------------------------------------------------- tune(): up-front checks


@pytest.fixture(scope="module")
def basic_motions():
    return load_classification("BasicMotions", split="train")


def test_tune_checks_lengths_before_any_study_is_written(basic_motions, tmp_path):
    X, y = basic_motions
    db = tmp_path / "study.db"
    with pytest.raises(ValueError, match="X and y must hold the same number of cases: X has 40, y has 10"):
        tune(EADCTransformerClassifier(), X, y[:10], storage=db, study_name="s", n_trials=1)
    assert not db.exists()


def test_tune_without_storage_writes_nothing(basic_motions, tmp_path, monkeypatch):
    X, y = basic_motions
    monkeypatch.chdir(tmp_path)
    study, _ = tune(EADCTransformerClassifier(), X, y, search_space={**TUNE_SPACE, "max_epochs": 1}, n_trials=1,
                    refit=False)
    assert isinstance(study._storage, optuna.storages.InMemoryStorage) and len(study.trials) == 1
    assert list(tmp_path.iterdir()) == []  # no study file in the working directory


def test_a_reused_study_name_says_what_clashes_before_any_trial(basic_motions, tmp_path):
    X, y = basic_motions
    db = tmp_path / "study.db"
    space = {**TUNE_SPACE, "lr": [1e-3, 3e-3], "max_epochs": 1}
    tune(EADCTransformerClassifier(), X, y, storage=db, study_name="s", search_space=space, n_trials=1, refit=False)

    with pytest.raises(StudyMismatchError, match=r"the search space differs: lr \(stored \[0.001, 0.003\], now "
                                                 r"\[0.001, 0.01\]\)"):
        tune(EADCTransformerClassifier(), X, y, storage=db, study_name="s", search_space={**space, "lr": [1e-3, 1e-2]},
             n_trials=1)
    with pytest.raises(StudyMismatchError, match="it tunes EADCTransformerClassifier, this call EADCTransformerRegressor"):
        tune(EADCTransformerRegressor(), X, np.arange(len(y), dtype=float), storage=db, study_name="s",
             search_space=space, n_trials=1)
    trials = optuna.load_study(study_name="s", storage=f"sqlite:///{db}").trials
    assert [t.state for t in trials] == [TrialState.COMPLETE]  # neither call ran or failed a trial
