"""The cheaper implementations of a training step against the stock PyTorch operations they replace."""

import pytest
import torch
from torch import nn

from tsrep.nn import Dropout, MaskedBatchNorm1d, SequenceNorm
from tsrep.nn.patching import Patching
from tsrep.training.optim import build_optimizer


# ----------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_drops_a_share_p_and_keeps_the_expectation(p):
    torch.manual_seed(0)
    drop = Dropout(p).train()
    x = torch.full((400, 50, 50), 2.0, requires_grad=True)
    out = drop(x)
    dropped = (out == 0).float().mean()
    assert abs(float(dropped) - p) < 0.005
    torch.testing.assert_close(out[out != 0], torch.full_like(out[out != 0], 2.0 / (1 - p)), rtol=1e-4, atol=0)
    assert abs(float(out.detach().mean()) - 2.0) < 0.02
    # backward: the gradient is the same factor, 0 where dropped and 1 / (1 - p) where kept
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(x.grad, out.detach() / 2.0)


def test_dropout_is_the_identity_in_eval_and_at_zero_and_draws_anew_each_call():
    x = torch.randn(8, 5, 16)
    assert Dropout(0.3).eval()(x) is x
    assert Dropout(0.0).train()(x) is x
    drop = Dropout(0.3).train()
    assert not torch.equal(drop(x), drop(x))
    assert isinstance(drop, nn.Dropout) and drop.p == 0.3
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_dropout_masks_follow_the_seed():
    x = torch.randn(4, 7, 9)
    torch.manual_seed(3)
    a = Dropout(0.2).train()(x)
    torch.manual_seed(3)
    b = Dropout(0.2).train()(x)
    assert torch.equal(a, b)


# ----------------------------------------------------------------------------- mean patches
def _slow_mean_tokens(x, valid, patch_len, stride):
    """Token j = the mean of x over the valid steps of [j*S, j*S + P) (steps past the end count as padding)."""
    b, t, c = x.shape
    n = -(-t // stride)
    out = torch.zeros(b, n, c, dtype=x.dtype)
    for i in range(b):
        for j in range(n):
            steps = [s for s in range(j * stride, min(j * stride + patch_len, t)) if valid is None or valid[i, s]]
            if steps:
                out[i, j] = x[i, steps].mean(0)
    return out


@pytest.mark.parametrize("patch_len,stride", [(4, 2), (5, 5), (6, 4), (3, 1)])
def test_mean_patches_equal_the_mean_over_valid_steps(patch_len, stride):
    torch.manual_seed(0)
    x = torch.randn(3, 17, 2, dtype=torch.double, requires_grad=True)
    valid = torch.ones(3, 17, dtype=torch.bool)
    valid[1, 11:] = False
    valid[2, 4:] = False
    patching = Patching(patch_len, stride, "mean")
    for v in (None, valid):
        tokens, token_valid = patching(x * (v[..., None] if v is not None else 1), v)
        torch.testing.assert_close(tokens, _slow_mean_tokens(x.detach() * (v[..., None] if v is not None else 1), v,
                                                             patch_len, stride))
        assert token_valid is None if v is None else torch.equal(token_valid, v[:, ::stride])
    assert torch.autograd.gradcheck(lambda z: patching(z, valid)[0], (x,))


# ----------------------------------------------------------------------------- batch norm layouts
def test_batch_norm_on_unpadded_rows_equals_the_stock_kernel_and_its_running_statistics():
    torch.manual_seed(0)
    x = torch.randn(6, 11, 5)  # (B, T, C)
    ours, stock = MaskedBatchNorm1d(5), nn.BatchNorm1d(5)
    stock.load_state_dict(ours.state_dict())
    for _ in range(3):
        torch.testing.assert_close(ours(x), stock(x.transpose(1, 2)).transpose(1, 2))
    torch.testing.assert_close(ours.running_mean, stock.running_mean)
    torch.testing.assert_close(ours.running_var, stock.running_var)
    ours.eval(), stock.eval()
    torch.testing.assert_close(ours(x), stock(x.transpose(1, 2)).transpose(1, 2))


@pytest.mark.parametrize("kind", ["batch", "layer"])
def test_channels_first_norm_equals_the_channels_last_one_with_and_without_padding(kind):
    torch.manual_seed(0)
    x = torch.randn(4, 9, 6)
    valid = torch.ones(4, 9, dtype=torch.bool)
    valid[2, 5:] = False
    a, b = SequenceNorm(kind, 6), SequenceNorm(kind, 6)
    b.load_state_dict(a.state_dict())
    for v in (None, valid):
        torch.testing.assert_close(a.forward_channels_first(x.transpose(1, 2), v), b(x, v).transpose(1, 2))
    torch.testing.assert_close(a.state_dict(), b.state_dict())


# ----------------------------------------------------------------------------- the optimiser
def test_adamw_is_fused_on_the_cpu_and_steps_as_the_plain_one():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
    twin = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
    twin.load_state_dict(model.state_dict())
    fused = build_optimizer("adamw", model.parameters(), 1e-2, weight_decay=0.01)
    plain = build_optimizer("adamw", twin.parameters(), 1e-2, {"fused": False}, weight_decay=0.01)
    assert fused.defaults["fused"] is True and not plain.defaults["fused"]
    x, y = torch.randn(16, 5), torch.randn(16, 2)
    for _ in range(5):
        for net, opt in ((model, fused), (twin, plain)):
            opt.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            opt.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- the loop: no host sync per step
def test_a_non_finite_loss_stops_the_fit_at_the_end_of_its_epoch_naming_it(monkeypatch):
    """The batch losses stay on the device during an epoch (no host synchronisation per step); a NaN among
    them is a FloatingPointError naming the epoch, and the epoch's mean loss is the mean of the batch losses."""
    import numpy as np

    import tsrep.estimators._tasks as tasks
    from tsrep import EADCTransformerClassifier

    X, y = np.random.default_rng(0).normal(size=(16, 2, 12)), np.arange(16) % 2
    tiny = dict(d_model=8, n_blocks=1, n_heads=2, max_epochs=3, min_steps=0, batch_size=4, device="cpu", random_state=0)
    seen = []
    loss_of = tasks.classification_loss

    def recording_loss(smoothing):
        loss = loss_of(smoothing)

        def record(outputs, targets, weights=None):
            value = loss(outputs, targets, weights)
            if outputs.requires_grad:  # training batches, not the evaluation of a validation split
                seen.append(float(value.detach()))
            return value

        return record

    monkeypatch.setattr(tasks, "classification_loss", recording_loss)
    clf = EADCTransformerClassifier(**tiny, mixup=0.0).fit(X, y)
    assert len(seen) == 12
    assert clf.history_.train_loss == pytest.approx([np.mean(seen[i : i + 4]) for i in (0, 4, 8)], rel=1e-12)

    def nan_from_the_sixth_batch(smoothing):
        loss = loss_of(smoothing)
        calls = []

        def spoiled(outputs, targets, weights=None):
            calls.append(1)
            value = loss(outputs, targets, weights)
            return value * float("nan") if len(calls) >= 6 else value

        return spoiled

    monkeypatch.setattr(tasks, "classification_loss", nan_from_the_sixth_batch)
    with pytest.raises(FloatingPointError, match=r"training loss at epoch 1 became nan; try a smaller lr \(now 0\.001\)"):
        EADCTransformerClassifier(**tiny, mixup=0.0).fit(X, y)


# ----------------------------------------------------------------------------- data on the device
def test_training_data_is_copied_to_an_accelerator_once_and_batches_are_cut_there_alike(monkeypatch):
    from tsrep.training import loop
    from tsrep.training.loop import SeriesBatchData

    lengths = torch.tensor([6, 4, 6, 2, 5])
    valid = torch.arange(6).expand(5, 6) < lengths[:, None]
    data = SeriesBatchData(torch.randn(5, 6, 2) * valid[..., None], valid, torch.arange(5), torch.rand(5))
    assert data.to_device("cpu") is data  # a CPU reads the data where it is
    # "meta" stands in for a GPU: tensors with shapes and no values, on another device than the CPU.
    resident = data.to_device("meta")
    assert resident.values.is_meta and resident.targets.is_meta and not resident.valid.is_meta
    for index in (torch.tensor([1, 3]), torch.tensor([0, 4, 2])):
        values, mask, targets = resident.batch(index, "meta")
        cpu_values, cpu_mask, _ = data.batch(index, "cpu")
        assert values.is_meta and values.shape == cpu_values.shape and targets.shape == (len(index),)
        assert (mask is None) == (cpu_mask is None)
        assert resident.batch_weights(index, "meta").shape == (len(index),)
    monkeypatch.setattr(loop, "RESIDENT_BYTES", 10)
    assert data.to_device("meta") is data  # too large: batch by batch
