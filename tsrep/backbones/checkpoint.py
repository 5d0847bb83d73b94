"""Encoder checkpoints: a DC-Transformer encoder with the standardisation it was trained on, in one tsrep model file.

The file (tsrep._serialization) is ONE safetensors file whose tensors are the encoder's weights
(``encoder.<name>``) and the per-channel standardisation fitted on the pretraining data (``standardizer.mean`` /
``standardizer.std``, float64), and whose metadata holds JSON of the encoder architecture (``config_``:
DCTransformerEncoder keyword arguments, including ``in_channels`` and ``max_len``, and the preprocessing,
``scaling`` and ``pooling``), the writer's parameters and its loss history. Nothing in it is pickled, so nothing in
it can run; a file of any other kind is refused with a ValueError, never unpickled. TSRepEncoder
(tsrep.representation) writes them; the estimators start from one with ``pretrained_encoder=path``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tsrep._serialization import check_regular_file, check_standardization, from_json, prefixed, read_model_file
from tsrep._serialization import to_json, write_model_file
from tsrep.backbones.config import DCTransformerConfig
from tsrep.backbones.dc_transformer import DCTransformerEncoder
from tsrep.data import ChannelStandardizer

__all__ = ["encoder_from_config", "load_encoder", "save_encoder"]


#: Configuration keys an encoder checkpoint must hold: the shape of its input and every field of the network.
REQUIRED_KEYS = ("in_channels", "max_len", *DCTransformerConfig.names())


def encoder_from_config(config: dict, **cost_options) -> DCTransformerEncoder:
    """The encoder of a checkpoint's configuration; cost_options: checkpointing, autocast_dtype (not stored)."""
    return DCTransformerEncoder(
        config["in_channels"], config["max_len"], DCTransformerConfig.from_params(config), **cost_options
    )


def check_checkpoint_contents(path, config, mean, std) -> None:
    """ValueError naming what an encoder checkpoint lacks or holds wrongly: configuration keys, and a
    standardisation of one finite mean and one positive finite std per channel (a NaN there would
    turn every input into NaN, and the model would answer from the biases alone)."""
    where = f"encoder checkpoint {str(path)!r}"
    if not isinstance(config, dict):
        raise ValueError(f"{where} is corrupt: its configuration is not a mapping")
    missing = [k for k in REQUIRED_KEYS if k not in config]
    if missing:
        raise ValueError(f"{where} is incomplete: its configuration lacks {', '.join(missing)}")
    check_standardization(where, mean, std, config["in_channels"], network="encoder")


def save_encoder(path, config: dict, encoder: torch.nn.Module, standardizer: ChannelStandardizer,
                 document: dict | None = None) -> Path:
    """Write an encoder checkpoint (see module docstring), atomically; returns the path.

    document: more of the JSON document (the TSRepEncoder's parameters and fitted metadata)."""
    document = dict(document or {})
    document.setdefault("estimator", "TSRepEncoder")
    fitted = dict(document.get("fitted", {}))
    fitted["config_"] = to_json(config, "config_")
    document["fitted"] = fitted
    tensors = {f"encoder.{k}": v for k, v in encoder.state_dict().items()}
    tensors["standardizer.mean"] = torch.as_tensor(np.asarray(standardizer.mean_, dtype=np.float64))
    tensors["standardizer.std"] = torch.as_tensor(np.asarray(standardizer.std_, dtype=np.float64))
    return write_model_file(path, document, tensors)


def _read_encoder(path: Path):
    """(config, weights, mean, std, document) of an encoder checkpoint."""
    document, tensors = read_model_file(path)
    if document.get("estimator") != "TSRepEncoder":
        raise ValueError(
            f"{str(path)!r} holds a {document.get('estimator')!r}, not a tsrep encoder checkpoint "
            "(TSRepEncoder.save writes those)"
        )
    try:
        config = from_json(document["fitted"]["config_"], "config_")
        mean = tensors["standardizer.mean"].numpy()
        std = tensors["standardizer.std"].numpy()
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"encoder checkpoint {str(path)!r} is incomplete or corrupt: {exc!r}") from exc
    return config, prefixed(tensors, "encoder."), mean, std, document


def load_encoder(path, n_channels: int | None = None, with_document: bool = False):
    """Read an encoder checkpoint safely -> (config dict, encoder module with its weights, standardizer).

    n_channels: the channel count of the data it will see; a mismatch is a ValueError.
    with_document: also return the JSON document of the file.
    """
    path = check_regular_file(path, "checkpoint", "a tsrep encoder checkpoint (a file written by save)")
    config, weights, mean, std, document = _read_encoder(path)
    if not isinstance(config, dict) or "in_channels" not in config:
        raise ValueError(f"encoder checkpoint {str(path)!r} is incomplete or corrupt: no encoder configuration")
    check_checkpoint_contents(path, config, mean, std)
    if n_channels is not None and int(config["in_channels"]) != int(n_channels):
        raise ValueError(
            f"encoder checkpoint {str(path)!r} was pretrained on {config['in_channels']} channel(s), "
            f"but X has {n_channels}"
        )
    standardizer = ChannelStandardizer(config.get("scaling", "standard"))
    standardizer.mean_, standardizer.std_ = mean, std
    try:
        with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
            encoder = encoder_from_config(config)
        encoder.load_state_dict(weights)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"encoder checkpoint {str(path)!r} does not match its configuration: {exc}") from exc
    return (config, encoder, standardizer, document) if with_document else (config, encoder, standardizer)
