"""Networks assembled from tsrep.nn."""

from tsrep.backbones.config import DCTransformerConfig, split_width
from tsrep.backbones.dc_transformer import DCTransformerBlock, DCTransformerEncoder, DCTransformerLayer
from tsrep.backbones.baselines import baseline_names, register_baseline
from tsrep.backbones.heads import SeriesModel
from tsrep.backbones.causal_cnn import CausalCNNEncoder
from tsrep.backbones.recurrent import RecurrentEncoder
from tsrep.backbones.resnet import ResNetEncoder
from tsrep.backbones.seq2seq import EATransformerSeq2Seq
from tsrep.backbones.text import EATextClassifier, EATextEncoder, EATextOutput, bundled_minilm_dir
from tsrep.backbones.transformer import TSTEncoder
from tsrep.backbones.vision import EAViT, PatchEmbedding, ViTLayer

__all__ = [
    "DCTransformerBlock", "DCTransformerConfig", "DCTransformerEncoder", "DCTransformerLayer", "SeriesModel", "split_width",
    "CausalCNNEncoder", "RecurrentEncoder", "ResNetEncoder", "TSTEncoder",
    "baseline_names", "register_baseline",
    "EATransformerSeq2Seq",
    "EATextClassifier", "EATextEncoder", "EATextOutput", "bundled_minilm_dir",
    "EAViT", "PatchEmbedding", "ViTLayer",
]
