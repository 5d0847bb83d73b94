"""Training-time augmentation (tsrep.nn.augmentation): what each transform does, padding, eval mode, estimators."""

import numpy as np
import pytest
import torch

from tsrep import EADCTransformerClassifier
from tsrep.estimators import BackboneClassifier
from tsrep.nn.augmentation import (
    DEFAULT_AUGMENTATION,
    JITTER_STD,
    SCALING_STD,
    SeriesAugmentation,
    resolve_augmentation,
    validate_augmentation,
    window_slice,
    window_warp,
)


def test_names_are_put_in_application_order_and_bad_names_are_refused():
    assert validate_augmentation(None) == ()
    assert validate_augmentation("jitter") == ("jitter",)
    assert validate_augmentation(["jitter", "window_slice"]) == ("window_slice", "jitter")
    assert validate_augmentation("jitter+window_slice") == ("window_slice", "jitter")
    assert validate_augmentation("window_slice+window_warp") == ("window_warp", "window_slice")
    for bad in ("mixup", ["jitter", "jitter"], 3, "", "jitter+"):
        with pytest.raises(ValueError, match="augmentation"):
            validate_augmentation(bad)


def test_auto_augments_small_training_sets_only():
    assert resolve_augmentation("auto", 99) == DEFAULT_AUGMENTATION
    assert resolve_augmentation("auto", 100) is None
    # Short series (fewer than 32 steps: per-step tokens) are not window-sliced, only scaled and jittered.
    assert resolve_augmentation("auto", 99, min_length=32) == DEFAULT_AUGMENTATION
    assert resolve_augmentation("auto", 99, min_length=31) == "scaling+jitter"
    assert resolve_augmentation("auto", 100, min_length=10) is None
    assert resolve_augmentation("jitter", 5000) == "jitter" and resolve_augmentation(None, 10) is None
    # A model whose tokens come from a convolutional stem is not augmented by "auto"; an explicit choice stands.
    assert resolve_augmentation("auto", 99, min_length=32, conv_stem=64) is None
    assert resolve_augmentation("jitter", 99, conv_stem=64) == "jitter"
    assert validate_augmentation("auto") == ()


def test_window_slice_of_a_ramp_is_a_ramp_over_a_random_90_percent_window():
    torch.manual_seed(0)
    length = 101
    ramp = torch.arange(length, dtype=torch.float32)[None, :, None].repeat(64, 1, 1)  # (64, 101, 1)
    out = window_slice(ramp, torch.full((64,), length))[..., 0]
    keep = round(0.9 * length)
    slope = (keep - 1) / (length - 1)
    np.testing.assert_allclose(out[:, 1:] - out[:, :-1], slope, atol=1e-4)  # stretched, not shifted only
    starts = out[:, 0]
    assert torch.all(starts >= 0) and torch.all(starts <= length - keep)
    assert torch.allclose(starts, starts.round())  # windows start on a step
    assert len(set(starts.tolist())) > 3  # the window moves from case to case


def augment_padded_batch(name, lengths, seed):
    """(x, valid, out): a random padded batch augmented by `name`, checked to read nothing from the padding."""
    torch.manual_seed(seed)
    t = int(lengths.max())
    x = torch.randn(len(lengths), t, 2)
    valid = torch.arange(t)[None] < lengths[:, None]
    x[~valid] = 1e6  # anything read from padding would show
    out = SeriesAugmentation(name).train()(x, valid)
    assert torch.all(out[~valid] == 0)
    assert out[valid].abs().max() < 10
    return x, valid, out


def test_window_slice_reads_each_series_within_its_own_length_and_padding_stays_zero():
    lengths = torch.tensor([30, 12, 50])
    x, valid, _ = augment_padded_batch("window_slice", lengths, seed=1)
    # A full window (fraction 1) is the identity on the valid steps.
    same = window_slice(x, lengths, fraction=1.0)
    assert torch.allclose(same[valid], x[valid])


def slow_window_warp(series, start, width, factor):
    """One series warped step by step. The warped series lasts length - width + width * factor steps: time runs
    at 1 / factor inside [start, start + width * factor) and at 1 elsewhere. Each of the length output steps reads
    the warped series at its share of that duration, i.e. the original series (linearly interpolated) at the
    time the warp maps it back to."""
    length = len(series)
    duration = length - 1 - width + width * factor
    out = np.empty(length)
    for j in range(length):
        u = j * duration / (length - 1)
        if u < start:
            source = u
        elif u < start + width * factor:
            source = start + (u - start) / factor
        else:
            source = start + width + (u - start - width * factor)
        out[j] = np.interp(source, np.arange(length), series)
    return out


def test_window_warp_matches_a_step_by_step_reference():
    """Each case draws a window start and a factor; recover them by matching the reference on every candidate."""
    torch.manual_seed(4)
    length, n = 60, 16
    x = torch.cumsum(torch.randn(n, length, 1), dim=1)
    out = window_warp(x, torch.full((n,), length))[..., 0].numpy()
    width = round(0.1 * length)
    factors_seen = set()
    for i in range(n):
        series = x[i, :, 0].numpy()
        errors = {
            (start, factor): np.abs(slow_window_warp(series, start, width, factor) - out[i]).max()
            for start in range(length - width) for factor in (0.5, 2.0)
        }
        (start, factor), error = min(errors.items(), key=lambda item: item[1])
        assert error < 1e-4, (i, start, factor, error)
        factors_seen.add(factor)
    assert factors_seen == {0.5, 2.0}


def test_window_warp_stays_within_each_series_and_padding_stays_zero():
    lengths = torch.tensor([40, 33, 60])
    x, _, out = augment_padded_batch("window_warp", lengths, seed=5)
    # First and last valid steps are kept: the warp moves the inside of a series, not its ends.
    last = lengths - 1
    assert torch.allclose(out[:, 0], x[:, 0]) and torch.allclose(out[torch.arange(3), last], x[torch.arange(3), last])


def test_scaling_and_jitter_have_the_documented_sizes():
    torch.manual_seed(2)
    x = torch.ones(4000, 20, 3)
    scaled = SeriesAugmentation("scaling").train()(x)
    factors = scaled[:, 0, :]
    assert torch.allclose(scaled, factors[:, None, :].expand_as(scaled))  # one factor per case and channel
    assert abs(factors.mean().item() - 1) < 0.01 and abs(factors.std().item() - SCALING_STD) < 0.01
    noise = SeriesAugmentation("jitter").train()(x) - x
    assert abs(noise.std().item() - JITTER_STD) < 0.002 and abs(noise.mean().item()) < 0.002


def test_eval_mode_is_the_identity():
    x = torch.randn(5, 40, 2)
    assert torch.equal(SeriesAugmentation().eval()(x), x)


@pytest.mark.parametrize("make", [
    lambda **kw: EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, **kw),
    lambda **kw: BackboneClassifier(backbone="resnet", d_model=8, n_blocks=1, **kw),
])
def test_estimators_train_with_augmentation_and_predict_without(make):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 1, 40)).astype(np.float32)
    y = np.array(["a", "b"] * 12)
    kw = dict(max_epochs=3, min_steps=0, batch_size=8, random_state=0)
    plain = make(augmentation=None, **kw).fit(X, y)
    augmented = make(**kw).fit(X, y)  # the default "auto": all three on 24 cases
    assert augmented.get_params()["augmentation"] == "auto" and augmented.augmentation_ == DEFAULT_AUGMENTATION
    # The batches differ, so training does; prediction never augments: the fitted network with its
    # augmentation module removed gives the same probabilities.
    assert plain.history_.train_loss != augmented.history_.train_loss
    assert augmented.module_.augment is not None
    proba = augmented.predict_proba(X)
    augmented.module_.augment = None
    np.testing.assert_array_equal(augmented.predict_proba(X), proba)
    with pytest.raises(ValueError, match="augmentation"):
        make(augmentation="cutout", **kw).fit(X, y)


def test_auto_is_resolved_on_the_training_cases_of_the_fit():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 1, 16)).astype(np.float32)
    y = np.array(["a", "b"] * 50)
    kw = dict(d_model=8, n_heads=2, n_blocks=1, max_epochs=1, min_steps=0, random_state=0)
    assert EADCTransformerClassifier(**kw).fit(X, y).augmentation_ is None
    small = EADCTransformerClassifier(**kw).fit(X[:40], y[:40])  # 16-step series: no window slicing
    assert small.augmentation_ == "scaling+jitter" and small.module_.augment is not None
    assert small.module_.augment.names == ("scaling", "jitter")
    long_enough = np.concatenate([X[:40], X[:40]], axis=2)  # 32 steps: patch tokens, and from 32 cases a stem
    with_stem = EADCTransformerClassifier(**kw).fit(long_enough, y[:40])
    assert with_stem.conv_stem_ == 64 and with_stem.augmentation_ is None and with_stem.module_.augment is None
    no_stem = dict(kw, conv_stem=None)
    assert EADCTransformerClassifier(**no_stem).fit(long_enough, y[:40]).augmentation_ == DEFAULT_AUGMENTATION
    # Unequal lengths: the shortest training series decides.
    mixed = [c[:, :31] if i == 0 else np.concatenate([c, c], axis=1) for i, c in enumerate(X[:40])]
    assert EADCTransformerClassifier(**no_stem).fit(mixed, y[:40]).augmentation_ == "scaling+jitter"
