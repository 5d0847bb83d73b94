"""Security and lost data: configs that cannot run code, atomic saves under concurrency, checkpoints and
studies keyed to their data and settings, and data parallelism that fails instead of hanging."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch
import yaml
from aeon.datasets import load_basic_motions

from tsrep import EADCTransformerClassifier, TSRepEncoder
from tsrep._io import atomic_torch_save, atomic_write
from tsrep.estimators import BackboneClassifier
from tsrep.backbones.checkpoint import load_encoder
from tsrep.training.distributed import TIMEOUT_VARIABLE, distributed_timeout
from tsrep.training.resume import save_atomically
from tsrep.tuning import ConfigError, StudyMismatchError, load_config, save_config, tune
from tsrep.tuning.cli import main as cli_main
from tsrep.tuning.config import resolve_model

ROOT = Path(__file__).resolve().parents[1]
TINY_ENCODER = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, device="cpu", random_state=0)


def _write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# ----------------------------------------------------------------------------- 1. configs run no code
def test_config_naming_popen_creates_nothing_and_is_refused(tmp_path):
    marker = tmp_path / "created-by-config"
    popen = {"model": "subprocess:Popen", "params": {"args": ["touch", str(marker)]}}
    config = _write_yaml(tmp_path / "best.yaml", popen)
    with pytest.raises(ConfigError, match=r"'subprocess:Popen' is not a tsrep estimator.*accepted: .*TSRepEncoder"):
        load_config(config)
    time.sleep(0.5)  # a process started by the config would have had time to create the file
    assert not marker.exists()


def test_config_naming_os_system_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"'os:system' is not a tsrep estimator.*TSRepEncoder"):
        resolve_model("os:system")
    config = _write_yaml(tmp_path / "best.yaml", {"model": "os:system", "params": {}})
    with pytest.raises(ConfigError, match=r"'os:system'.*accepted: .*BackboneRegressor"):
        load_config(config)
    # A tsrep module with a name outside the allow-list is refused as well: nothing is imported by name.
    with pytest.raises(ConfigError, match="'tsrep.tuning.cli:run' is not a tsrep estimator"):
        resolve_model("tsrep.tuning.cli:run")


def test_config_with_python_yaml_tags_is_not_valid(tmp_path):
    marker = tmp_path / "created-by-tag"
    config = tmp_path / "best.yaml"
    config.write_text(f"model: !!python/object/apply:os.system ['touch {marker}']\nparams: {{}}\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(config)
    assert not marker.exists()


def test_best_yaml_round_trips_with_registry_names(tmp_path):
    est = EADCTransformerClassifier(alpha=0.3, beta=0.7, d_model=16, n_blocks=2, max_epochs=7)
    path = save_config(est, tmp_path / "best.yaml", dataset="BasicMotions", tuning={"best_trial": 3})
    assert yaml.safe_load(path.read_text())["model"] == "EADCTransformerClassifier"
    loaded = load_config(path)
    assert type(loaded) is EADCTransformerClassifier and loaded.get_params() == est.get_params()
    encoder = TSRepEncoder(**TINY_ENCODER)
    path = save_config(encoder, tmp_path / "encoder.yaml")
    assert yaml.safe_load(path.read_text())["model"] == "TSRepEncoder"
    assert load_config(path).get_params() == encoder.get_params()


def test_module_class_spellings_are_refused_even_for_allowed_classes(tmp_path):
    for spelling in ("tsrep.representation:TSRepEncoder", "tsrep.estimators:EADCTransformerRegressor"):
        config = _write_yaml(tmp_path / "spelled.yaml", {"model": spelling, "params": {"d_model": 16}})
        with pytest.raises(ConfigError, match="is not a tsrep estimator"):
            load_config(config)


def test_config_with_a_tsrep_models_name_needs_a_task(tmp_path):
    config = _write_yaml(tmp_path / "gru.yaml", {"model": "gru", "task": "classification", "params": {"d_model": 16}})
    loaded = load_config(config)
    assert type(loaded) is BackboneClassifier and loaded.backbone == "gru" and loaded.d_model == 16
    config = _write_yaml(tmp_path / "gru.yaml", {"model": "gru", "params": {}})
    with pytest.raises(ConfigError, match="needs 'task' set to classification or regression"):
        load_config(config)


def test_save_config_refuses_classes_outside_the_allow_list(tmp_path):
    class MyClassifier(EADCTransformerClassifier):
        pass

    with pytest.raises(ConfigError, match="MyClassifier cannot be written to a config"):
        save_config(MyClassifier(), tmp_path / "mine.yaml")
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- 2. atomic saves
def _tiny_data(seed: int, n_cases: int = 8) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n_cases, 2, 16))


def _save_repeatedly(source: str, target: str, n_saves: int, start, errors) -> None:
    """Spawned writer: load one encoder, then save it onto the shared target again and again."""
    torch.set_num_threads(1)
    encoder = TSRepEncoder.load(source)
    start.wait()
    for i in range(n_saves):
        try:
            encoder.save(target)
        except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
            errors.put(f"save {i} from {source}: {type(exc).__name__}: {exc}")


def _load_until_done(target: str, sources: list[str], start, done, errors, n_loads) -> None:
    """Spawned reader: load the shared target until the writers are done; each must be one of `sources`."""
    torch.set_num_threads(1)
    expected = [load_encoder(s)[1].state_dict() for s in sources]
    start.wait()
    count = 0
    while not done.is_set() or count == 0:
        try:
            weights = load_encoder(target)[1].state_dict()
        except Exception as exc:  # noqa: BLE001
            errors.put(f"load {count}: {type(exc).__name__}: {exc}")
        else:
            if not any(all(torch.equal(weights[k], e[k]) for k in e) for e in expected):
                errors.put(f"load {count}: weights that no writer saved")
        count += 1
    n_loads.value = count


def test_concurrent_saves_and_loads_of_one_path_never_break(tmp_path):
    sources = []
    for seed in range(3):  # three different encoders (pretrain_epochs=0: random weights of each seed)
        encoder = TSRepEncoder(**{**TINY_ENCODER, "d_model": 32, "n_heads": 4, "random_state": seed,
                                  "pretrain_epochs": 0}).fit(_tiny_data(0))
        sources.append(str(encoder.save(tmp_path / f"encoder{seed}.pt")))
    target = tmp_path / "shared" / "encoder.pt"
    TSRepEncoder.load(sources[0]).save(target)  # readers start on a complete file
    ctx = multiprocessing.get_context("spawn")
    start, done, errors, n_loads = ctx.Barrier(len(sources) + 1), ctx.Event(), ctx.Queue(), ctx.Value("i", 0)
    writers = [ctx.Process(target=_save_repeatedly, args=(s, str(target), 40, start, errors)) for s in sources]
    reader = ctx.Process(target=_load_until_done, args=(str(target), sources, start, done, errors, n_loads))
    for process in (*writers, reader):
        process.start()
    try:
        for process in writers:
            process.join(timeout=240)
        done.set()
        reader.join(timeout=60)
    finally:
        for process in (*writers, reader):
            if process.is_alive():
                process.kill()
    assert [p.exitcode for p in (*writers, reader)] == [0] * 4
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == [], found[:5]
    assert n_loads.value > 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["encoder.pt"]  # no temporary file left


def test_stray_tmp_files_do_not_block_a_save(tmp_path):
    encoder = TSRepEncoder(**{**TINY_ENCODER, "pretrain_epochs": 0}).fit(_tiny_data(0))
    target = tmp_path / "encoder.pt"
    (tmp_path / "encoder.pt.tmp").mkdir()  # left by a crashed save of an older version, or anything else
    encoder.save(target)
    assert load_encoder(target)[0] == encoder.config_
    stray = tmp_path / "other.pt.tmp"
    stray.write_bytes(b"someone else's bytes")
    save_atomically({"weights": torch.ones(3)}, tmp_path / "other.pt")
    assert stray.read_bytes() == b"someone else's bytes"  # not ours: left alone
    assert torch.equal(torch.load(tmp_path / "other.pt", weights_only=True)["weights"], torch.ones(3))


def test_failed_save_leaves_the_old_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "state.pt"
    save_atomically({"version": torch.tensor(1)}, target)
    before = target.read_bytes()
    with pytest.raises(Exception, match="lambda|pickle"):
        save_atomically({"version": torch.tensor(2), "code": lambda: None}, target)  # cannot be pickled
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]

    def write_half_then_fail(file):
        file.write(b"half a file")
        raise KeyboardInterrupt  # interrupted by the user half way

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, write_half_then_fail)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]


def test_saving_onto_a_directory_or_below_a_file_names_the_path(tmp_path):
    encoder = TSRepEncoder(**{**TINY_ENCODER, "pretrain_epochs": 0}).fit(_tiny_data(0))
    directory = tmp_path / "models"
    directory.mkdir()
    with pytest.raises(IsADirectoryError, match=f"cannot save to '{directory}': it is an existing directory"):
        encoder.save(directory)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a directory")
    with pytest.raises(NotADirectoryError, match=f"cannot save to '{a_file}/encoder.pt': '{a_file}' is a file"):
        encoder.save(a_file / "encoder.pt")
    with pytest.raises(NotADirectoryError, match=f"cannot save to '{a_file}/sub/encoder.pt': its directory"):
        atomic_torch_save({}, a_file / "sub" / "encoder.pt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models", "notes.txt"]
    assert list(directory.iterdir()) == []


def test_saved_files_get_the_permissions_of_a_plain_open(tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    saved = atomic_write(tmp_path / "saved", lambda file: file.write(b"x"))
    assert saved.stat().st_mode == plain.stat().st_mode


# ----------------------------------------------------------------------------- 3. checkpoints keyed to data
def _fit_with_checkpoint(X, directory, **params):
    return TSRepEncoder(**{**TINY_ENCODER, "pretrain_epochs": 2, "checkpoint_dir": directory, **params}).fit(X)


def _state_file(tmp_path) -> tuple[Path, Path]:
    """(checkpoint_dir, the resumable state a fit writes in it)."""
    from tsrep.training.resume import PRETRAIN_STATE_FILE

    directory = tmp_path / "checkpoints"
    return directory, directory / PRETRAIN_STATE_FILE


def test_checkpoint_on_other_data_of_the_same_shape_is_refused(tmp_path):
    X, _ = load_basic_motions(split="train")
    directory, state = _state_file(tmp_path)
    _fit_with_checkpoint(X[:20], directory)  # cross-validation fold 1
    before = state.read_bytes()
    with pytest.raises(ValueError, match=rf"checkpoint at '{state}' was written for other data/settings.*"
                                         "the training data differ"):
        _fit_with_checkpoint(X[20:], directory)  # fold 2: same shape, other cases
    assert state.read_bytes() == before  # nothing overwritten
    again = _fit_with_checkpoint(X[:20], directory)  # the data it was written for: resumes
    assert len(again.loss_history_) == 2 and state.read_bytes() == before


def test_checkpoint_with_other_settings_names_them(tmp_path):
    X = _tiny_data(0)
    directory, _ = _state_file(tmp_path)
    _fit_with_checkpoint(X, directory)
    differ = r"settings differ: alpha \(stored 0.5, now 0.9\); random_state \(stored 0, now 1\)"
    with pytest.raises(ValueError, match=differ):
        _fit_with_checkpoint(X, directory, alpha=0.9, random_state=1)
    with pytest.raises(ValueError, match=r"settings differ: lr \(stored 0.001, now 0.01\)"):
        _fit_with_checkpoint(X, directory, lr=0.01)
    # What does not change the result may differ; a larger epoch budget continues the checkpoint.
    resumed = _fit_with_checkpoint(X, directory, verbose=True, pretrain_epochs=3)
    assert len(resumed.loss_history_) == 3


def test_checkpoint_holding_more_epochs_than_asked_is_an_error(tmp_path):
    X = _tiny_data(0)
    directory, state = _state_file(tmp_path)
    _fit_with_checkpoint(X, directory, pretrain_epochs=3)
    before = state.read_bytes()
    with pytest.raises(ValueError, match=r"already holds 3 epochs of pretraining, more than the 2 asked for"):
        _fit_with_checkpoint(X, directory, pretrain_epochs=2)
    assert state.read_bytes() == before


def test_checkpoint_of_another_format_is_refused(tmp_path):
    directory, state = _state_file(tmp_path)
    directory.mkdir()
    torch.save({"format": "tsrep-pretrain-state/1", "fingerprint": "{}", "epoch": 1}, state)
    with pytest.raises(ValueError, match=r"not a tsrep pretraining state .*it holds format 'tsrep-pretrain-state/1'"):
        _fit_with_checkpoint(_tiny_data(0), directory)
    torch.save({"format": "tsrep-pretrain-state/2", "epoch": 1}, state)
    with pytest.raises(ValueError, match="is incomplete or corrupt"):
        _fit_with_checkpoint(_tiny_data(0), directory)


def test_checkpoint_state_that_is_a_directory_or_a_checkpoint_dir_that_is_a_device_is_named_so(tmp_path):
    # Both were reported as a checkpoint that "does not exist", though something is there.
    directory, state = _state_file(tmp_path)
    state.mkdir(parents=True)
    (state / "kept.txt").write_text("x")
    named = re.escape(repr(str(state)))
    with pytest.raises(ValueError, match=rf"{named} is a directory, not a pretraining state file"):
        _fit_with_checkpoint(_tiny_data(0), directory)
    assert [p.name for p in state.iterdir()] == ["kept.txt"]
    if os.path.exists("/dev/null"):
        with pytest.raises(OSError, match=r"checkpoint_dir='/dev/null' is a file, not a directory"):
            _fit_with_checkpoint(_tiny_data(0), "/dev/null")


# ----------------------------------------------------------------------------- 4. studies keyed to data
@pytest.fixture(scope="module")
def basic_motions():
    return load_basic_motions(split="train")


def _tune(X, y, storage, **estimator_params):
    estimator = EADCTransformerClassifier(**{**EADCTransformerClassifier._get_test_params(), "max_epochs": 2,
                                             "min_steps": 0, **estimator_params})
    return tune(estimator, X, y, n_trials=1, storage=storage, study_name="reused", search_space={"alpha": [0.1, 0.9]},
                default_space=False, refit=False, seed=0)


def test_study_reused_on_other_data_or_settings_is_refused(basic_motions, tmp_path):
    X, y = basic_motions
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    _tune(X, y, storage)
    other_X = X.copy()
    other_X[0, 0, 0] += 1.0
    with pytest.raises(StudyMismatchError, match="study 'reused' exists for another estimator, search space, data or settings.*the data differ"):
        _tune(other_X, y, storage)
    with pytest.raises(ValueError, match="the data differ"):
        _tune(X, y[::-1].copy(), storage)  # same series, other labels
    with pytest.raises(ValueError, match=r"fixed settings differ: max_epochs \(stored 2, now 3\)"):
        _tune(X, y, storage, max_epochs=3)
    study = optuna.load_study(study_name="reused", storage=storage)
    assert len(study.trials) == 1  # no trial ran for the refused calls
    # Same data and settings (device, n_jobs and verbose do not count): the study resumes and grows.
    study, _ = _tune(X, y, storage, verbose=False, device="cpu", n_jobs=1)
    assert len(study.trials) == 2
    assert "duplicate_of" not in study.trials[1].user_attrs or study.trials[1].params == study.trials[0].params


def test_tune_cli_reports_a_reused_study_on_other_settings_without_traceback(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    tiny = ["--set", "d_model=8", "--set", "n_blocks=1", "--set", "n_heads=2", "--set", "p=0.5", "--set", "beta=0.5",
            "--set", "alpha=[0.1, 0.9]", "--set", "min_steps=0", "--set", "batch_size=8"]
    common = ["--dataset", "BasicMotions", "--storage", storage, "--study-name", "bm", "--n-trials", "1", "--quiet",
              "--no-plots", *tiny]
    assert cli_main([*common, "--max-epochs", "2", "--output", str(tmp_path / "first")]) == 0
    capsys.readouterr()
    code = cli_main([*common, "--max-epochs", "3", "--output", str(tmp_path / "second")])
    err = capsys.readouterr().err
    assert code == 2 and "tsrep-tune: error: study 'bm' exists for another estimator, search space, data or settings" in err
    assert "max_epochs (stored 2, now 3)" in err and "Traceback" not in err
    # Nothing written for the refused run (the output directory is checked, so it may exist, empty).
    assert not (tmp_path / "second").exists() or not any((tmp_path / "second").iterdir())


def test_study_of_an_older_version_is_adopted_then_checked(basic_motions, caplog):
    X, y = basic_motions
    storage = optuna.storages.InMemoryStorage()
    old = optuna.create_study(storage=storage, study_name="reused", direction="maximize")
    old.set_user_attr("tsrep_search_space", {"alpha": [0.1, 0.9]})  # what older versions recorded
    with caplog.at_level("WARNING", logger="tsrep.tuning"):
        _tune(X, y, storage)
    assert "did not record its data and fixed settings" in caplog.text
    with pytest.raises(StudyMismatchError, match=r"max_epochs \(stored 2, now 3\)"):
        _tune(X, y, storage, max_epochs=3)


# ----------------------------------------------------------------------------- 5. no hang in rendezvous
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_leftover_torchrun_variables_fail_fit_within_the_timeout():
    script = textwrap.dedent(
        """
        import numpy as np
        from tsrep import EADCTransformerClassifier

        X = np.random.default_rng(0).normal(size=(8, 2, 16))
        EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=1, batch_size=4,
                                  device="cpu").fit(X, np.array([0, 1] * 4))
        """
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), TIMEOUT_VARIABLE: "3"}
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=150)  # imports take most of it; the rendezvous waits 3 s
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert "RuntimeError: tsrep started data-parallel training because the environment holds RANK=0, " \
           "WORLD_SIZE=2, LOCAL_RANK=0, MASTER_ADDR=127.0.0.1" in output, output[-3000:]
    assert "group of 2 processes could not be formed (waited up to 3 s;" in output
    assert "Every rank must call fit" in output
    assert "unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT" in output


@pytest.mark.parametrize("value", ["soon", "0", "-5", "inf"])
def test_bad_timeout_variable_is_named(monkeypatch, value):
    monkeypatch.setenv(TIMEOUT_VARIABLE, value)
    with pytest.raises(ValueError, match=f"{TIMEOUT_VARIABLE} must be a positive number of seconds, got '{value}'"):
        distributed_timeout()
    monkeypatch.setenv(TIMEOUT_VARIABLE, "2.5")
    assert distributed_timeout().total_seconds() == 2.5
    monkeypatch.delenv(TIMEOUT_VARIABLE)
    assert distributed_timeout().total_seconds() == 300
