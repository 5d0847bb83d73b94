"""AvgWCD, t-SNE pictures coloured by class and per-layer attention maps.

AvgWCD is Eq. 13 and the t-SNE view Figure 4 of Wang et al., "Convolution-enhanced Evolving Attention Networks",
IEEE TPAMI 2023.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tsrep.estimators._checks import prepare_series, resolve_device
from tsrep.nn.pooling import SequencePooling
from tsrep.representation import _Pooled
from tsrep.training import predict_outputs


def avg_wcd(Z, y) -> float:
    """Average within-class distance, Eq. 13: (1/N) sum_i sum_{q in C_i} ||q - m_i||_2, m_i the mean of class i.

    Z: (N, d) representations (pooled vectors, or their t-SNE embedding); y: (N,) labels. Smaller is
    tighter. The paper does not say whether it measured the d-dimensional vectors or the 2-D t-SNE
    points; this function measures whatever it is given.
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y)
    if Z.ndim != 2 or len(Z) != len(y) or len(Z) == 0:
        raise ValueError(f"need Z of shape (N, d) and N labels, got Z {Z.shape} and {y.shape[0]} labels")
    total = 0.0
    for label in np.unique(y):
        members = Z[y == label]
        total += np.linalg.norm(members - members.mean(axis=0), axis=1).sum()
    return float(total / len(Z))


def _encoder_parts(model):
    """(encoder, pooling, standardizer, batch_size, device) of a fitted TSRepEncoder or tsrep estimator."""
    if hasattr(model, "encoder_"):  # TSRepEncoder
        pool = SequencePooling(model.config_.get("pooling", "mean"), model.config_["max_len"])
        return model.encoder_, pool, model.standardizer_, model.batch_size, resolve_device(model.device)
    if hasattr(model, "module_"):  # EADCTransformerClassifier / Regressor
        return model.module_.encoder, model.module_.pool, model.standardizer_, model.batch_size, resolve_device(model.device)
    raise TypeError(f"need a fitted TSRepEncoder or tsrep estimator, got {type(model).__name__}")


def representations(model, X) -> np.ndarray:
    """Pooled encoder output (N, d) of a fitted TSRepEncoder or EADCTransformer classifier/regressor."""
    if hasattr(model, "encoder_"):
        return model.transform(X)

    encoder, pool, standardizer, batch_size, device = _encoder_parts(model)
    data = prepare_series(X, standardizer)
    module = _Pooled(encoder, pool).to(device)
    was_training = module.training
    out = predict_outputs(module, data, batch_size, device).double().numpy()
    module.train(was_training)
    return out


def plot_tsne(Z, y, path=None, title: str | None = None, random_state=0, ax=None):
    """2-D t-SNE of representations Z coloured by class; AvgWCD of Z and of the embedding in the title.

    Returns (figure, embedding (N, 2)). Writes a PNG when `path` is given.
    """
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y)
    perplexity = float(min(30.0, max(2.0, (len(Z) - 1) / 3)))
    emb = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=random_state).fit_transform(Z)
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 4.5))
    else:
        fig = ax.figure
    for label in np.unique(y):
        sel = y == label
        ax.scatter(emb[sel, 0], emb[sel, 1], s=14, label=str(label), alpha=0.8)
    ax.legend(fontsize=7, markerscale=1.2, loc="best")
    ax.set_xticks([])
    ax.set_yticks([])
    heading = f"AvgWCD {avg_wcd(Z, y):.3g} (d={Z.shape[1]}), {avg_wcd(emb, y):.3g} (t-SNE)"
    ax.set_title(f"{title}\n{heading}" if title else heading, fontsize=9)
    if path is not None:
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    return fig, emb


@torch.no_grad()
def attention_maps(model, x) -> list[np.ndarray]:
    """Attention weights of every attention layer for ONE series -> list over layers of (heads, T, T).

    model: a fitted TSRepEncoder or tsrep estimator; x: one series (C, T) (or a (1, C, T) array).
    The maps are the softmax of the logits each layer returns with need_logits=True (after the
    evolving-attention step when alpha or beta > 0), with padded keys excluded. Layers with p=0
    (no attention) are skipped. Collected with forward hooks; the model is left unchanged.
    """

    encoder, _, standardizer, _, device = _encoder_parts(model)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 3:
        x = x[0]
    if x.ndim == 1:
        x = x[None]
    data = prepare_series([x], standardizer)
    attention_modules = [layer.attention for block in encoder.blocks for layer in block.layers
                         if layer.attention is not None]
    logits: list[torch.Tensor] = []

    def force_logits(module, args, kwargs):
        args = list(args)
        if len(args) >= 4:
            args[3] = True
        else:
            kwargs["need_logits"] = True
        return tuple(args), kwargs

    def keep(module, args, output):
        logits.append(output[-1].detach().float().cpu())

    handles = []
    for m in attention_modules:
        handles.append(m.register_forward_pre_hook(force_logits, with_kwargs=True))
        handles.append(m.register_forward_hook(keep))
    was_training = encoder.training
    try:
        encoder.eval().to(device)
        encoder(data.values.to(device), None)
    finally:
        for h in handles:
            h.remove()
        encoder.train(was_training)
    return [torch.softmax(lg[0], dim=-1).numpy() for lg in logits if lg is not None]


def plot_attention_maps(maps: list[np.ndarray], path=None, max_heads: int = 4, title: str | None = None):
    """Grid of attention maps: one row per layer (the evolving maps, top to bottom), one column per head."""
    import matplotlib.pyplot as plt

    if not maps:
        raise ValueError("no attention maps: the model has no attention layer (p=0)")
    n_heads = min(max_heads, maps[0].shape[0])
    fig, axes = plt.subplots(len(maps), n_heads, figsize=(2.2 * n_heads, 2.2 * len(maps)), squeeze=False)
    for i, layer_maps in enumerate(maps):
        for j in range(n_heads):
            ax = axes[i, j]
            ax.imshow(layer_maps[j], cmap="viridis", aspect="auto")
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(f"layer {i + 1}", fontsize=8)
            if i == 0:
                ax.set_title(f"head {j + 1}", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=110)
    return fig
