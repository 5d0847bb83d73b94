"""
Attention maps across layers
============================

Evolving attention carries each layer's attention logits to the next layer, mixes them with that layer's own
logits (weight ``alpha``) and convolves the result (weight ``beta``), so the maps change gradually from layer to
layer instead of being learned independently. :func:`tsrep.analysis.attention_maps` collects the softmax of the
evolved logits of every attention layer for one series; :func:`tsrep.analysis.plot_attention_maps` draws them,
one row per layer and one column per head.

A tiny EA-DC-Transformer is trained for eight epochs (at a high learning rate) on GunPoint. Its series have 150
steps; the default ``patch_len="auto"`` (at most 32 tokens for a classifier) turns them into overlapping patches of
10 steps every 5 steps, so the maps are 30 x 30.
"""

from aeon.datasets import load_gunpoint

from tsrep import EADCTransformerClassifier
from tsrep.analysis import attention_maps, plot_attention_maps

X_train, y_train = load_gunpoint(split="train")
X_test, y_test = load_gunpoint(split="test")
clf = EADCTransformerClassifier(d_model=16, n_heads=2, p=0.5, n_blocks=2, max_epochs=8, min_steps=0,
                                batch_size=8, lr=0.01, random_state=0)
clf.fit(X_train, y_train)
print(f"test accuracy after 8 epochs: {clf.score(X_test, y_test):.3f}; tokens per series: "
      f"patches of {clf.patch_len_} steps every {clf.patch_stride_}")

maps = attention_maps(clf, X_test[0])
print([m.shape for m in maps])  # one (heads, tokens, tokens) array per attention layer
fig = plot_attention_maps(maps, title="GunPoint, first test series: rows are layers 1-4, columns heads")
