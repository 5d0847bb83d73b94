"""AvgWCD (paper 002, Eq. 13), t-SNE and attention-map pictures."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from aeon.datasets import load_basic_motions, load_japanese_vowels

from tsrep import EADCTransformerClassifier, TSRepEncoder
from tsrep.analysis import attention_maps, avg_wcd, plot_attention_maps, plot_tsne, representations

TINY = dict(d_model=16, n_blocks=1, n_heads=2, p=0.5, batch_size=16, device="cpu", random_state=0)


def test_avg_wcd_matches_hand_computation():
    Z = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0], [10.0, 14.0], [10.0, 12.0]])
    y = np.array(["a", "a", "b", "b", "b"])
    # class a: centre (1, 0), distances 1, 1; class b: centre (10, 12), distances 2, 2, 0
    assert avg_wcd(Z, y) == pytest.approx(6 / 5)
    assert avg_wcd(Z * 3, y) == pytest.approx(18 / 5)
    with pytest.raises(ValueError):
        avg_wcd(Z[:, 0], y)


def test_tsne_and_attention_pictures_are_written(tmp_path):
    X, y = load_basic_motions(split="train")
    enc = TSRepEncoder(pretrain_epochs=2, **TINY).fit(X)
    Z = enc.transform(X)
    fig, emb = plot_tsne(Z, y, tmp_path / "tsne.png", title="BasicMotions")
    assert emb.shape == (len(X), 2) and (tmp_path / "tsne.png").stat().st_size > 1000
    maps = attention_maps(enc, X[0])
    assert len(maps) == 2  # one block of two layers, each with attention
    for m in maps:
        assert m.shape == (2, 100, 100)
        np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-5)
    plot_attention_maps(maps, tmp_path / "attn.png")
    assert (tmp_path / "attn.png").stat().st_size > 1000


def test_representations_of_a_fitted_classifier_and_unequal_length_attention():
    X, y = load_japanese_vowels(split="train")
    clf = EADCTransformerClassifier(max_epochs=1, min_steps=0, **TINY).fit(X[:60], y[:60])
    Z = representations(clf, X[60:80])
    assert Z.shape == (20, 16)
    maps = attention_maps(clf, X[61])
    assert maps[0].shape == (2, X[61].shape[1], X[61].shape[1])
