"""Resumable supervised fits (checkpoint_dir) and warm starts (warm_start=True)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from aeon.datasets import load_basic_motions
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.estimators.baselines import BackboneRegressor
from tsrep.training.callbacks import Callback, CSVLogger, TensorBoardLogger
from tsrep.training.resume import STATE_FILE

ROOT = Path(__file__).resolve().parents[1]
# No augmentation: the warm-start test compares epoch losses, which random batch distortions make noisy.
TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, min_steps=0, random_state=0, augmentation=None)


@pytest.fixture(scope="module")
def data():
    X, y = load_basic_motions(split="train")
    return X, y


# ----------------------------------------------------------------------------- killed and resumed
KILLED_FIT = textwrap.dedent(
    """
    import json, os, signal, sys

    import torch
    from aeon.datasets import load_basic_motions

    from tsrep import EADCTransformerClassifier
    from tsrep.training.callbacks import Callback, CSVLogger, TensorBoardLogger


    class KillAt(Callback):  # SIGKILL at the end of epoch 3 (of 6), before that epoch's checkpoint
        def on_epoch_end(self, epoch, logs):
            if epoch == 3:
                os.kill(os.getpid(), signal.SIGKILL)


    torch.set_num_threads(1)
    X, y = load_basic_motions(split="train")
    out, params = sys.argv[1], json.loads(sys.argv[2])
    EADCTransformerClassifier(**params, checkpoint_dir=f"{out}/ckpt", callbacks=[CSVLogger(f"{out}/log.csv"), TensorBoardLogger(f"{out}/tb"), KillAt()]).fit(X, y)
    raise SystemExit("not killed")
    """
)
KILL_PARAMS = dict(TINY, max_epochs=6, validation_fraction=0.25, patience=None, dropout=0.2, augmentation="window_slice+scaling+jitter")


class Starts(Callback):
    def __init__(self):
        self.start, self.epochs = None, []

    def on_fit_start(self, info):
        self.start = info["start_epoch"]

    def on_epoch_end(self, epoch, logs):
        self.epochs.append(epoch)


def test_a_fit_killed_mid_training_resumes_and_ends_with_the_uninterrupted_model(data, tmp_path):
    X, y = data
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, "-c", KILLED_FIT, str(tmp_path), json.dumps(KILL_PARAMS)], env=env, capture_output=True, text=True,
                            timeout=300, cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    state = torch.load(tmp_path / "ckpt" / STATE_FILE, weights_only=True)
    assert state["epoch"] == 3 and not state["finished"]  # epochs 0-2 saved; epoch 3 died before its checkpoint
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the killed process: the same float rounding
    try:
        starts = Starts()
        resumed = EADCTransformerClassifier(
            **KILL_PARAMS, checkpoint_dir=tmp_path / "ckpt",
            callbacks=[CSVLogger(tmp_path / "log.csv"), TensorBoardLogger(tmp_path / "tb"), starts],
        ).fit(X, y)
        full = EADCTransformerClassifier(**KILL_PARAMS).fit(X, y)
    finally:
        torch.set_num_threads(threads)
    assert starts.start == 3 and starts.epochs == [3, 4, 5]
    assert resumed.history_ == full.history_  # losses, validation scores and best epoch of every epoch
    X_test, _ = load_basic_motions(split="test")
    assert np.array_equal(resumed.predict_proba(X_test), full.predict_proba(X_test))
    # The log holds each epoch once: rows of epochs redone after the kill are not repeated.
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in rows[1:]] == [0, 1, 2, 3, 4, 5]
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    losses = events.Scalars("train_loss")  # epoch 3 was logged before the kill, then purged and logged again
    assert [e.step for e in losses] == [0, 1, 2, 3, 4, 5]
    assert [e.value for e in losses] == pytest.approx(full.history_.train_loss, rel=1e-6)


class CrashAt(Callback):
    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs):
        if epoch == self.epoch:
            raise RuntimeError("simulated crash")


def test_a_crashed_regressor_with_pretraining_resumes_to_the_same_model(data, tmp_path):
    X, _ = data
    y = np.linspace(0.0, 3.0, len(X))
    params = dict(TINY, max_epochs=4, pretrain_epochs=2, validation_fraction=0.25, patience=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        EADCTransformerRegressor(**params, checkpoint_dir=tmp_path, callbacks=[CrashAt(1)]).fit(X, y)
    assert {"train-state.pt", "pretrain-state.pt"} <= {p.name for p in tmp_path.iterdir()}
    resumed = EADCTransformerRegressor(**params, checkpoint_dir=tmp_path).fit(X, y)
    full = EADCTransformerRegressor(**params).fit(X, y)
    assert np.array_equal(resumed.predict(X), full.predict(X))
    assert resumed.history_.val_loss == full.history_.val_loss
    # A finished state: fitting again changes nothing and trains nothing.
    again = EADCTransformerRegressor(**params, checkpoint_dir=tmp_path).fit(X, y)
    assert np.array_equal(again.predict(X), full.predict(X))


def test_random_state_none_resumes_with_the_seed_the_state_used(data, tmp_path):
    X, y = data
    params = dict(TINY, random_state=None, max_epochs=3)
    with pytest.raises(RuntimeError):
        EADCTransformerClassifier(**params, checkpoint_dir=tmp_path, callbacks=[CrashAt(1)]).fit(X, y)
    first = json.loads(torch.load(tmp_path / STATE_FILE, weights_only=True)["fingerprint"])["settings"]["seed"]
    clf = EADCTransformerClassifier(**params, checkpoint_dir=tmp_path).fit(X, y)
    assert clf.n_epochs_ == 3
    assert json.loads(torch.load(tmp_path / STATE_FILE, weights_only=True)["fingerprint"])["settings"]["seed"] == first


def test_other_settings_or_data_in_the_directory_are_refused_and_left_alone(data, tmp_path):
    X, y = data
    EADCTransformerClassifier(**TINY, max_epochs=2, checkpoint_dir=tmp_path).fit(X, y)
    before = (tmp_path / STATE_FILE).read_bytes()
    with pytest.raises(ValueError, match=r"settings differ: lr \(stored 0.001, now 0.01\).*left as it is"):
        EADCTransformerClassifier(**{**TINY, "lr": 0.01}, max_epochs=2, checkpoint_dir=tmp_path).fit(X, y)
    with pytest.raises(ValueError, match="the training data differ"):
        EADCTransformerClassifier(**TINY, max_epochs=2, checkpoint_dir=tmp_path).fit(X[:30], y[:30])
    with pytest.raises(ValueError, match="it holds a EADCTransformerClassifier fit, this is a BackboneRegressor"):
        BackboneRegressor(backbone="gru", d_model=8, n_blocks=1, max_epochs=2, min_steps=0, random_state=0,
                          checkpoint_dir=tmp_path).fit(X, np.arange(len(X), dtype=float))
    assert (tmp_path / STATE_FILE).read_bytes() == before
    # Where it runs, how loudly and what follows it are not settings of the result: those resume.
    EADCTransformerClassifier(**TINY, max_epochs=2, checkpoint_dir=tmp_path, verbose=True, device="cpu",
                              callbacks=[CSVLogger(tmp_path / "log.csv")]).fit(X, y)


def test_unwritable_checkpoint_dir_is_a_clear_error_before_training(data, tmp_path):
    X, y = data
    a_file = tmp_path / "file"
    a_file.write_text("keep me")
    with pytest.raises(NotADirectoryError, match="checkpoint_dir=.* is a file, not a directory"):
        EADCTransformerClassifier(**TINY, max_epochs=1, checkpoint_dir=a_file).fit(X, y)
    with pytest.raises(OSError, match="checkpoint_dir=.* cannot be created or written"):
        EADCTransformerClassifier(**TINY, max_epochs=1, checkpoint_dir=a_file / "sub").fit(X, y)
    assert a_file.read_text() == "keep me"
    with pytest.raises(ValueError, match="The 'checkpoint_dir' parameter of EADCTransformerClassifier must be an instance of 'str'"):
        EADCTransformerClassifier(**TINY, max_epochs=1, checkpoint_dir=3).fit(X, y)


def test_a_corrupt_state_is_a_clear_error(data, tmp_path):
    X, y = data
    (tmp_path / STATE_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="could not be loaded safely"):
        EADCTransformerClassifier(**TINY, max_epochs=1, checkpoint_dir=tmp_path).fit(X, y)
    assert (tmp_path / STATE_FILE).read_bytes() == b"not a checkpoint"


def test_ensemble_members_checkpoint_in_subdirectories(data, tmp_path):
    X, y = data
    params = dict(TINY, max_epochs=2, n_estimators=2)
    first = EADCTransformerClassifier(**params, checkpoint_dir=tmp_path).fit(X, y)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["member-0", "member-1"]
    again = EADCTransformerClassifier(**params, checkpoint_dir=tmp_path).fit(X, y)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))
    # Drawn member seeds (random_state=None) are recorded, so the members resume too.
    params["random_state"] = None
    first = EADCTransformerClassifier(**params, checkpoint_dir=tmp_path / "drawn").fit(X, y)
    again = EADCTransformerClassifier(**params, checkpoint_dir=tmp_path / "drawn").fit(X, y)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))


# ----------------------------------------------------------------------------- warm start
def test_warm_start_continues_training(data):
    X, y = data
    clf = EADCTransformerClassifier(**TINY, max_epochs=10, warm_start=True, lr=1e-2)
    clf.fit(X, y)
    first = list(clf.history_.train_loss)
    weights = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    clf.fit(X, y)
    second = clf.history_.train_loss
    assert first[0] - first[-1] > 0.4  # the first fit learnt something (1.39 -> 0.85)
    # Epoch 1 of the second fit starts where the first ended, far below the first fit's start.
    assert abs(second[0] - first[-1]) < 0.25 * (first[0] - first[-1])
    assert second[-1] < first[-1]
    assert not all(torch.equal(weights[k], v) for k, v in clf.module_.state_dict().items())
    # Without warm_start, a second fit starts again from new weights (the same as the first: seeded).
    clf.set_params(warm_start=False).fit(X, y)
    assert clf.history_.train_loss == first


def test_warm_start_refuses_other_classes_channels_or_architecture(data):
    X, y = data
    clf = EADCTransformerClassifier(**TINY, max_epochs=1, warm_start=True).fit(X, y)
    keep = y != y[0]
    with pytest.raises(ValueError, match="warm_start=True needs y with the classes of the previous fit"):
        clf.fit(X[keep], y[keep])
    with pytest.raises(ValueError, match="parameters change the network: d_model \\(fitted 8, now 16\\)"):
        clf.set_params(d_model=16).fit(X, y)
    clf.set_params(d_model=8)
    clf.fit(X, y)  # a failed warm fit leaves nothing half-done: the next one continues
    with pytest.raises(ValueError, match="X has 3 channel"):
        clf.fit(X[:, :3], y)
    with pytest.raises(ValueError, match="The 'warm_start' parameter of EADCTransformerClassifier must be an instance of 'bool'"):
        clf.set_params(warm_start="yes").fit(X, y)


def test_warm_start_regressor_keeps_its_target_units_and_ensembles_continue(data):
    X, _ = data
    y = np.linspace(0.0, 3.0, len(X))
    reg = EADCTransformerRegressor(**TINY, max_epochs=2, warm_start=True).fit(X, y)
    mean, std = reg.y_mean_, reg.y_std_
    reg.fit(X, y + 100.0)
    assert (reg.y_mean_, reg.y_std_) == (mean, std)
    ens = EADCTransformerClassifier(**TINY, max_epochs=3, n_estimators=2, warm_start=True, lr=3e-3)
    ens.fit(X, _labels(X))
    members = [m.module_ for m in ens.estimators_]
    last = [m.history_.train_loss[-1] for m in ens.estimators_]
    ens.fit(X, _labels(X))
    assert [m.module_ for m in ens.estimators_] == members  # the same networks, trained further
    assert all(m.history_.train_loss[0] < last[i] + 0.2 for i, m in enumerate(ens.estimators_))
    with pytest.raises(ValueError, match="n_estimators=3"):
        ens.set_params(n_estimators=3).fit(X, _labels(X))


def _labels(X):
    return np.where(X[:, 0, :].mean(axis=1) > np.median(X[:, 0, :].mean(axis=1)), "a", "b")
