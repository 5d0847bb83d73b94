"""Data-parallel training (tsrep.training.distributed): a two-process torchrun run on the CPU (gloo)
gives the model one process gives, and really splits every batch between the processes, in
supervised training and in masked pretraining.

The same worker script trains small EA-DC-Transformer classifiers on shipped data once with plain
`python` (no process group: the one-process path) and once under
`python -m torch.distributed.run --nproc_per_node=2 --standalone`; each process saves what it ends with.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tsrep import EADCTransformerClassifier
from tsrep.training.distributed import (
    DataParallel,
    device_for_rank,
    init_distributed,
    launched_by_torchrun,
    shard_indices,
    shard_loss_weight,
)
from tsrep.training.loop import shuffled_batches

# Float rounding differs between one batch and two shards (sums in another order); over 10-14
# optimiser steps it stays far below these (measured: weights 3e-6, outputs and losses 6e-7). An
# optimiser whose step is linear in the gradient (SGD) keeps every weight there. Adam-type steps
# (RAdam, tsrep's default; AdamW) divide by the gradient's own size, so a weight whose true gradient
# is zero (a bias just before a BatchNorm, which the norm cancels; the key bias, which the softmax
# cancels) moves by rounding noise scaled up to about lr per step, differently in each run (measured:
# 1.5e-5 and 1.4e-4): for those runs the test compares the losses and outputs, which such weights
# do not change.
WEIGHT_TOL = 1e-5
OUTPUT_TOL = 1e-5

WORKER = textwrap.dedent(
    '''
    """Fit small EA-DC-Transformers and pretrain small encoders; save weights, losses, test outputs and
    the cases each training forward saw."""
    import sys

    import torch
    from torch import nn

    from sklearn.datasets import load_digits

    from tsrep import TSRepEncoder
    from tsrep.backbones.heads import SeriesModel
    from tsrep.backbones.vision import EAViT
    from tsrep.data import load_archive
    from tsrep.estimators import EADCTransformerClassifier
    from tsrep.training import fit_classifier, predict_logits
    from tsrep.training.callbacks import Callback, CSVLogger
    from tsrep.training.distributed import get_rank, get_world_size, save_on_main
    from tsrep.training.masking import ReconstructionModel

    torch.set_num_threads(1)
    seen = []  # per training forward: the first time step of every case of the batch (identifies the cases)


    def record(module, args):
        if module.training and isinstance(module, (SeriesModel, ReconstructionModel)):  # pretraining: masked cases
            seen.append(args[0][:, 0, :].clone())
        elif module.training and isinstance(module, EAViT):
            seen.append(args[0].flatten(1).clone())


    nn.modules.module.register_module_forward_pre_hook(record)
    RUNS = {
        # unequal lengths (padding masks in BatchNorm), 45 training cases in batches of 7: shards 4/3 and 2/1
        "JapaneseVowels-sgd": ("JapaneseVowels", slice(None, None, 5), dict(optimizer="sgd", lr=0.02, optimizer_kwargs={"momentum": 0.9})),
        # equal lengths, the default optimiser (RAdam), 32 training cases: shards 4/3 and 2/2
        "BasicMotions-radam": ("BasicMotions", slice(None), {}),
        # DEACON head mixing: the PCA layers' input moments are averaged over the global batch
        "BasicMotions-deacon": ("BasicMotions", slice(None), dict(optimizer="sgd", lr=0.02, head_mixing="deacon-direct", deacon_inner_steps=20)),
    }
    PRETRAINING_RUNS = ("JapaneseVowels-sgd", "BasicMotions-radam")
    results = {}
    for run, (name, rows, options) in RUNS.items():
        X, y = load_archive(name, split="train")
        X_test, _ = load_archive(name, split="test")
        seen.clear()
        clf = EADCTransformerClassifier(
            d_model=16, n_blocks=2, n_heads=2, p=0.5, dropout=0.0, batch_size=7, max_epochs=2, min_steps=0, random_state=0,
            # The tolerances below were set for this protocol: per-step tokens, a 20 % validation split
            # (its losses are compared too), RAdam at a constant lr without weight decay. No augmentation:
            # its random draws depend on how a batch is split between ranks, like dropout's.
            patch_len=None, validation_fraction=0.2, lr_schedule="none", weight_decay=0.0, augmentation=None,
            **{"optimizer": "radam", **options},
        ).fit(X[rows], y[rows])
        results[run] = {
            "state": {k: v.clone() for k, v in clf.module_.state_dict().items()},
            "train_loss": clf.history_.train_loss,
            "val_loss": clf.history_.val_loss,
            "test_proba": torch.from_numpy(clf.predict_proba(X_test[:40])),
            "seen": list(seen),
        }

    # The generic loop of the text and vision backbones: EA-ViT on 8x8 digits (patches 2x2, 17 tokens).
    seen.clear()
    digits = load_digits()
    X = torch.tensor(digits.data[:300], dtype=torch.float32).view(-1, 1, 8, 8) / 16.0
    y = torch.tensor(digits.target[:300])
    torch.manual_seed(0)
    model = EAViT(8, 2, 10, in_channels=1, d_model=16, n_layers=2, n_heads=2, alpha=0.1, beta=0.3, dropout=0.0)
    history = fit_classifier(
        model, X[:250], y[:250], epochs=1, batch_size=25, lr=3e-3, lr_schedule="cosine",
        generator=torch.Generator().manual_seed(0),
    )
    results["EAViT-digits"] = {
        "state": {k: v.clone() for k, v in model.state_dict().items()},
        "train_loss": history.train_loss,
        "test_proba": torch.softmax(predict_logits(model, X[250:]), 1),
        "seen": list(seen),
    }

    # Masked pretraining (TSRepEncoder) on the data and with the optimisers of the first two runs:
    # all 54 and 40 cases, shards 4/3 and 3/2.
    for run in PRETRAINING_RUNS:
        name, rows, options = RUNS[run]
        X, _ = load_archive(name, split="train")
        X_test, _ = load_archive(name, split="test")
        seen.clear()
        encoder = TSRepEncoder(
            d_model=16, n_blocks=2, n_heads=2, p=0.5, dropout=0.0, batch_size=7, pretrain_epochs=2, random_state=0,
            **{"optimizer": "radam", **options},
        ).fit(X[rows])
        results["pretraining-" + run] = {
            "state": {k: v.clone() for k, v in encoder.encoder_.state_dict().items()},
            "train_loss": encoder.loss_history_,
            "test_features": torch.from_numpy(encoder.transform(X_test[:40])),
            "seen": list(seen),
        }

    # Bad set-ups fail on every rank with a message (a rank left waiting would hang the job).
    X, y = load_archive("BasicMotions", split="train")
    errors = {}
    for what, rows, options in (("small batch", slice(None), {"batch_size": 1}), ("other data", slice(0, 30 + get_rank()), {})):
        try:
            EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=1, min_steps=0, random_state=0, **options).fit(X[rows], y[rows])
        except (ValueError, RuntimeError) as exc:
            errors[what] = str(exc)
    results["errors"] = errors

    # Callbacks run on every rank; the CSV logger writes on rank 0 only; rank 0's stop is every rank's.
    class StopOnRankZero(Callback):
        def __init__(self):
            self.epochs = []

        def on_epoch_end(self, epoch, logs):
            self.epochs.append(epoch)
            return get_rank() == 0 and epoch == 1

    stopper = StopOnRankZero()
    clf = EADCTransformerClassifier(
        d_model=8, n_blocks=1, n_heads=2, p=0.5, max_epochs=4, min_steps=0, random_state=0,
        callbacks=[stopper, CSVLogger(f"{sys.argv[1]}/log_of_{get_world_size()}.csv")],
    ).fit(X, y)
    results["callbacks"] = {"epochs": stopper.epochs, "n_epochs": clf.n_epochs_}
    torch.save(results, f"{sys.argv[1]}/rank{get_rank()}_of_{get_world_size()}.pt")
    save_on_main({"written by": get_rank()}, f"{sys.argv[1]}/main_of_{get_world_size()}.pt")
    '''
)

RUN_NAMES = ("JapaneseVowels-sgd", "BasicMotions-radam", "BasicMotions-deacon", "EAViT-digits")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{(rank, world_size): results} of one plain run and one two-process torchrun run (gloo, CPU)."""
    out = tmp_path_factory.mktemp("distributed")
    script = out / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)  # the plain run must not look like a torchrun child
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone", str(script), str(out)]
    # Both launches at once: their start-up (imports) dominates and overlaps.
    # Each in its own session, so that a hung run is killed with all its workers.
    launch = {"env": env, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "start_new_session": True}
    procs = [subprocess.Popen([sys.executable, str(script), str(out)], **launch), subprocess.Popen(torchrun, **launch)]
    try:
        for proc in procs:
            log, _ = proc.communicate(timeout=240)
            assert proc.returncode == 0, log.decode()[-4000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    results = {}
    for rank, world in ((0, 1), (0, 2), (1, 2)):
        results[rank, world] = torch.load(out / f"rank{rank}_of_{world}.pt", weights_only=False)
    results["main"] = torch.load(out / "main_of_2.pt")
    results["log_of_2"] = (out / "log_of_2.csv").read_text().splitlines()
    return results


def _max_difference(a: dict, b: dict) -> tuple[float, str]:
    return max(((a[k].double() - b[k].double()).abs().max().item(), k) for k in a if a[k].is_floating_point())


@pytest.mark.parametrize("run", RUN_NAMES)
def test_two_ranks_hold_identical_weights(runs, run):
    # Same averaged gradients, same all-reduced BatchNorm statistics: the ranks never drift apart.
    a, b = runs[0, 2][run]["state"], runs[1, 2][run]["state"]
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("run", ["JapaneseVowels-sgd", "BasicMotions-deacon"])
def test_two_processes_give_the_one_process_weights(runs, run):
    one, two = runs[0, 1][run], runs[0, 2][run]
    assert one["state"].keys() == two["state"].keys()
    assert any("running_var" in k for k in one["state"])  # BatchNorm running statistics are compared too
    assert any("pca.weight" in k for k in one["state"]) == (run == "BasicMotions-deacon")
    diff, where = _max_difference(one["state"], two["state"])
    assert diff < WEIGHT_TOL, f"{run}: {where} differs by {diff:.2e}"
    # The training really moved the weights: the match is not two untouched initialisations.
    assert one["train_loss"][-1] < one["train_loss"][0]


@pytest.mark.parametrize("run", RUN_NAMES)
def test_two_processes_give_the_one_process_losses_and_outputs(runs, run):
    one, two = runs[0, 1][run], runs[0, 2][run]
    torch.testing.assert_close(torch.tensor(two["train_loss"]), torch.tensor(one["train_loss"]), rtol=0, atol=OUTPUT_TOL)
    if "val_loss" in one:  # the estimators' early stopping sees the same validation losses
        torch.testing.assert_close(torch.tensor(two["val_loss"]), torch.tensor(one["val_loss"]), rtol=0, atol=OUTPUT_TOL)
    torch.testing.assert_close(two["test_proba"], one["test_proba"], rtol=0, atol=OUTPUT_TOL)


# Pretraining: the masks are drawn for the whole batch, alike on every rank and in one process.
@pytest.mark.parametrize("run", [*RUN_NAMES, "pretraining-JapaneseVowels-sgd", "pretraining-BasicMotions-radam"])
def test_each_rank_saw_its_half_of_every_batch(runs, run):
    one, rank0, rank1 = runs[0, 1][run]["seen"], runs[0, 2][run]["seen"], runs[1, 2][run]["seen"]
    assert len(one) == len(rank0) == len(rank1) >= 10  # the same optimiser steps, a few of them
    for batch, part0, part1 in zip(one, rank0, rank1):
        # rank 0 took the first ceil(n/2) cases of the one-process batch, rank 1 the rest: no case twice, none lost
        assert len(part0) == (len(batch) + 1) // 2 and len(part1) == len(batch) // 2
        assert torch.equal(torch.cat([part0, part1]), batch)
    assert any(len(batch) % 2 for batch in one)  # unequal shards occurred


@pytest.mark.parametrize("run", ["JapaneseVowels-sgd", "BasicMotions-radam"])
def test_masked_pretraining_on_two_processes_gives_the_one_process_result(runs, run):
    # Each rank's half of every masked batch: test_each_rank_saw_its_half_of_every_batch.
    one, rank0, rank1 = (runs[rank, world]["pretraining-" + run] for rank, world in ((0, 1), (0, 2), (1, 2)))
    assert all(torch.equal(rank0["state"][k], rank1["state"][k]) for k in rank0["state"])
    assert any("running_var" in k for k in one["state"])  # BatchNorm running statistics are compared too
    if run.endswith("-sgd"):  # RAdam scales up the rounding noise of weights without a true gradient (above)
        diff, where = _max_difference(one["state"], rank0["state"])
        assert diff < WEIGHT_TOL, f"{run}: {where} differs by {diff:.2e}"
    assert one["train_loss"][-1] < one["train_loss"][0]  # the weights moved
    torch.testing.assert_close(torch.tensor(rank0["train_loss"]), torch.tensor(one["train_loss"]), rtol=0, atol=OUTPUT_TOL)
    # The representations come from eval-mode BatchNorm, whose running mean follows the bias before it:
    # with RAdam that bias moves by rounding noise scaled up (measured: 4e-5), and so do the features
    # (measured: 5e-5). With SGD they match as closely as the losses.
    atol = OUTPUT_TOL if run.endswith("-sgd") else 1e-3
    torch.testing.assert_close(rank0["test_features"], one["test_features"], rtol=0, atol=atol)


def test_bad_setups_fail_on_every_rank_with_a_message(runs):
    # batch_size=1 is refused up front, alone or on every rank (batches of one case are never trained on).
    assert runs[0, 1]["errors"] == {"small batch": "The 'batch_size' parameter of EADCTransformerClassifier must be an int in the range [2, inf). Got 1 instead."}
    for rank in (0, 1):
        errors = runs[rank, 2]["errors"]
        assert "The 'batch_size' parameter of EADCTransformerClassifier must be an int in the range [2, inf)" in errors["small batch"]
        assert "needs the same training_data" in errors["other data"] and "on every rank" in errors["other data"]


def test_save_on_main_writes_once_from_rank_zero(runs):
    assert runs["main"] == {"written by": 0}


# ----------------------------------------------------------------------------- without processes
def test_callbacks_run_on_every_rank_and_loggers_write_once(runs):
    for rank in (0, 1):
        assert runs[rank, 2]["callbacks"] == {"epochs": [0, 1], "n_epochs": 2}  # no rank waits for another
    header, *rows = runs["log_of_2"]
    assert header.startswith("epoch,train_loss") and [r.split(",")[0] for r in rows] == ["0", "1"]


def test_shards_are_a_contiguous_partition_of_the_batch():
    index = torch.randperm(23)
    for world in (1, 2, 3, 4, 7):
        shards = [shard_indices(index, r, world) for r in range(world)]
        assert torch.equal(torch.cat(shards), index)
        sizes = [len(s) for s in shards]
        assert max(sizes) - min(sizes) <= 1
    with pytest.raises(ValueError, match="rank must be in"):
        shard_indices(index, 2, 2)


def test_weighted_shard_losses_average_to_the_full_batch_gradient():
    # What DDP computes: the mean over ranks of each rank's gradient. With each shard's mean loss
    # weighted by shard_loss_weight it is the gradient of the mean loss over the whole batch, here
    # for shards of unequal size (7 cases over 3 ranks: 3, 2, 2).
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    x, y = torch.randn(7, 5), torch.randint(0, 3, (7,))
    full = torch.autograd.grad(F.cross_entropy(model(x), y), list(model.parameters()))
    world = 3
    averaged = [torch.zeros_like(g) for g in full]
    for rank in range(world):
        idx = shard_indices(torch.arange(7), rank, world)
        loss = F.cross_entropy(model(x[idx]), y[idx]) * shard_loss_weight(len(idx), 7, world)
        for acc, g in zip(averaged, torch.autograd.grad(loss, list(model.parameters()))):
            acc += g / world
    for a, g in zip(averaged, full):
        torch.testing.assert_close(a, g, rtol=1e-5, atol=1e-7)
    # Unweighted shard means would not do: the 3-case shard counts as much as each 2-case shard.
    idx = [shard_indices(torch.arange(7), r, world) for r in range(world)]
    naive = sum(torch.autograd.grad(F.cross_entropy(model(x[i]), y[i]), [model[0].weight])[0] for i in idx) / world
    assert (naive - full[0]).abs().max() > 1e-4


def test_without_a_process_group_nothing_changes():
    model = nn.Linear(3, 2)
    with DataParallel(model, "cpu") as parallel:
        assert not parallel.enabled and parallel.model is model and parallel.is_main
        index = torch.arange(5)
        assert parallel.shard(index) is index
        loss = torch.tensor(0.5)
        assert parallel.weight_loss(loss, 2, 5) is loss and parallel.batch_loss(loss) is loss
        assert parallel.min_batch_size == 2
    # The one-process loop still leaves out only a trailing batch of one.
    sizes = [len(b) for b in shuffled_batches(9, 4, torch.Generator().manual_seed(0))]
    assert sizes == [4, 4]
    sizes = [len(b) for b in shuffled_batches(10, 4, torch.Generator().manual_seed(0), min_size=3)]
    assert sizes == [4, 4]


def test_launch_detection_and_rank_devices(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert not launched_by_torchrun()
    assert device_for_rank("cuda") == torch.device("cuda")  # not launched: the user's device as given
    with pytest.raises(RuntimeError, match="MASTER_ADDR, MASTER_PORT is not set; launch with `torchrun"):
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "2")
        init_distributed()
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert launched_by_torchrun()
    assert device_for_rank("cuda") == torch.device("cuda", 1)  # one GPU per process
    assert device_for_rank("cuda:0") == torch.device("cuda", 0)  # an explicit index is kept
    assert device_for_rank("cpu") == torch.device("cpu")


@pytest.mark.parametrize(
    "env, message",
    [
        ({"RANK": "3", "WORLD_SIZE": "2"}, "RANK must be in [0, WORLD_SIZE) = [0, 2), got RANK=3 with WORLD_SIZE=2"),
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "RANK must be in [0, WORLD_SIZE) = [0, 2), got RANK=-1 with WORLD_SIZE=2"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE must be a positive integer (the number of processes), got "
                                           "WORLD_SIZE='0'"),
        ({"RANK": "0", "WORLD_SIZE": "two"}, "WORLD_SIZE must be an integer, got WORLD_SIZE='two'"),
        ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "first"},
         "LOCAL_RANK must be an integer, got LOCAL_RANK='first'"),
    ],
)
def test_a_launch_environment_whose_ranks_cannot_meet_fails_at_once(monkeypatch, env, message):
    # No process listens on the port: a rendezvous would wait (here up to 3 s, by default 300 s) and fail
    # with another error; the launch variables are refused before it, naming them.
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    for name, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "LOCAL_RANK": "0",
                        "TSREP_DIST_TIMEOUT": "3", **env}.items():
        monkeypatch.setenv(name, value)
    X, y = np.random.default_rng(0).normal(size=(8, 1, 16)).astype(np.float32), np.array([0, 1] * 4)
    clf = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, max_epochs=1, min_steps=0, device="cpu")
    with pytest.raises(ValueError) as info:
        clf.fit(X, y)
    assert message in str(info.value)
    assert not torch.distributed.is_initialized()
    with pytest.raises(ValueError) as info:  # the same check when the user forms the group
        init_distributed()
    assert message in str(info.value)
