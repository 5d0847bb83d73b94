"""Networks assembled from tsrep.nn."""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): importing one backbone (or its config) does not import the text and vision ones.
__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(["DCTransformerConfig", "split_width"], "tsrep.backbones.config"),
    **dict.fromkeys(["DCTransformerBlock", "DCTransformerEncoder", "DCTransformerLayer"],
                    "tsrep.backbones.dc_transformer"),
    **dict.fromkeys(["baseline_names", "register_baseline"], "tsrep.backbones.baselines"),
    "SeriesModel": "tsrep.backbones.heads",
    "CausalCNNEncoder": "tsrep.backbones.causal_cnn",
    "RecurrentEncoder": "tsrep.backbones.recurrent",
    "ResNetEncoder": "tsrep.backbones.resnet",
    "EATransformerSeq2Seq": "tsrep.backbones.seq2seq",
    **dict.fromkeys(["EATextClassificationModel", "EATextEncoder", "EATextOutput", "bundled_minilm_dir"],
                    "tsrep.backbones.text"),
    "TSTEncoder": "tsrep.backbones.transformer",
    **dict.fromkeys(["EAViT", "PatchEmbedding", "ViTLayer"], "tsrep.backbones.vision"),
})

__all__ = [
    "DCTransformerBlock", "DCTransformerConfig", "DCTransformerEncoder", "DCTransformerLayer", "SeriesModel", "split_width",
    "CausalCNNEncoder", "RecurrentEncoder", "ResNetEncoder", "TSTEncoder",
    "baseline_names", "register_baseline",
    "EATransformerSeq2Seq",
    "EATextClassificationModel", "EATextEncoder", "EATextOutput", "bundled_minilm_dir",
    "EAViT", "PatchEmbedding", "ViTLayer",
]
