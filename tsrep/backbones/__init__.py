"""Networks assembled from tsrep.nn."""

from tsrep.backbones.dc_transformer import DCTransformerBlock, DCTransformerEncoder, DCTransformerLayer, split_width
from tsrep.backbones.heads import SeriesModel

__all__ = ["DCTransformerBlock", "DCTransformerEncoder", "DCTransformerLayer", "SeriesModel", "split_width"]
