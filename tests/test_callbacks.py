"""Callbacks (tsrep.training.callbacks): hooks of every training loop, stopping, the CSV, TensorBoard and
MLflow loggers, and callbacks with clone, get_params and pickling."""

from __future__ import annotations

import csv
import pickle

import numpy as np
import pytest
import torch
from aeon.datasets import load_basic_motions
from sklearn.base import clone

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder
from tsrep.estimators.baselines import BackboneClassifier
from tsrep.training import callbacks as callbacks_module
from tsrep.training import fit_classifier
from tsrep.training.callbacks import CSV_COLUMNS, Callback, CSVLogger, MLflowLogger, TensorBoardLogger

TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, min_steps=0, random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y = load_basic_motions(split="train")
    return X, y


class Recorder(Callback):
    """Records every hook call; stops at `stop_at` by returning True."""

    def __init__(self, stop_at=None):
        self.stop_at = stop_at
        self.calls = []

    def on_fit_start(self, info):
        self.calls.append(("start", {k: info[k] for k in ("epochs", "start_epoch", "phase", "member")}))

    def on_epoch_end(self, epoch, logs):
        self.calls.append(("epoch", epoch, dict(logs)))
        return epoch == self.stop_at

    def on_fit_end(self, logs):
        self.calls.append(("end", logs["error"]))


def _read_csv(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def test_hooks_and_logs_of_a_fit_with_a_validation_split(data):
    X, y = data
    rec = Recorder()
    clf = EADCTransformerClassifier(**TINY, max_epochs=3, validation_fraction=0.25, callbacks=rec).fit(X, y)
    assert rec.calls[0] == ("start", {"epochs": 3, "start_epoch": 0, "phase": "train", "member": None})
    epochs = [c for c in rec.calls if c[0] == "epoch"]
    assert [c[1] for c in epochs] == [0, 1, 2]
    for (_, epoch, logs) in epochs:
        assert set(logs) == {"train_loss", "val_loss", "val_score", "lr", "seconds"}
        assert logs["train_loss"] == clf.history_.train_loss[epoch]
        assert logs["val_score"] == clf.history_.val_score[epoch] and logs["seconds"] > 0 and logs["lr"] > 0
    assert rec.calls[-1] == ("end", None)


def test_returning_true_stops_training(data):
    X, y = data
    clf = EADCTransformerClassifier(**TINY, max_epochs=6, callbacks=[Recorder(stop_at=1)]).fit(X, y)
    assert clf.n_epochs_ == 2 and clf.is_fitted


def test_fit_end_runs_when_training_raises_and_the_error_propagates(data):
    X, y = data

    class Boom(Recorder):
        def on_epoch_end(self, epoch, logs):
            super().on_epoch_end(epoch, logs)
            raise KeyError("stop here")

    boom = Boom()
    with pytest.raises(KeyError, match="stop here"):
        EADCTransformerClassifier(**TINY, max_epochs=3, callbacks=[boom]).fit(X, y)
    assert boom.calls[-1][0] == "end" and isinstance(boom.calls[-1][1], KeyError)


def test_csv_logger_writes_one_row_per_epoch_with_the_documented_columns(data, tmp_path):
    X, y = data
    path = tmp_path / "logs" / "fit.csv"
    clf = EADCTransformerClassifier(**TINY, max_epochs=4, validation_fraction=0.25, callbacks=[CSVLogger(path)])
    clf.fit(X, y)
    columns, rows = _read_csv(path)
    assert tuple(columns) == CSV_COLUMNS == ("epoch", "train_loss", "val_loss", "val_score", "lr", "seconds")
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2, 3]
    assert [float(r["train_loss"]) for r in rows] == pytest.approx(clf.history_.train_loss, rel=1e-12)
    assert [float(r["val_score"]) for r in rows] == pytest.approx(clf.history_.val_score, rel=1e-12)
    # Without a validation split the val_* cells are empty; a second fit rewrites the file.
    clf.set_params(validation_fraction=0.0, max_epochs=2).fit(X, y)
    columns, rows = _read_csv(path)
    assert len(rows) == 2 and all(r["val_loss"] == "" and r["val_score"] == "" for r in rows)
    assert all(float(r["lr"]) > 0 and float(r["seconds"]) > 0 for r in rows)


def test_ensemble_members_log_to_files_of_their_own(data, tmp_path):
    X, y = data
    rec = Recorder()
    EADCTransformerClassifier(**TINY, max_epochs=2, n_estimators=2, callbacks=[CSVLogger(tmp_path / "log.csv"), rec]).fit(X, y)
    for member in (0, 1):
        assert len(_read_csv(tmp_path / f"log.member-{member}.csv")[1]) == 2
    assert not (tmp_path / "log.csv").exists()
    # The members (n_jobs=1) report to the callback objects the user gave, one member after the other.
    starts = [call[1]["member"] for call in rec.calls if call[0] == "start"]
    assert starts == [0, 1] and [call[0] for call in rec.calls].count("epoch") == 4


def test_tensorboard_event_file_holds_the_same_scalars(data, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    X, y = data
    clf = EADCTransformerClassifier(
        **TINY, max_epochs=3, validation_fraction=0.25,
        callbacks=[TensorBoardLogger(tmp_path / "tb"), CSVLogger(tmp_path / "log.csv")],
    ).fit(X, y)
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert {"train_loss", "val_loss", "val_score", "lr", "seconds"} <= set(events.Tags()["scalars"])
    _, rows = _read_csv(tmp_path / "log.csv")
    for tag in ("train_loss", "val_loss", "val_score", "lr"):
        scalars = events.Scalars(tag)
        assert [s.step for s in scalars] == [0, 1, 2]
        # TensorBoard stores float32
        assert [s.value for s in scalars] == pytest.approx([float(r[tag]) for r in rows], rel=1e-6)
    assert [s.value for s in events.Scalars("train_loss")] == pytest.approx(clf.history_.train_loss, rel=1e-6)


def test_mlflow_logger_without_mlflow_says_how_to_install(monkeypatch, data):
    import builtins

    real_import = builtins.__import__

    def no_mlflow(name, *args, **kwargs):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ImportError("No module named 'mlflow'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    X, y = data
    with pytest.raises(ImportError, match=r"pip install 'tsrep\[mlflow\]'"):
        EADCTransformerClassifier(**TINY, max_epochs=1, callbacks=[MLflowLogger()]).fit(X, y)


def test_mlflow_logger_records_metrics_per_epoch(data, tmp_path, monkeypatch):
    import mlflow

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a local file store: no server, no database
    X, y = data
    logger = MLflowLogger(tracking_uri=f"file:{tmp_path / 'mlruns'}", experiment_name="tsrep-test", run_name="tiny")
    clf = EADCTransformerClassifier(**TINY, max_epochs=3, callbacks=[logger]).fit(X, y)
    client = mlflow.tracking.MlflowClient(tracking_uri=f"file:{tmp_path / 'mlruns'}")
    history = client.get_metric_history(logger.run_id_, "train_loss")
    assert [m.step for m in history] == [0, 1, 2]
    assert [m.value for m in history] == pytest.approx(clf.history_.train_loss)
    run = client.get_run(logger.run_id_)
    assert run.info.status == "FINISHED" and run.data.params["d_model"] == "8"


def test_loggers_write_on_rank_zero_only(monkeypatch, data, tmp_path):
    monkeypatch.setattr(callbacks_module, "is_main_process", lambda: False)
    X, y = data
    EADCTransformerClassifier(
        **TINY, max_epochs=1, callbacks=[CSVLogger(tmp_path / "log.csv"), TensorBoardLogger(tmp_path / "tb")]
    ).fit(X, y)
    assert not (tmp_path / "log.csv").exists() and not (tmp_path / "tb").exists()


def test_callbacks_survive_clone_get_params_and_pickling(data, tmp_path):
    X, y = data
    logger = CSVLogger(tmp_path / "log.csv")
    clf = EADCTransformerRegressor(**TINY, max_epochs=2, callbacks=[logger, TensorBoardLogger(tmp_path / "tb")])
    assert clf.get_params()["callbacks"][0] is logger
    copy = clone(clf)
    assert isinstance(copy.callbacks[0], CSVLogger) and copy.callbacks[0] is not logger
    assert copy.callbacks[0].path == logger.path
    clf.fit(X, np.arange(len(y), dtype=float))
    assert logger._file is None  # files are open only during fit
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict(X), clf.predict(X))
    assert again.callbacks[0].path == logger.path
    assert "CSVLogger(path=" in repr(clf)


@pytest.mark.parametrize("bad", [object(), "log.csv", [CSVLogger("x.csv"), 3]])
def test_a_callback_without_hooks_is_a_clear_error(bad, data):
    X, y = data
    for est in (EADCTransformerClassifier(**TINY, max_epochs=1, callbacks=bad),
                BackboneClassifier(backbone="gru", d_model=8, n_blocks=1, max_epochs=1, min_steps=0, callbacks=bad),
                TSRepEncoder(d_model=8, n_blocks=1, n_heads=2, p=0.5, pretrain_epochs=1, callbacks=bad)):
        with pytest.raises(TypeError, match=r"callbacks(\[1\])? is a \w+ with none of the callback methods"):
            est.fit(X, y) if not isinstance(est, TSRepEncoder) else est.fit(X)
    with pytest.raises(TypeError, match="callbacks"):
        fit_classifier(torch.nn.Linear(4, 2), torch.zeros(4, 4), torch.zeros(4, dtype=torch.long), callbacks=bad)


def test_baseline_encoder_and_fit_classifier_take_callbacks(data, tmp_path):
    X, y = data
    rec = Recorder()
    BackboneClassifier(backbone="gru", d_model=8, n_blocks=1, max_epochs=2, min_steps=0, random_state=0,
                       callbacks=[rec]).fit(X, y)
    assert [c[1] for c in rec.calls if c[0] == "epoch"] == [0, 1]

    rec = Recorder(stop_at=1)
    enc = TSRepEncoder(d_model=8, n_blocks=1, n_heads=2, p=0.5, pretrain_epochs=4, batch_size=8, random_state=0,
                       callbacks=[rec, CSVLogger(tmp_path / "pretrain.csv")]).fit(X)
    assert rec.calls[0][1]["phase"] == "pretrain" and len(enc.loss_history_) == 2  # stopped after epoch 1
    _, rows = _read_csv(tmp_path / "pretrain.csv")
    assert [float(r["train_loss"]) for r in rows] == pytest.approx(enc.loss_history_, rel=1e-12)

    rec = Recorder()
    Xt = torch.randn(40, 6)
    yt = (Xt[:, 0] > 0).long()
    history = fit_classifier(torch.nn.Linear(6, 2), Xt, yt, epochs=3, batch_size=8, eval_data=(Xt, yt), callbacks=rec)
    logs = [c[2] for c in rec.calls if c[0] == "epoch"]
    assert [entry["val_score"] for entry in logs] == history.val_score
    assert [entry["train_loss"] for entry in logs] == history.train_loss


def test_a_tuning_config_of_an_estimator_with_callbacks_leaves_them_out(tmp_path):
    from tsrep.tuning import load_config, save_config

    est = EADCTransformerClassifier(**TINY, callbacks=[CSVLogger(tmp_path / "log.csv")])
    loaded = load_config(save_config(est, tmp_path / "best.yaml"))
    assert loaded.callbacks is None and loaded.get_params()["d_model"] == 8


def test_an_unwritable_log_is_a_clear_error_and_loggers_started_before_it_are_closed(data, tmp_path):
    X, y = data
    a_file = tmp_path / "file"
    a_file.write_text("keep me")
    board = TensorBoardLogger(tmp_path / "tb")
    ended = Recorder()
    with pytest.raises(OSError, match="CSVLogger cannot write"):
        EADCTransformerClassifier(**TINY, max_epochs=1, callbacks=[ended, board, CSVLogger(a_file / "log.csv")]).fit(X, y)
    assert board._writer is None and ended.calls[-1][0] == "end" and a_file.read_text() == "keep me"
