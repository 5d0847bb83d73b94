"""Analysis of learned representations (paper 002, Sec. 5): AvgWCD, t-SNE pictures, attention maps."""

from tsrep.analysis.representations import (
    attention_maps,
    avg_wcd,
    plot_attention_maps,
    plot_tsne,
    representations,
)

__all__ = ["attention_maps", "avg_wcd", "plot_attention_maps", "plot_tsne", "representations"]
