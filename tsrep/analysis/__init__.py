"""Analysis of learned representations (Wang et al., "Convolution-enhanced Evolving Attention
Networks", IEEE TPAMI 2023, Sec. 5): AvgWCD, t-SNE pictures, attention maps."""

from tsrep.analysis.representations import (
    attention_maps,
    avg_wcd,
    plot_attention_maps,
    plot_tsne,
    representations,
)

__all__ = ["attention_maps", "avg_wcd", "plot_attention_maps", "plot_tsne", "representations"]
