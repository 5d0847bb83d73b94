"""The models of the time-series tables of Wang et al., "Convolution-enhanced Evolving Attention Networks"
(IEEE TPAMI 2023) by name: ``get_model("gru", "classification", d_model=128)``.

Every model is an aeon estimator trained by the same harness (tsrep.estimators): same input
handling, pooling, head and training recipe (optimiser, schedule, step budget, validation rule).
Baselines (Tables I-II) are BackboneClassifier/Regressor; the DC-Transformer, the
EA-DC-Transformer and the ablations of Tables III-IV are EADCTransformerClassifier/Regressor with
the parameters that define them fixed:

===================== ==================================== =========================================
name                  model (paper's column)               defining parameters
===================== ==================================== =========================================
lstm                  LSTM                                 backbone="lstm"
gru                   GRU                                  backbone="gru"
resnet                ResNet (Wang et al. 2017)            backbone="resnet"
dilated-conv          Dilated Conv (T-Loss encoder)        backbone="dilated-conv"
transformer           Transformer (TST)                    backbone="transformer"
dc-transformer        DC-T                                 alpha=0, beta=0
ea-dc-transformer     EA-DC-T                              (alpha, beta free: default 0.5, 0.5)
ea-dc-t-no-conv       w/o Convolution (Tables III-IV)      beta=0
ea-dc-t-no-skip       w/o Skip Connection                  alpha=0
ea-dc-t-1x1           with 1x1 Convolution                 attn_kernel_size=1
ea-dc-t-5x5           with 5x5 Convolution                 attn_kernel_size=5
ea-dc-t-interacting   interacting heads (Li and Luo 2022)  attention="interacting"
ea-dc-t-int-summed    interacting heads, Algorithm 1       attention="interacting-summed"
ea-dc-t-crossed       crossed co-attn. (Li and Jiang 2020) attention="crossed"
ea-dc-t-deacon-direct DEACON direct (Ampazis et al. 2024)  head_mixing="deacon-direct" (deacon_m free)
ea-dc-t-deacon-avg    DEACON average                       head_mixing="deacon-average"
ea-dc-t-deacon-nonlin DEACON non-linear                    head_mixing="deacon-nonlinear"
===================== ==================================== =========================================

Names are case-insensitive; "ea-dc-t", "dc-t", "tst", "t-loss", "dilated_conv" and the like are
accepted. Passing a value for a defining parameter that contradicts it (``get_model("dc-transformer",
..., alpha=0.5)``) is an error rather than a silently different model.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

TASKS = ("classification", "regression")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    label: str  # column header in the tables
    family: str  # "backbone" or "eadc"
    fixed: dict = field(default_factory=dict)
    description: str = ""


MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        ModelSpec("lstm", "LSTM", "backbone", {"backbone": "lstm"}, "stacked LSTM layers"),
        ModelSpec("gru", "GRU", "backbone", {"backbone": "gru"}, "stacked GRU layers"),
        ModelSpec("resnet", "ResNet", "backbone", {"backbone": "resnet"}, "ResNet of Wang et al. 2017"),
        ModelSpec(
            "dilated-conv", "Dilated Conv", "backbone", {"backbone": "dilated-conv"}, "T-Loss causal dilated CNN"
        ),
        ModelSpec("transformer", "Transformer", "backbone", {"backbone": "transformer"}, "TST encoder"),
        ModelSpec("dc-transformer", "DC-T", "eadc", {"alpha": 0.0, "beta": 0.0}, "DC-Transformer (no evolution)"),
        ModelSpec("ea-dc-transformer", "EA-DC-T", "eadc", {}, "EA-DC-Transformer"),
        ModelSpec("ea-dc-t-no-conv", "w/o Conv", "eadc", {"beta": 0.0}, "EA-DC-T without map convolution"),
        ModelSpec("ea-dc-t-no-skip", "w/o Skip", "eadc", {"alpha": 0.0}, "EA-DC-T without the map skip link"),
        ModelSpec("ea-dc-t-1x1", "1x1 Conv", "eadc", {"attn_kernel_size": 1}, "EA-DC-T with 1x1 map kernels"),
        ModelSpec("ea-dc-t-5x5", "5x5 Conv", "eadc", {"attn_kernel_size": 5}, "EA-DC-T with 5x5 map kernels"),
        # Attention variants: DEACON, interacting heads, crossed co-attention (tsrep.nn.attention_kinds); alpha, beta stay free.
        ModelSpec("ea-dc-t-interacting", "Interacting", "eadc", {"attention": "interacting"}, "all h x h head pairs"),
        ModelSpec(
            "ea-dc-t-int-summed", "Interacting (sum)", "eadc", {"attention": "interacting-summed"},
            "interacting heads, summed logits (Algorithm 1)",
        ),
        ModelSpec("ea-dc-t-crossed", "Crossed", "eadc", {"attention": "crossed"}, "crossed co-attention"),
        ModelSpec(
            "ea-dc-t-deacon-direct", "DEACON direct", "eadc", {"head_mixing": "deacon-direct"}, "PCA layer over heads"
        ),
        ModelSpec("ea-dc-t-deacon-avg", "DEACON avg", "eadc", {"head_mixing": "deacon-average"}, "DEACON, average form"),
        ModelSpec(
            "ea-dc-t-deacon-nonlin", "DEACON non-lin", "eadc", {"head_mixing": "deacon-nonlinear"},
            "DEACON, non-linear form",
        ),
    )
}

#: The seven models of Tables I-II, in the paper's column order.
PAPER_MODELS = ("lstm", "gru", "resnet", "dilated-conv", "transformer", "dc-transformer", "ea-dc-transformer")
#: The ablations of Tables III-IV.
ABLATIONS = ("ea-dc-t-no-conv", "ea-dc-t-no-skip", "ea-dc-t-1x1", "ea-dc-t-5x5")
#: Attention variants of the other papers (DEACON, interacting heads, crossed co-attention).
ATTENTION_VARIANTS = (
    "ea-dc-t-interacting", "ea-dc-t-int-summed", "ea-dc-t-crossed",
    "ea-dc-t-deacon-direct", "ea-dc-t-deacon-avg", "ea-dc-t-deacon-nonlin",
)

_ALIASES = {
    "ea-dc-t": "ea-dc-transformer",
    "eadct": "ea-dc-transformer",
    "eadctransformer": "ea-dc-transformer",
    "dc-t": "dc-transformer",
    "dct": "dc-transformer",
    "dctransformer": "dc-transformer",
    "tst": "transformer",
    "t-loss": "dilated-conv",
    "tloss": "dilated-conv",
    "dilatedconv": "dilated-conv",
    "dilatedconvolution": "dilated-conv",
    "eadctnoconv": "ea-dc-t-no-conv",
    "eadctnoskip": "ea-dc-t-no-skip",
    "eadct1x1": "ea-dc-t-1x1",
    "eadct5x5": "ea-dc-t-5x5",
}


def resolve_name(name: str) -> str:
    """The registry name of `name`; ValueError with close names when unknown."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"model name must be a non-empty string, got {name!r}")
    key = name.strip().lower()
    if key in MODELS:
        return key
    squashed = key.replace("-", "").replace("_", "").replace(" ", "")
    for candidate in (key, squashed):
        if candidate in _ALIASES:
            return _ALIASES[candidate]
    for model in MODELS:
        if model.replace("-", "") == squashed:
            return model
    close = difflib.get_close_matches(key, list(MODELS) + list(_ALIASES), n=2, cutoff=0.5)
    close = list(dict.fromkeys(_ALIASES.get(c, c) for c in close))
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise ValueError(f"unknown model {name!r}{hint}; known: {', '.join(MODELS)}")


def model_spec(name: str) -> ModelSpec:
    return MODELS[resolve_name(name)]


def model_class(name: str, task: str):
    """The estimator class of a model for a task."""
    from tsrep.estimators import (
        BackboneClassifier,
        BackboneRegressor,
        EADCTransformerClassifier,
        EADCTransformerRegressor,
    )

    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    spec = model_spec(name)
    classes = {
        ("backbone", "classification"): BackboneClassifier,
        ("backbone", "regression"): BackboneRegressor,
        ("eadc", "classification"): EADCTransformerClassifier,
        ("eadc", "regression"): EADCTransformerRegressor,
    }
    return classes[spec.family, task]


def get_model(name: str, task: str, **params):
    """An unfitted aeon estimator for model `name` and task "classification" or "regression".

    params are constructor parameters; those the model does not take raise ValueError naming them
    (e.g. alpha for an LSTM), as does a value that contradicts a defining parameter.

    Examples
    --------
    >>> from tsrep.models import get_model
    >>> model = get_model("dc-transformer", "classification", d_model=32)
    >>> type(model).__name__, model.alpha, model.beta, model.d_model
    ('EADCTransformerClassifier', 0.0, 0.0, 32)
    >>> type(get_model("gru", "regression")).__name__
    'BackboneRegressor'
    """
    spec = model_spec(name)
    cls = model_class(spec.name, task)
    for key, value in spec.fixed.items():
        if key in params and params[key] != value:
            raise ValueError(
                f"model {spec.name!r} is defined by {key}={value!r}; got {key}={params[key]!r} "
                f"(use another model name for another {key})"
            )
    accepted = set(cls._get_param_names())
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ValueError(
            f"model {spec.name!r} ({cls.__name__}) takes no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters: {', '.join(sorted(accepted))}"
        )
    return cls(**{**params, **spec.fixed})


def accepted_params(name: str, task: str = "classification") -> set[str]:
    """Constructor parameters of a model (every model takes the same ones for both tasks)."""
    return set(model_class(name, task)._get_param_names()) - set(model_spec(name).fixed)
