"""The EA-DC-Transformer's hyperparameters, written once (nanoGPT's ``GPTConfig`` as the model).

:class:`DCTransformerConfig` is the single source of the backbone's names, defaults and accepted
values. The encoder (tsrep.backbones.DCTransformerEncoder) is built from it; the estimators
(EADCTransformerClassifier / Regressor) and TSRepEncoder take its fields as their own keyword
parameters (their ``__init__`` is generated from it, so the three cannot drift); encoder checkpoints
store it as a dict (:meth:`DCTransformerConfig.to_dict`, read back by :meth:`from_dict`); the DEACON
defaults come from tsrep.nn.deacon.

A config is valid by construction: ``DCTransformerConfig(...)`` checks every field against its
declared constraint (scikit-learn's parameter-validation objects) and the rules between fields
(``n_heads`` divides the attention width, the attention kind and its options), and raises a
ValueError naming the field. Modules built from a config do not check again.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions, make_constraint
from sklearn.utils._param_validation import validate_parameter_constraints

from tsrep.nn.attention_kinds import validate_attention_options
from tsrep.nn.deacon import DEACON_DP, DEACON_INNER_STEPS, DEACON_XI, HEAD_MIXINGS
from tsrep.nn.norm import NORMS

__all__ = [
    "DCTransformerConfig", "check_constraints", "non_negative_int", "positive_int", "split_width", "unit_interval",
]


def split_width(d_model: int, p: float) -> tuple[int, int]:
    """Channels of the attention branch and of the convolution branch for fraction p."""
    d_attn = int(round(p * d_model))
    return d_attn, d_model - d_attn


def positive_int() -> Interval:
    """The constraint of an int >= 1 (scikit-learn's Interval kind)."""
    return Interval(Integral, 1, None, closed="left")


def non_negative_int() -> Interval:
    """The constraint of an int >= 0."""
    return Interval(Integral, 0, None, closed="left")


def unit_interval(closed: str) -> Interval:
    """The constraint of a real in [0, 1], `closed` at "both", "left", "right" or "neither" end."""
    return Interval(Real, 0, 1, closed=closed)


def _hyperparameter(default, *constraints, doc: str, type_name: str | None = None):
    """A config field: its default, the constraints its values must meet (scikit-learn's kinds) and its
    documentation, from which the estimators' Parameters sections are written (`type_name`: the type
    shown there when the constraints do not say it well)."""
    return field(default=default, metadata={"constraints": list(constraints), "doc": doc, "type_name": type_name})


def check_constraints(constraints: dict, params: dict, owner: str) -> None:
    """scikit-learn's ``validate_parameter_constraints`` (InvalidParameterError naming the parameter and
    `owner`), except that a bool passes only a "boolean" or "verbose" constraint: scikit-learn would let
    True through as the integer 1."""
    for param, value in params.items():
        accepted = constraints.get(param)
        takes_bool = isinstance(accepted, list) and {"boolean", "verbose"} & set(map(str, accepted))
        if isinstance(value, bool) and isinstance(accepted, list) and not takes_bool:
            described = " or ".join(str(make_constraint(c)) for c in accepted)
            raise InvalidParameterError(
                f"The {param!r} parameter of {owner} must be {described}. Got {value!r} instead."
            )
    validate_parameter_constraints(constraints, params, caller_name=owner)


@dataclass(frozen=True)
class DCTransformerConfig:
    """Hyperparameters of the EA-DC-Transformer backbone (Wang et al., "Convolution-enhanced Evolving
    Attention Networks", IEEE TPAMI 2023, Sec. 3.3). Each field's documentation is its metadata's
    "doc": the estimators' Parameters sections are written from it (tsrep.estimators._parameters).
    """

    d_model: int = _hyperparameter(64, positive_int(), doc="Hidden width d (paper's grid: 64, 128).")
    n_blocks: int = _hyperparameter(
        3, positive_int(), doc="Blocks of two layers; dilation doubles per block (paper's grid: 2..5)."
    )
    n_heads: int = _hyperparameter(
        4, positive_int(),
        doc="Attention heads; must divide the attention width round(p * d_model). 4 heads of 4 channels at the "
            "default width train 2.4x faster than the paper's 8 heads of 2 channels, with the same accuracy on "
            "ArrowHead, GunPoint and ItalyPowerDemand (UCR archive, seed 0).",
    )
    p: float = _hyperparameter(
        0.25, unit_interval("both"),
        doc="Fraction of channels given to attention (0: dilated convolution only, 1: EA-Transformer).",
    )
    alpha: float = _hyperparameter(
        0.5, unit_interval("both"),
        doc="Weight of the previous layer's attention logits in the evolving step (Eq. 1); alpha = beta = 0: "
            "plain DC-Transformer.",
    )
    beta: float = _hyperparameter(
        0.5, unit_interval("both"), doc="Weight of the convolved attention maps in the evolving step (Eq. 1)."
    )
    attn_kernel_size: int = _hyperparameter(  # odd: check_combinations
        3, positive_int(), doc="Kernel of the attention-map convolution (odd)."
    )
    attention: str = field(default="evolving", metadata={  # the registry's names: check_combinations
        "constraints": "no_validation", "type_name": "str",
        "doc": "Attention kind of every layer (tsrep.nn.attention_kinds): \"evolving\": multi-head attention with "
               "the evolving step of alpha, beta (Wang et al. 2023); \"vanilla\": plain multi-head attention, "
               "alpha and beta are not used; \"interacting\": every query head with every key head, h*h maps (Li "
               "and Luo 2022, Eq. 11-12); \"interacting-summed\": the h maps of a key head summed before one "
               "softmax (its Algorithm 1); \"crossed\": crossed co-attention, two branches with queries from the "
               "other branch and independently corrupted inputs in training (Li and Jiang 2020; twice the "
               "attention parameters). The interacting and crossed kinds evolve their maps when alpha or beta > 0 "
               "(over h*h channels for \"interacting\"). Fit warns when an interacting n_heads exceeds the "
               "paper's h_max = d / n (Eq. 13; d: attention width, n: mean training length), and keeps n_heads. "
               "Kinds added with tsrep.nn.register_attention are accepted by name too.",
    })
    head_mixing: str | None = _hyperparameter(
        None, StrOptions(set(HEAD_MIXINGS)), None,
        doc="DEACON PCA layer over the head outputs before the output projection (Ampazis and Sakketou 2024), "
            "trained by the DEACON constrained Hebbian rule while every other weight uses `optimizer`.",
    )
    deacon_m: int | None = _hyperparameter(
        None, positive_int(), None,
        doc="Components kept by the PCA layer (None: all heads); m < h prunes heads and shrinks the output "
            "projection. At most h (h + h(h+1)/2 for \"deacon-nonlinear\"), with h the number of heads mixed "
            "(n_heads, or n_heads**2 for attention=\"interacting\"). Needs head_mixing.",
    )
    deacon_dp: float = _hyperparameter(
        DEACON_DP, Interval(Real, 0, None, closed="neither"),
        doc="Norm of every DEACON step of the PCA weights (paper: 0.2).",
    )
    deacon_xi: float = _hyperparameter(
        DEACON_XI, unit_interval("neither"),
        doc="Share of the steepest first-order loss decrease demanded of each DEACON step (paper: 0.8).",
    )
    deacon_inner_steps: int = _hyperparameter(
        DEACON_INNER_STEPS, non_negative_int(),
        doc="GHA-only updates per batch, run on a copy of the PCA weights to set the Hebbian direction of the "
            "constrained DEACON step, which alone is applied (the paper's i = 500; each is a few h x h matrix "
            "products per PCA layer, about 25 us on a CPU).",
    )
    kernel_size: int = _hyperparameter(3, positive_int(), doc="Kernel of the dilated convolution branch.")
    dim_feedforward: int | None = _hyperparameter(
        None, positive_int(), None, doc="Width of the position-wise feed-forward network (None: 4 * d_model)."
    )
    dropout: float = _hyperparameter(
        0.1, unit_interval("left"), doc="Dropout inside the network (and before an estimator's output head)."
    )
    norm: str = _hyperparameter(
        "batch", StrOptions(set(NORMS)),
        doc="BatchNorm whose statistics skip padded steps (as TST), or LayerNorm. BatchNorm is the default because "
            "LayerNorm over the channels of one time step erases the amplitude of a univariate input (its "
            "embedding x_t * w is one line, normalised to +-LN(w)); the measurement is in the documentation's "
            "design notes.",
    )

    def __post_init__(self):
        self.check(self.to_dict(), "DCTransformerConfig")
        # Plain Python numbers (numpy's integers pass the checks): the config is stored as JSON.
        for name, value in self.to_dict().items():
            if isinstance(value, Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))
            elif isinstance(value, Real) and not isinstance(value, bool):
                object.__setattr__(self, name, float(value))

    # ----------------------------------------------------------------- the declared fields
    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def defaults(cls) -> dict:
        """name -> default, in declaration order."""
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING}

    @classmethod
    def constraints(cls) -> dict:
        """name -> accepted kinds (scikit-learn's ``_parameter_constraints`` format)."""
        return {f.name: f.metadata["constraints"] for f in fields(cls)}

    @classmethod
    def check(cls, params: dict, owner: str) -> None:
        """Every field of `params` against its constraint, then the rules between fields; the errors
        name the field and `owner` (the estimator or class the values were given to)."""
        check_constraints(cls.constraints(), params, owner)
        cls.check_combinations(params)

    @staticmethod
    def check_combinations(params: dict) -> None:
        """ValueError for what no field alone decides: an attention width that p leaves empty or that
        n_heads does not divide, an even map kernel, the attention kind and its DEACON options."""
        d_attn = split_width(params["d_model"], params["p"])[0]
        if params["p"] > 0 and d_attn == 0:
            raise ValueError(
                f"p={params['p']} gives no attention channel at d_model={params['d_model']}; use p=0 or a larger p"
            )
        if d_attn > 0 and d_attn % params["n_heads"] != 0:
            raise ValueError(
                f"n_heads={params['n_heads']!r} must divide the attention width round(p * d_model) = {d_attn}"
            )
        if params["attn_kernel_size"] % 2 == 0:
            raise ValueError(f"attn_kernel_size must be a positive odd integer, got {params['attn_kernel_size']!r}")
        validate_attention_options(
            params["attention"], params["head_mixing"], params["deacon_m"], params["n_heads"], d_attn,
            params["deacon_dp"], params["deacon_xi"], params["deacon_inner_steps"],
        )

    # ----------------------------------------------------------------- conversions
    @classmethod
    def from_params(cls, params: dict) -> "DCTransformerConfig":
        """The config of the fields found in `params` (an estimator's get_params(), a checkpoint's
        dict); other keys are ignored and absent fields take their defaults."""
        return cls(**{name: params[name] for name in cls.names() if name in params})

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def attention_width(self) -> int:
        """round(p * d_model): channels of the attention branch."""
        return split_width(self.d_model, self.p)[0]

    @property
    def deacon_settings(self) -> dict:
        """The PCA layer's settings, under tsrep.nn.deacon.PCALayer's keyword names."""
        return {"deacon_dp": self.deacon_dp, "deacon_xi": self.deacon_xi, "deacon_inner_steps": self.deacon_inner_steps}
