"""Networks assembled from tsrep.nn."""

from tsrep.backbones.dc_transformer import DCTransformerBlock, DCTransformerEncoder, DCTransformerLayer, split_width
from tsrep.backbones.heads import SeriesModel
from tsrep.backbones.causal_cnn import CausalCNNEncoder
from tsrep.backbones.recurrent import RecurrentEncoder
from tsrep.backbones.resnet import ResNetEncoder
from tsrep.backbones.transformer import TSTEncoder

__all__ = [
    "DCTransformerBlock", "DCTransformerEncoder", "DCTransformerLayer", "SeriesModel", "split_width",
    "CausalCNNEncoder", "RecurrentEncoder", "ResNetEncoder", "TSTEncoder",
]
