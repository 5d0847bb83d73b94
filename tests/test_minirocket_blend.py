"""blend_minirocket: a MiniRocket's calibrated probabilities averaged with the network's.

The leave-one-out scores against refits without each case, the temperature against its log-loss, the blend
against the network alone of the same seed, ensembles, saving, awkward input, and accuracy on real data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from aeon.datasets import load_arrow_head, load_basic_motions
from helpers import load_benchmark_script
from safetensors.torch import load_file, save_file
from scipy.special import log_softmax
from sklearn.linear_model import Ridge, RidgeClassifier, RidgeClassifierCV

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep._serialization import ModelFileError
from tsrep.benchmarks import parse_config, run_benchmark
from tsrep.data import as_case_list, load_archive
from tsrep.estimators._minirocket_blend import (
    ALPHAS, FALLBACK_TEMPERATURE, SMALL_SET_CASES, SMALL_SET_NETWORK_WEIGHT, CalibratedMiniRocket, RidgeMiniRocket,
    calibration_temperature, classifier_network_weight, fit_temperature, leave_one_out_scores, network_weight,
)
from tsrep.estimators.baselines import BackboneClassifier, BackboneRegressor

TINY = dict(d_model=8, n_blocks=1, n_heads=2, p=0.5, batch_size=8, min_steps=0, max_epochs=2, random_state=0)


@pytest.fixture(scope="module")
def blend_script():
    return load_benchmark_script("minirocket_blend")


@pytest.fixture(scope="module")
def motions():
    X, y = load_basic_motions(split="train")
    X_test, y_test = load_basic_motions(split="test")
    return X, y, X_test, y_test


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_leave_one_out_scores_equal_refits_without_each_case(n_classes, weighted):
    rng = np.random.default_rng(n_classes)
    X, y = rng.normal(size=(24, 40)), np.arange(24) % n_classes
    weights = rng.uniform(0.5, 2.0, 24) if weighted else None
    ridge = RidgeClassifierCV(alphas=ALPHAS, store_cv_results=True).fit(X, y, sample_weight=weights)
    scores = leave_one_out_scores(ridge, X, y, weights)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = RidgeClassifier(alpha=ridge.alpha_).fit(X[keep], y[keep], None if weights is None else weights[keep])
        np.testing.assert_allclose(scores[i], refit.decision_function(X[i : i + 1])[0], atol=1e-9)


def test_temperature_minimises_the_log_loss():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60)
    scores = rng.normal(size=(60, 3)) + 1.5 * np.eye(3)[y]  # informative but noisy scores

    def loss(t):
        return -np.mean(log_softmax(scores / t, axis=1)[np.arange(60), y])

    t = fit_temperature(scores, y)
    assert loss(t) < loss(t * 1.2) and loss(t) < loss(t / 1.2)
    # Scores that are always right call for a sharp softmax; scores that say nothing for a flat one.
    assert fit_temperature(3 * np.eye(3)[y], y) < 0.1
    assert fit_temperature(rng.normal(size=(60, 3)), y) > 10 * t


def test_cases_alone_in_their_class_do_not_calibrate():
    rng = np.random.default_rng(1)
    y = np.r_[rng.integers(0, 3, 40), 3, 4]  # classes 3 and 4: one training case each
    scores = rng.normal(size=(42, 5)) + 2.0 * np.eye(5)[y]
    scores[40:, 3:] = -3.0  # a ridge fitted without the class never scores it high: always wrong there
    calibrating = np.arange(40)
    t = calibration_temperature(scores, y)
    assert t == pytest.approx(fit_temperature(scores[calibrating], y[calibrating]))
    assert fit_temperature(scores, y) > 1.2 * t  # counted, the two would flatten every probability
    weights = rng.uniform(0.5, 2.0, 42)
    assert calibration_temperature(scores, y, weights) == pytest.approx(
        fit_temperature(scores[calibrating], y[calibrating], weights[calibrating]))
    assert calibration_temperature(scores[40:], np.array([0, 1])) == FALLBACK_TEMPERATURE


def test_one_training_case_a_class_still_gives_the_minirocket_a_say(motions):
    # Every class with one case: no leave-one-out score can calibrate, and the temperature fitted on them went to
    # its bound (1000), where the MiniRocket's probabilities were uniform and the blend was the network alone.
    X, y, X_test, y_test = motions
    classes = np.unique(y)
    first = [int(np.flatnonzero(y == c)[0]) for c in classes]
    minirocket = CalibratedMiniRocket(len(classes)).fit(as_case_list(X[first]), np.arange(len(classes)))
    assert minirocket.temperature_ == FALLBACK_TEMPERATURE
    proba = minirocket.predict_proba(as_case_list(X_test))
    assert proba.max(axis=1).mean() > 0.5  # uniform would be 0.25
    assert np.mean(classes[proba.argmax(axis=1)] == y_test) > 0.6


def test_blend_is_the_mean_of_the_network_alone_and_the_minirocket(motions):
    X, y, X_test, _ = motions
    blended = EADCTransformerClassifier(**TINY).fit(X, y)
    alone = EADCTransformerClassifier(**TINY, blend_minirocket=False).fit(X, y)
    assert blended.blend_minirocket_ and alone.minirocket_ is None and not alone.blend_minirocket_
    # The MiniRocket is fitted after the network and draws from none of its random streams: same network.
    expected = (alone.predict_proba(X_test) + blended.minirocket_.predict_proba(list(X_test))) / 2
    np.testing.assert_allclose(blended.predict_proba(X_test), expected, rtol=0, atol=1e-12)
    assert 0 < blended.minirocket_.temperature_ < np.inf
    assert blended.network_weight_ == 0.5 and len(y) >= SMALL_SET_CASES


def test_below_32_cases_the_minirocket_carries_three_quarters_of_the_blend(motions):
    X, y, X_test, _ = motions
    small = np.concatenate([np.flatnonzero(y == c)[:6] for c in np.unique(y)])  # 24 cases, six a class
    blended = EADCTransformerClassifier(**TINY).fit(X[small], y[small])
    alone = EADCTransformerClassifier(**TINY, blend_minirocket=False).fit(X[small], y[small])
    assert blended.network_weight_ == SMALL_SET_NETWORK_WEIGHT == 0.25
    expected = 0.25 * alone.predict_proba(X_test) + 0.75 * blended.minirocket_.predict_proba(list(X_test))
    np.testing.assert_allclose(blended.predict_proba(X_test), expected, rtol=0, atol=1e-12)
    assert [classifier_network_weight(n) for n in (1, 31, 32, 10_000)] == [0.25, 0.25, 0.5, 0.5]


def test_an_ensemble_blends_its_members_mean_with_one_minirocket(motions):
    X, y, X_test, _ = motions
    ensemble = EADCTransformerClassifier(**TINY, n_estimators=2).fit(X, y)
    assert all(m.minirocket_ is None and not m.blend_minirocket for m in ensemble.estimators_)
    members = np.mean([m.predict_proba(X_test) for m in ensemble.estimators_], axis=0)
    expected = (members + ensemble.minirocket_.predict_proba(list(X_test))) / 2
    np.testing.assert_allclose(ensemble.predict_proba(X_test), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_estimators", [1, 2])
def test_saved_blend_predicts_the_same(motions, tmp_path, n_estimators):
    X, y, X_test, _ = motions
    clf = EADCTransformerClassifier(**TINY, n_estimators=n_estimators).fit(X, y)
    loaded = EADCTransformerClassifier.load(clf.save(tmp_path / "clf.safetensors"))
    assert loaded.blend_minirocket_ and loaded.minirocket_.temperature_ == clf.minirocket_.temperature_
    assert loaded.network_weight_ == clf.network_weight_
    np.testing.assert_array_equal(loaded.predict_proba(X_test), clf.predict_proba(X_test))


def test_a_damaged_minirocket_in_a_model_file_is_named_at_load(motions, tmp_path):
    X, y, _, _ = motions
    path = EADCTransformerClassifier(**TINY).fit(X, y).save(tmp_path / "clf.safetensors")
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
    tensors = load_file(str(path))
    tensors["minirocket.coef"] = tensors["minirocket.coef"][:, :-5].contiguous()
    save_file(tensors, str(path), metadata=metadata)
    with pytest.raises(ModelFileError, match="MiniRocket.*coef"):
        EADCTransformerClassifier.load(path)


def _rewrite_fitted(path, **changes):
    """Rewrite fitted attributes in a model file's JSON document (None: remove the attribute)."""
    import json

    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
    document = json.loads(metadata["tsrep"])
    for name, value in changes.items():
        if value is None:
            document["fitted"].pop(name)
        else:
            document["fitted"][name] = value
    metadata["tsrep"] = json.dumps(document)
    save_file(load_file(str(path)), str(path), metadata=metadata)


@pytest.mark.parametrize("weight", [None, 1.5, True])
def test_a_classifier_file_with_a_missing_or_bad_network_weight_is_named(motions, tmp_path, weight):
    X, y, _, _ = motions
    path = EADCTransformerClassifier(**TINY).fit(X, y).save(tmp_path / "clf.safetensors")
    _rewrite_fitted(path, network_weight_=weight)  # None: removed
    with pytest.raises(ModelFileError, match=r"network_weight_ must be a number in \[0, 1\], got "
                                             + {None: "None", 1.5: "1.5", True: "True"}[weight]):
        EADCTransformerClassifier.load(path)


def test_unequal_short_and_missing_series_blend_to_probabilities(tmp_path):
    rng = np.random.default_rng(0)
    lengths = [5, 7, 12, 6, 8, 11, 5, 9, 10, 6, 7, 12]  # below MiniRocket's 9 steps, and unequal
    X = [rng.normal(size=(2, n)) + (i % 2) for i, n in enumerate(lengths)]
    X[3][0, 2] = np.nan
    y = np.array(["a", "b"] * 6)
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    X_new = [rng.normal(size=(2, n)) for n in (4, 9, 20)]  # one longer than any in TRAIN
    proba = clf.predict_proba(X_new)
    assert proba.shape == (3, 2) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # Two classes: the ridge has one row of weights; saved and loaded as such.
    assert clf.minirocket_.coef_.shape[0] == 1
    loaded = EADCTransformerClassifier.load(clf.save(tmp_path / "two_classes.safetensors"))
    np.testing.assert_array_equal(loaded.predict_proba(X_new), proba)


def test_baselines_answer_as_their_papers_did():
    assert BackboneClassifier().blend_minirocket is False  # a baseline answers as its paper did
    assert BackboneRegressor().blend_minirocket is False
    assert EADCTransformerClassifier().blend_minirocket == "auto"


@pytest.mark.filterwarnings("ignore:An ill-conditioned matrix")  # 20 cases of 10,000 features, a tiny penalty
@pytest.mark.parametrize("weighted", [False, True])
def test_the_regression_ridges_leave_one_out_error_equals_refits_without_each_case(weighted):
    rng = np.random.default_rng(1)
    cases = [rng.normal(size=(1, 30)).cumsum(axis=1) for _ in range(20)]
    y = np.array([c[0, -5:].mean() for c in cases]) * 3.0 + 7.0 + rng.normal(scale=0.5, size=20)
    weights = rng.uniform(0.5, 2.0, 20) if weighted else None
    part = RidgeMiniRocket(random_state=0).fit(cases, y, weights)
    features, z = part._features(cases), (y - part.target_mean_) / part.target_std_
    errors = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = Ridge(alpha=part.alpha_).fit(features[keep], z[keep], None if weights is None else weights[keep])
        errors.append((refit.predict(features[i : i + 1])[0] - z[i]) ** 2)
    np.testing.assert_allclose(part.loo_mse_, np.average(errors, weights=weights), rtol=1e-6)
    # Predictions in y's units: the ridge on all cases, standardisation undone.
    full = Ridge(alpha=part.alpha_).fit(features, z, weights)
    np.testing.assert_allclose(part.predict(cases), full.predict(features) * part.target_std_ + part.target_mean_,
                               rtol=0, atol=1e-4)  # the refit's solver differs at float rounding of a tiny penalty


def test_the_network_weight_is_inverse_to_the_errors():
    assert network_weight(1.0, 3.0) == 0.75  # the network errs a third as much: three quarters of the answer
    assert network_weight(3.0, 1.0) == 0.25
    assert network_weight(None, 0.2) == 0.5  # no validation split: equal weights
    assert network_weight(0.0, 0.0) == 0.5


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(48, 2, 24)).cumsum(axis=2)
    y = X[:, 0, -6:].mean(axis=1) - 0.5 * X[:, 1, :6].mean(axis=1) + rng.normal(scale=0.2, size=48)
    return X[:40], y[:40], X[40:]


def test_a_blended_regressor_weighs_its_network_by_its_validation_error(regression_data, tmp_path):
    X, y, X_new = regression_data
    params = {**TINY, "validation_fraction": 0.25}
    alone = EADCTransformerRegressor(**params, blend_minirocket=False).fit(X, y)
    blended = EADCTransformerRegressor(**params, blend_minirocket=True).fit(X, y)
    assert alone.minirocket_ is None and blended.blend_minirocket_ is True
    # The network is the one the regressor alone trains (same budget, the MiniRocket fitted after it) ...
    assert blended.max_epochs_ == alone.max_epochs_ and blended.min_steps_ == alone.min_steps_
    history = blended.history_
    network_mse = -history.val_score[history.best_epoch]  # standardised units: those of the MiniRocket's error
    assert blended.network_weight_ == network_weight(network_mse, blended.minirocket_.loo_mse_)
    assert 0.0 < blended.network_weight_ < 1.0
    # ... and the answer is the weighted mean of the two.
    weight = blended.network_weight_
    expected = weight * alone.predict(X_new) + (1 - weight) * blended.minirocket_.predict(as_case_list(X_new))
    np.testing.assert_allclose(blended.predict(X_new), expected, rtol=1e-6)
    loaded = EADCTransformerRegressor.load(blended.save(tmp_path / "reg.safetensors"))
    np.testing.assert_array_equal(loaded.predict(X_new), blended.predict(X_new))
    assert loaded.network_weight_ == weight and loaded.minirocket_.loo_mse_ == blended.minirocket_.loo_mse_
    # Without a validation split the network has no error estimate: equal weights.
    no_split = EADCTransformerRegressor(**TINY, validation_fraction=0.0, blend_minirocket=True).fit(X, y)
    assert no_split.network_weight_ == 0.5


def test_a_blended_regressor_ensemble_fits_one_minirocket(regression_data, tmp_path):
    X, y, X_new = regression_data
    params = {**TINY, "validation_fraction": 0.25, "n_estimators": 2, "n_jobs": 1}
    ensemble = EADCTransformerRegressor(**params, blend_minirocket=True).fit(X, y)
    assert all(m.minirocket_ is None and m.blend_minirocket is False for m in ensemble.estimators_)
    errors = [-m.history_.val_score[m.history_.best_epoch] for m in ensemble.estimators_]
    assert ensemble.network_weight_ == pytest.approx(network_weight(np.mean(errors), ensemble.minirocket_.loo_mse_))
    members = np.mean([m.predict(X_new) for m in ensemble.estimators_], axis=0)
    weight = ensemble.network_weight_
    expected = weight * members + (1 - weight) * ensemble.minirocket_.predict(as_case_list(X_new))
    np.testing.assert_allclose(ensemble.predict(X_new), expected, rtol=1e-6)
    loaded = EADCTransformerRegressor.load(ensemble.save(tmp_path / "ensemble.safetensors"))
    np.testing.assert_array_equal(loaded.predict(X_new), ensemble.predict(X_new))


def test_a_blended_regressor_takes_unequal_short_and_missing_series():
    rng = np.random.default_rng(1)
    lengths = [5, 7, 12, 6, 8, 11, 5, 9, 10, 6, 7, 12]  # below MiniRocket's 9 steps, and unequal
    X = [rng.normal(size=(2, n)) for n in lengths]
    X[3][0, 2] = np.nan
    y = np.array([np.nanmean(x[0, :4]) for x in X])
    reg = EADCTransformerRegressor(**TINY, blend_minirocket=True).fit(X, y)
    predictions = reg.predict([rng.normal(size=(2, n)) for n in (4, 9, 20)])  # one longer than any in TRAIN
    assert predictions.shape == (3,) and np.all(np.isfinite(predictions))
    with pytest.raises(ValueError, match="y contains NaN"):
        EADCTransformerRegressor(**TINY, blend_minirocket=True).fit(X, np.where(np.arange(12) == 2, np.nan, y))


def test_a_corrupt_regression_minirocket_is_named(regression_data, tmp_path):
    X, y, _ = regression_data
    path = EADCTransformerRegressor(**TINY, blend_minirocket=True).fit(X, y).save(tmp_path / "reg.safetensors")
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
    tensors = load_file(str(path))
    tensors["minirocket.coef"] = tensors["minirocket.coef"][:-5].contiguous()
    save_file(tensors, str(path), metadata=metadata)
    with pytest.raises(ModelFileError, match="MiniRocket.*coef"):
        EADCTransformerRegressor.load(path)


def test_a_blended_regressor_on_tecator_answers_as_well_as_its_better_part():
    # Fat content from 100-point absorbance spectra (172 training cases). A network of two epochs is no better
    # than the training mean (RMSE about 12.9); the MiniRocket's ridge alone scores about 0.7 here. The
    # inverse-error weights must hand the answer to the MiniRocket (a floor of 1.5 leaves room for its seed).
    X, y = load_archive("Tecator", split="train", offline=True)
    X_test, y_test = load_archive("Tecator", split="test", offline=True)
    reg = EADCTransformerRegressor(**TINY, blend_minirocket=True).fit(X, y)
    assert reg.network_weight_ < 0.05
    assert np.sqrt(np.mean((reg.predict(X_test) - y_test) ** 2)) <= 1.5


def test_blend_on_arrow_head_beats_a_floor():
    # Three classes of 36 training contours. A network of a few steps alone is near chance; the blend must still
    # answer well (MiniRocket alone: 0.86 on this split; a floor of 0.80 leaves room for its seed).
    X, y = load_arrow_head(split="train")
    X_test, y_test = load_arrow_head(split="test")
    clf = EADCTransformerClassifier(**TINY).fit(X, y)
    assert clf.score(X_test, y_test) >= 0.80


def test_the_benchmark_script_blends_stored_cells_as_the_estimator_does(blend_script, tmp_path, capsys):
    # benchmarks/minirocket_blend.py scores the blend from a store's network-alone cells: it must give what the
    # blended estimator of the same seed answers.

    params = {k: v for k, v in TINY.items() if k != "random_state"}
    config = parse_config({"name": "tiny", "datasets": ["BasicMotions"], "models": ["ea-dc-transformer"], "seeds": [1],
                           "params": {**params, "blend_minirocket": False}, "data": {"offline": True}})
    store, _ = run_benchmark(config, tmp_path, threads=1, progress=False)
    cells = blend_script.blend_cells(store, "ea-dc-transformer", ["BasicMotions"])
    assert len(cells) == 1 and cells.seed[0] == 1
    X, y = load_archive("BasicMotions", split="train", offline=True)
    X_test, y_test = load_archive("BasicMotions", split="test", offline=True)
    blended = EADCTransformerClassifier(**params, random_state=1).fit(X, y)
    np.testing.assert_allclose((cells["_network"][0] + cells["_minirocket"][0]) / 2, blended.predict_proba(X_test),
                               rtol=0, atol=1e-6)  # the store keeps the network's probabilities in float32
    assert cells.blend[0] == blended.score(X_test, y_test)
    # --blended: cells of the blended estimator itself, whose network the script recovers from the stored mean.
    config = parse_config({"name": "tiny-blended", "datasets": ["BasicMotions"], "models": ["ea-dc-transformer"],
                           "seeds": [1], "params": params, "data": {"offline": True}})
    store, _ = run_benchmark(config, tmp_path / "blended", threads=1, progress=False)
    recovered = blend_script.blend_cells(store, "ea-dc-transformer", ["BasicMotions"], blended=True,
                                   partners=("minirocket",))
    np.testing.assert_allclose(recovered["_network"][0], cells["_network"][0], rtol=0, atol=1e-5)
    assert recovered.blend[0] == cells.blend[0]
    # --partners: "minirocket" through the benchmark's transforms is the estimator's MiniRocket again.
    assert recovered["network + minirocket"][0] == recovered.blend[0]
    assert recovered["minirocket alone"][0] == cells.minirocket[0]
    blend_script.print_partners(recovered, ["minirocket"], {"all": ["BasicMotions"]})
    assert "network + minirocket: +0.0000 a problem against network + MiniRocket" in capsys.readouterr().out


def test_the_benchmark_script_blends_a_small_set_with_the_estimators_weight(blend_script, tmp_path):
    # Coffee has 28 training cases: the estimator's network weighs a quarter, and the script must recover the
    # network of a blended cell with that weight (not as twice the stored mean minus the MiniRocket).
    params = {k: v for k, v in TINY.items() if k != "random_state"}
    cells = {}
    for name, extra in (("alone", {"blend_minirocket": False}), ("blended", {})):
        config = parse_config({"name": f"coffee-{name}", "datasets": ["Coffee"], "models": ["ea-dc-transformer"],
                               "seeds": [0], "params": {**params, **extra}, "data": {"offline": True}})
        store, _ = run_benchmark(config, tmp_path / name, threads=1, progress=False)
        cells[name] = blend_script.blend_cells(store, "ea-dc-transformer", ["Coffee"], blended=name == "blended")
    alone, blended = cells["alone"], cells["blended"]
    assert alone.network_weight[0] == blended.network_weight[0] == SMALL_SET_NETWORK_WEIGHT
    np.testing.assert_allclose(blended["_network"][0], alone["_network"][0], rtol=0, atol=1e-5)
    assert blended.blend[0] == alone.blend[0]
    X, y = load_archive("Coffee", split="train", offline=True)
    X_test, y_test = load_archive("Coffee", split="test", offline=True)
    assert alone.blend[0] == EADCTransformerClassifier(**TINY).fit(X, y).score(X_test, y_test)


def test_the_benchmark_scripts_blend_rules_score_each_combination(blend_script):
    # --rules: weighted means, the geometric mean and the more confident model, on vectors where they disagree.

    classes, targets = np.array(["a", "b"]), np.array(["a", "b", "a"])
    network = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4]])  # right, wrong, right
    minirocket = np.array([[0.3, 0.7], [0.05, 0.95], [0.6, 0.4]])  # wrong, right (surer than the network), right
    cells = pd.DataFrame([{"dataset": "toy", "seed": 0, "_network": network, "_minirocket": minirocket,
                           "_classes": classes, "_targets": targets}])
    rules = blend_script.blend_rules(cells).iloc[0]
    # The plain mean: 0.6 for a, 0.525 for b, 0.6 for a: all three right.
    assert rules["0.5 network"] == rules["0.4 network"] == 1.0
    assert rules["0.3 network"] == 2 / 3  # the first case: 0.3 * 0.9 + 0.7 * 0.3 = 0.48 for its class
    assert rules["0.6 network"] == rules["0.7 network"] == 2 / 3  # the second: 0.6 * 0.1 + 0.4 * 0.95 = 0.44
    assert rules["geometric mean"] == 1.0  # 0.9 * 0.3 > 0.1 * 0.7; 0.1 * 0.95 > 0.9 * 0.05
    assert rules["more confident"] == 1.0  # the network's 0.9 over 0.7, the MiniRocket's 0.95 over 0.9


def test_the_benchmark_scripts_partners_stand_in_the_minirocket_place(blend_script, motions, capsys):
    # --partners: the estimator's calibrated ridge on other aeon transforms; "minirocket" alone is the estimator's.

    X, y, X_test, y_test = motions
    classes = np.unique(y)
    cases, index, test = as_case_list(X), np.searchsorted(classes, y), as_case_list(X_test)
    reference = CalibratedMiniRocket(len(classes), random_state=3).fit(cases, index)
    same = blend_script.CalibratedTransforms(len(classes), "minirocket", random_state=3).fit(cases, index)
    np.testing.assert_allclose(same.predict_proba(test), reference.predict_proba(test), rtol=0, atol=1e-6)
    both = blend_script.CalibratedTransforms(len(classes), "minirocket+hydra", random_state=3).fit(cases, index)
    hydra_features = both.transforms_[1].transform(both._array(test)).shape[1]
    assert both.coef_.shape[1] == reference.coef_.shape[1] + hydra_features
    proba = both.predict_proba(test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(classes[proba.argmax(axis=1)] == y_test) >= 0.9  # BasicMotions: MiniRocket alone scores 1.0
    with pytest.raises(SystemExit):
        blend_script.main(["--store", "absent.sqlite", "--partners", "rocket"])
    assert "--partners 'rocket'" in capsys.readouterr().err  # named before the missing store
