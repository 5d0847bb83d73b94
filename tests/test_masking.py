"""TST masking (paper 002, Sec. 3.3.2, Eq. 7-8; DESIGN.md section 3)."""

import numpy as np
import pytest
import torch

from tsrep.training.masking import apply_mask, geometric_mask, make_mask, masked_mse, validate_masking


def _span_lengths(mask: torch.Tensor) -> np.ndarray:
    """Lengths of the masked runs that start and end inside each row (runs cut by the row ends are biased)."""
    m = mask.numpy().astype(np.int8)
    lengths = []
    for row in m:
        d = np.diff(np.concatenate([[0], row, [0]]))
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        keep = (starts > 0) & (ends < len(row))
        lengths.extend((ends - starts)[keep])
    return np.asarray(lengths)


@pytest.mark.parametrize("ratio, mean_length", [(0.15, 3.0), (0.3, 5.0), (0.5, 2.0)])
def test_geometric_mask_ratio_and_span_length_over_many_draws(ratio, mean_length):
    g = torch.Generator().manual_seed(0)
    mask = geometric_mask(3000, 300, ratio, mean_length, g)  # 900,000 values
    assert mask.shape == (3000, 300) and mask.dtype == torch.bool
    assert abs(mask.float().mean().item() - ratio) < 0.01
    spans = _span_lengths(mask)
    assert len(spans) > 10000
    assert abs(spans.mean() - mean_length) < 0.1 * mean_length
    # Geometric spans: a share 1/l_m of them has length 1.
    assert abs((spans == 1).mean() - 1 / mean_length) < 0.03


def test_make_mask_is_per_variable_fresh_and_reproducible():
    g = torch.Generator().manual_seed(1)
    a = make_mask((8, 100, 3), 0.15, 3, "geometric", g)
    b = make_mask((8, 100, 3), 0.15, 3, "geometric", g)
    assert a.shape == (8, 100, 3)
    assert not torch.equal(a, b)  # a fresh mask on every draw
    assert not torch.equal(a[:, :, 0], a[:, :, 1])  # each variable masked separately
    again = make_mask((8, 100, 3), 0.15, 3, "geometric", torch.Generator().manual_seed(1))
    assert torch.equal(a, again)


def test_bernoulli_mask_ratio_and_no_spans():
    g = torch.Generator().manual_seed(2)
    mask = make_mask((200, 300, 4), 0.2, 3, "bernoulli", g)
    assert abs(mask.float().mean().item() - 0.2) < 0.01
    spans = _span_lengths(mask.permute(0, 2, 1).reshape(-1, 300))
    assert abs(spans.mean() - 1 / (1 - 0.2)) < 0.05  # geometric with p = 1 - r: independent values


def test_apply_mask_zeroes_only_masked_values():
    x = torch.randn(2, 5, 3)
    mask = torch.zeros(2, 5, 3, dtype=torch.bool)
    mask[0, 1, 2] = mask[1, 4, 0] = True
    out = apply_mask(x, mask)
    assert out[0, 1, 2] == 0 and out[1, 4, 0] == 0
    assert torch.equal(out[~mask], x[~mask])


def test_loss_counts_only_masked_non_padded_entries():
    target = torch.zeros(2, 4, 2)
    prediction = torch.full((2, 4, 2), 100.0)  # huge error everywhere ...
    mask = torch.zeros(2, 4, 2, dtype=torch.bool)
    valid = torch.tensor([[True, True, True, True], [True, True, False, False]])
    counted = [(0, 0, 0), (0, 3, 1), (1, 1, 0)]
    for b, t, c in counted:
        mask[b, t, c] = True
        prediction[b, t, c] = 2.0  # ... except on the counted entries: error 2 each
    mask[1, 3, 1] = True  # masked but padded: must not count
    prediction[1, 3, 1] = 50.0
    loss = masked_mse(prediction, target, mask, valid)
    assert loss.item() == pytest.approx(4.0)
    # Without the valid mask the padded entry counts too.
    assert masked_mse(prediction, target, mask).item() == pytest.approx((3 * 4 + 2500) / 4)
    # Nothing counted: zero, and the gradient still flows (no NaN).
    p = torch.randn(1, 3, 1, requires_grad=True)
    empty = masked_mse(p, torch.zeros(1, 3, 1), torch.zeros(1, 3, 1, dtype=torch.bool))
    empty.backward()
    assert empty.item() == 0 and torch.all(p.grad == 0)


@pytest.mark.parametrize("ratio", [0, 1, -0.1, 1.5, float("nan"), "0.1", True])
def test_mask_ratio_outside_open_unit_interval_is_rejected(ratio):
    with pytest.raises(ValueError, match="mask_ratio"):
        validate_masking(ratio, 3)


def test_bad_mask_length_and_kind_are_rejected():
    with pytest.raises(ValueError, match="mask_mean_length"):
        validate_masking(0.15, 0.5)
    with pytest.raises(ValueError, match="masking"):
        validate_masking(0.15, 3, "blocks")
    with pytest.raises(ValueError, match="unmasked spans"):
        validate_masking(0.9, 1.0)
