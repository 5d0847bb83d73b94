"""Distributed tuning on a real PostgreSQL server: two `tsrep-tune` workers share one study.

A throw-away cluster is created in a temporary directory (initdb + pg_ctl, loopback only, a free
port). PostgreSQL refuses to run as root, so under root the server runs as the `postgres` user of
Debian's package (`runuser`). `.ci/run` installs Debian's `postgresql` package when it is missing;
this test fails (never skips) when the server binaries cannot be found.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

ROOT = Path(__file__).resolve().parents[1]
MAX_TRIALS = 6
# 40 epochs: a trial trains for seconds after its first epoch, so the kill lands while it runs
SPACE = {"d_model": [8, 16], "n_blocks": 1, "n_heads": 2, "max_epochs": 40, "min_steps": 0, "patience": None, "batch_size": 8}


def _pg_bindir() -> Path:
    candidates = [os.environ.get("TSREP_PG_BIN")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(Path(d).parent.name), reverse=True)
    which = shutil.which("pg_ctl")
    candidates.append(str(Path(os.path.realpath(which)).parent) if which else None)
    for d in candidates:
        if d and (Path(d) / "pg_ctl").is_file() and (Path(d) / "initdb").is_file():
            return Path(d)
    pytest.fail(
        "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin, on PATH or in "
        "$TSREP_PG_BIN: install Debian's package (apt-get update && apt-get install -y postgresql; .ci/run does it)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    try:
        import psycopg  # noqa: F401  (the driver tsrep's postgres extra installs)
    except ImportError:
        pytest.fail("the PostgreSQL driver psycopg is not installed: pip install -e '.[dev]' (or 'tsrep[postgres]')")
    bindir = _pg_bindir()
    as_user: list[str] = []
    # /tmp rather than $TMPDIR: the server's user must be able to reach the directory
    tmp = Path(tempfile.mkdtemp(prefix="tsrep-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
    if os.geteuid() == 0:  # postgres will not run as root: use the postgres account of Debian's package
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root and there is no 'postgres' user to run the server (install Debian's postgresql)")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log, port = tmp / "data", tmp / "server.log", _free_port()

    def pg(*args, check=True):
        return subprocess.run([*as_user, *map(str, args)], capture_output=True, text=True, check=check, timeout=120)

    try:
        pg(bindir / "initdb", "-D", data, "-U", "tsrep", "--auth=trust", "-E", "UTF8", "--no-sync")
        pg(bindir / "pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start", "-o",
           f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp} -c fsync=off -c max_connections=50")
    except subprocess.CalledProcessError as e:
        server_log = log.read_text() if log.exists() else ""
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.fail(f"could not start the throw-away PostgreSQL cluster: {e.stderr}\n{server_log}")
    try:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=port, user="tsrep", dbname="postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE optuna")
        yield f"postgresql://tsrep@127.0.0.1:{port}/optuna"
    finally:
        pg(bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop", check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def _running_trial_of_a_worker(url, name, pids, deadline):
    """(trial, pid) of a trial that one of the workers is training (it has reported an epoch)."""
    # One storage (one connection pool) for every poll: a storage per poll holds its connections until it is
    # collected, and on a loaded machine the polls would use up the server's connections.
    storage = optuna.storages.RDBStorage(url)
    try:
        while time.monotonic() < deadline:
            try:
                study = optuna.load_study(study_name=name, storage=storage)
            except KeyError:  # not created yet
                time.sleep(0.3)
                continue
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                worker = t.user_attrs.get("worker", "")
                pid = int(worker.rsplit(":", 1)[1]) if ":" in worker else None
                if pid in pids and t.params and t.intermediate_values:
                    return t, pid
            time.sleep(0.2)
    finally:
        storage.engine.dispose()
    raise AssertionError("no worker started a trial in time")


def test_two_workers_share_a_study_and_a_killed_trial_is_retried(postgres_url, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump(SPACE))
    name = "distributed"
    cmd = [
        sys.executable, "-m", "tsrep.tuning.cli", "--dataset", "BasicMotions", "--storage", postgres_url,
        "--study-name", name, "--max-trials", str(MAX_TRIALS), "--search-space", str(space), "--pruner", "none",
        "--heartbeat-interval", "1", "--grace-period", "6", "--no-plots", "--output", str(tmp_path / "out"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    logs = [open(tmp_path / f"worker{i}.log", "w") for i in range(2)]
    workers = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT) for log in logs]
    try:
        pids = {w.pid: w for w in workers}
        trial, pid = _running_trial_of_a_worker(postgres_url, name, set(pids), time.monotonic() + 180)
        pids[pid].send_signal(signal.SIGKILL)  # the worker dies mid-trial
        pids[pid].wait(timeout=30)
        killed = trial.number
        study = optuna.load_study(study_name=name, storage=postgres_url)
        # RUNNING until a worker notices; FAIL already when the other worker opened the study after the
        # kill (its start-up check fails trials of dead processes of this machine at once)
        state = study.trials[killed].state
        assert state in (TrialState.RUNNING, TrialState.FAIL), f"the trial ended {state.name} before the kill landed"
        survivor = next(w for p, w in pids.items() if p != pid)
        assert survivor.wait(timeout=300) == 0, (tmp_path / "worker0.log").read_text() + (tmp_path / "worker1.log").read_text()
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        for log in logs:
            log.close()
    output = "".join((tmp_path / f"worker{i}.log").read_text() for i in range(2))

    study = optuna.load_study(study_name=name, storage=postgres_url)
    trials = study.trials
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == MAX_TRIALS, f"{[(t.number, t.state.name) for t in trials]}\n{output}"
    assert len({t.number for t in trials}) == len(trials) and len({t._trial_id for t in trials}) == len(trials)
    # the killed worker's trial was failed (heartbeat or dead-owner check) and run again, once, with its parameters
    assert trials[killed].state == TrialState.FAIL
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    assert len(retries) == 1, [(t.number, t.state.name, t.system_attrs) for t in trials]
    assert retries[0].state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert retries[0].params == trials[killed].params
    assert retries[0].user_attrs["worker"] != f"{socket.gethostname()}:{pid}"
    # any other failed trial is a worker's surplus start, never a lost or doubly-run one
    others = [t for t in trials if t.state == TrialState.FAIL and t.number != killed]
    assert all(t.user_attrs.get("tsrep_surplus") for t in others), [(t.number, t.user_attrs) for t in others]
    # both workers ran trials of the one study
    workers_seen = {t.user_attrs.get("worker") for t in trials}
    assert len(workers_seen) == 2, workers_seen
    assert (tmp_path / "out" / "best.yaml").is_file()
