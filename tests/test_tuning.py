"""tsrep.tuning: pruning hook, tiny studies, SQLite resume in a new process, configs, TSRepSearchCV, errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch
import yaml
from aeon.datasets import load_classification, load_regression
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState
from sklearn.base import clone, is_classifier
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from tsrep import EADCTransformerClassifier, EADCTransformerRegressor
from tsrep.training.callbacks import OptunaPruning
from tsrep.tuning import (
    PAPER_SEARCH_SPACE,
    ConfigError,
    SearchSpace,
    SearchSpaceError,
    StorageError,
    TSRepSearchCV,
    load_config,
    resolve_storage,
    save_config,
    tune,
)
from tsrep.tuning.cli import main as cli_main
from tsrep.tuning.space import adjust_params

ROOT = Path(__file__).resolve().parents[1]
TINY = EADCTransformerClassifier._get_test_params()
TINY_SPACE = {"d_model": [8, 16], "n_blocks": 1, "n_heads": 2, "max_epochs": 3, "min_steps": 0, "batch_size": 8}


@pytest.fixture(scope="module")
def basic_motions():
    X, y = load_classification("BasicMotions", split="train")
    return X, y


class PruneAllButFirst(optuna.pruners.BasePruner):
    """An aggressive pruner: every trial after the first is stopped at its second epoch."""

    def prune(self, study, trial):
        return trial.number >= 1 and trial.last_step is not None and trial.last_step >= 1


# ----------------------------------------------------------------- the tuner's pruning callback
class _StopAtSecond(OptunaPruning):
    """OptunaPruning's scoring, with a pruning decision of its own: stop at the second epoch."""

    def __init__(self, X, y, seen):
        super().__init__(trial=None, X=X, y=y)
        self.seen = seen

    def on_epoch_end(self, epoch, logs):
        self.seen.append((epoch, self._score()))
        if epoch == 1:
            raise optuna.TrialPruned("stop")


def test_pruning_callback_scores_own_data_and_exception_leaves_fit_cleanly(basic_motions):
    X, y = basic_motions
    seen = []
    model = EADCTransformerClassifier(**{**TINY, "max_epochs": 4}, callbacks=[_StopAtSecond(X[:10], y[:10], seen)])
    rng_before = torch.random.get_rng_state()
    with pytest.raises(optuna.TrialPruned):
        model.fit(X, y)
    assert [e for e, _ in seen] == [0, 1] and all(0.0 <= s <= 1.0 for _, s in seen)
    assert not model.is_fitted
    assert torch.equal(torch.random.get_rng_state(), rng_before)  # the user's RNG is left alone
    model.set_params(callbacks=None).fit(X, y)  # no callback: a normal fit
    assert model.is_fitted and len(seen) == 2


# ----------------------------------------------------------------- search spaces
def test_search_space_overrides_and_defaults():
    est = EADCTransformerClassifier()
    space = SearchSpace(est)
    assert set(space.distributions) == set(PAPER_SEARCH_SPACE)
    assert space.distributions["alpha"].choices == (0.1, 0.3, 0.5, 0.7, 0.9)
    assert space.distributions["p"].choices == (0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875)
    space = SearchSpace(
        est,
        {"d_model": 64, "n_blocks": {"low": 2, "high": 5}, "lr": {"low": 1e-4, "high": 1e-2, "log": True},
         "dropout": {"low": 0.0, "high": 0.3, "step": 0.1}, "pooling": ["mean", "max"]},
    )
    assert space.fixed == {"d_model": 64}
    assert space.distributions["n_blocks"] == IntDistribution(2, 5)
    assert space.distributions["lr"] == FloatDistribution(1e-4, 1e-2, log=True)
    assert space.distributions["dropout"] == FloatDistribution(0.0, 0.3, step=0.1)
    assert isinstance(space.distributions["pooling"], CategoricalDistribution)
    cont = SearchSpace(est, continuous=True)
    assert cont.distributions["alpha"] == FloatDistribution(0.1, 0.9)
    assert cont.distributions["p"] == FloatDistribution(0.125, 0.875)
    # p off the grid: snapped to a width that n_heads divides, and the change is reported
    params, adjusted = adjust_params({"p": 0.3, "d_model": 64, "n_heads": 8}, est.get_params())
    assert adjusted == {"p": 0.25} and params["p"] == 0.25  # width 19.2 -> 16, the nearest multiple of 8
    assert adjust_params({"p": 0.3, "d_model": 64, "n_heads": 4}, est.get_params())[1] == {"p": 0.3125}
    assert adjust_params({"p": 0.375, "d_model": 64}, est.get_params())[1] == {}


@pytest.mark.parametrize(
    "space, message",
    [
        ({"alfa": [0.1]}, "unknown parameter(s) in the search space for EADCTransformerClassifier: 'alfa' (did you mean 'alpha'?)"),
        ({"alpha": {"low": 0.9, "high": 0.1}}, "'alpha' is an empty range: low=0.9 > high=0.1"),
        ({"beta": []}, "'beta' has an empty list of choices"),
        ({"lr": {"low": 0, "high": 1, "log": True}}, "log range needs low > 0"),
        ({"p": {"low": 0.1}}, "needs both 'low' and 'high'"),
        ({"p": {"low": 0.1, "hi": 0.5}}, "unknown key(s) ['hi']"),
        # values every trial drawing them would fail with: refused against the estimator's parameter constraints
        ({"alpha": {"low": 0.0, "high": 5.0}}, "search space entry 'alpha': high=5.0 is outside what the parameter "
                                               "accepts: The 'alpha' parameter of EADCTransformerClassifier must be a "
                                               "float in the range [0.0, 1.0]. Got 5.0 instead."),
        ({"d_model": [8, 0]}, "search space entry 'd_model': choice 0 is outside what the parameter accepts: The "
                              "'d_model' parameter of EADCTransformerClassifier must be an int in the range [1, inf)"),
    ],
)
def test_bad_search_space_is_a_clear_error(space, message):
    with pytest.raises(SearchSpaceError) as info:
        SearchSpace(EADCTransformerClassifier(), space)
    assert message in str(info.value)


def test_fixed_setting_the_estimator_refuses_is_refused_before_any_trial():
    with pytest.raises(SearchSpaceError, match=r"fixed setting\(s\) dropout=1.5 cannot be used: The 'dropout' parameter"):
        tune(EADCTransformerClassifier(), np.zeros((6, 1, 8)), np.array([0, 1] * 3), search_space={"dropout": 1.5},
             n_trials=1, storage="memory")


def test_unreachable_storage_is_a_clear_error(tmp_path):
    with pytest.raises(StorageError, match=r"cannot open the Optuna storage postgresql\+psycopg2?://u:\*\*\*@127\.0\.0\.1:1/db"):
        resolve_storage("postgresql://u:secret@127.0.0.1:1/db")
    with pytest.raises(StorageError, match="does not exist"):
        resolve_storage(tmp_path / "missing" / "study.db")
    with pytest.raises(StorageError, match="cannot open the Optuna storage"):
        resolve_storage("nosuchdialect://x/y")


def test_cli_reports_bad_input_without_traceback(capsys, tmp_path):
    code = cli_main(["--dataset", "BasicMotions", "--storage", "memory", "--set", "alfa=0.3", "--no-plots", "--quiet",
                     "--output", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "tsrep-tune: error: unknown parameter(s)" in err and "did you mean 'alpha'" in err
    code = cli_main(["--dataset", "NoSuchProblem", "--storage", "memory", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "tsrep-tune: error:" in err and "'NoSuchProblem'" in err
    code = cli_main(["--dataset", "BasicMotions", "--storage", "postgresql://u@127.0.0.1:1/db", "--quiet"])
    assert code == 2 and "Connection refused" in capsys.readouterr().err


# ----------------------------------------------------------------- tune(): what it refuses, what it says
SMALL_X = np.random.default_rng(0).normal(size=(12, 1, 16))
SMALL_Y = np.array([0, 1] * 6)
TINY_ALPHA = {"alpha": [0.1, 0.9], "d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 1,
              "min_steps": 0, "batch_size": 4}


@pytest.mark.parametrize("params, message", [
    ({"bogus": 1}, "enqueue[0] sets 'bogus', which is not a tuned parameter of the search space; the tuned "
                   "parameters are: alpha"),
    ({"alpha": 0.1, "d_model": 16}, "enqueue[0] sets 'd_model', which is not a tuned parameter of the search space "
                                    "(the space fixes it at 8); the tuned parameters are: alpha"),
])
def test_an_enqueued_trial_with_a_parameter_the_space_does_not_tune_is_refused(params, message, tmp_path):
    db = tmp_path / "study.db"
    with pytest.raises(ValueError) as info:
        tune(EADCTransformerClassifier(device="cpu"), SMALL_X, SMALL_Y, search_space=TINY_ALPHA, default_space=False,
             enqueue=[params], n_trials=1, storage=db, study_name="s")
    assert str(info.value) == message
    assert not db.exists()  # refused before the study was written


def test_a_scorer_returning_nan_is_named_with_the_trial():
    def nan_scorer(estimator, X, y):
        return float("nan")

    with pytest.raises(RuntimeError) as info:
        tune(EADCTransformerClassifier(device="cpu"), SMALL_X, SMALL_Y, search_space=TINY_ALPHA, default_space=False,
             scoring=nan_scorer, n_trials=2, storage="memory", reuse_duplicates=False)
    assert str(info.value).startswith("the scorer 'nan_scorer' returned NaN in trial 0 (fold 0) (and in trial(s) 1), "
                                      "so study ")
    assert "has no completed trial to refit" in str(info.value)


def test_tune_refuses_an_infinite_value_with_the_message_fit_gives(tmp_path):
    X = SMALL_X.copy()
    X[0, 0, 3] = np.inf  # case 0 falls in the validation part of tune's split
    estimator = EADCTransformerClassifier(d_model=8, n_blocks=1, n_heads=2, max_epochs=1, min_steps=0, device="cpu")
    with pytest.raises(ValueError) as by_fit:
        clone(estimator).fit(X, SMALL_Y)
    db = tmp_path / "study.db"
    with pytest.raises(ValueError) as by_tune:
        tune(estimator, X, SMALL_Y, search_space={"alpha": [0.1, 0.9]}, default_space=False, n_trials=1, storage=db,
             study_name="s")
    assert str(by_tune.value) == str(by_fit.value)
    assert str(by_fit.value).startswith("X holds infinite values (1 in all; the first at case 0, channel 0, step 3)")
    assert not db.exists()  # refused before any study or trial


# ----------------------------------------------------------------- a tiny study
def test_tiny_study_prunes_and_refits_best(basic_motions, tmp_path):
    X, y = basic_motions
    est = EADCTransformerClassifier(**{**TINY, "max_epochs": 4})
    result = tune(
        est, X, y, n_trials=4, storage=tmp_path / "s.db", study_name="tiny",
        search_space={**TINY_SPACE, "max_epochs": 4}, pruner=PruneAllButFirst(), seed=0,
    )
    study, best = result  # unpacks as (study, best_estimator)
    states = [t.state for t in study.trials]
    assert len(states) == 4 and states[0] == TrialState.COMPLETE
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert len(pruned) >= 1
    for t in pruned:  # stopped during training: fewer epochs reported than max_epochs
        assert sorted(t.intermediate_values) == [0, 1]
    assert study.trials[0].intermediate_values.keys() == {0, 1, 2, 3}
    assert best.is_fitted and best.n_epochs_ == 4
    assert result.best_trial.number == 0
    assert {k: best.get_params()[k] for k in result.best_params} == result.best_params
    assert best.predict(X[:3]).shape == (3,)
    assert result.best_value == pytest.approx(study.best_value)


def test_max_trials_caps_the_study(basic_motions, tmp_path):
    X, y = basic_motions
    est = EADCTransformerClassifier(**{**TINY, "max_epochs": 1})
    kwargs = dict(storage=f"sqlite:///{tmp_path / 'cap.db'}", study_name="cap", search_space=TINY_SPACE | {"max_epochs": 1},
                  max_trials=2, refit=False)
    study, _ = tune(est, X, y, **kwargs)
    assert len(study.trials) == 2
    study, _ = tune(est, X, y, **kwargs)  # the study already holds 2 finished trials: nothing more runs
    assert len(study.trials) == 2 and all(t.state == TrialState.COMPLETE for t in study.trials)


# ----------------------------------------------------------------- resume in a new process, CLI, YAML
def test_sqlite_study_resumes_in_new_process_and_yaml_round_trips(basic_motions, tmp_path):
    X, y = basic_motions
    db = tmp_path / "resume.db"
    space_file = tmp_path / "space.yaml"
    space_file.write_text(yaml.safe_dump(TINY_SPACE))
    est = EADCTransformerClassifier(random_state=0, device="auto")  # what the CLI builds with --seed 0
    first, _ = tune(est, X, y, n_trials=2, storage=db, study_name="resume", search_space=TINY_SPACE,
                    refit=False, seed=1)
    before = [(t.number, t.state, t.value, t.params) for t in first.trials]
    assert len(before) == 2

    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "tsrep.tuning.cli", "--dataset", "BasicMotions", "--storage", str(db),
           "--study-name", "resume", "--n-trials", "1", "--search-space", str(space_file), "--output", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "trial    2" in proc.stderr + proc.stdout  # progress lines

    study = optuna.load_study(study_name="resume", storage=f"sqlite:///{db}")
    after = [(t.number, t.state, t.value, t.params) for t in study.trials]
    assert len(after) == 3 and after[:2] == before  # the earlier trials are intact
    for png in ("history", "importances", "alpha_beta_contour", "alpha_beta_p_slice"):
        assert (out / f"{png}.png").stat().st_size > 1000, png

    # best.yaml round-trips into an estimator with exactly the parameters of the best trial
    config = yaml.safe_load((out / "best.yaml").read_text())
    assert config["model"] == "EADCTransformerClassifier" and config["dataset"] == "BasicMotions"
    loaded = load_config(out / "best.yaml")
    best = study.best_trial
    expected = clone(est).set_params(**{**TINY_SPACE, **best.params, **best.user_attrs.get("adjusted", {})})
    assert type(loaded) is EADCTransformerClassifier
    assert loaded.get_params() == expected.get_params()
    assert config["tuning"]["best_trial"] == best.number
    assert config["tuning"]["best_validation"]["value"] == pytest.approx(best.value)


def test_config_round_trip_and_errors(tmp_path):
    est = EADCTransformerRegressor(alpha=0.3, beta=0.7, p=0.375, d_model=128, n_blocks=4, lr=3e-4, patience=None)
    path = save_config(est, tmp_path / "cfg" / "r.yaml", dataset="Covid3Month")
    loaded = load_config(path)
    assert type(loaded) is EADCTransformerRegressor and loaded.get_params() == est.get_params()
    assert load_config(path, device="cpu").device == "cpu"
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: EADCTransformerClasifier\nparams: {}\n")
    with pytest.raises(ConfigError, match="did you mean 'EADCTransformerClassifier'"):
        load_config(bad)
    bad.write_text("model: EADCTransformerClassifier\nparams: {alfa: 0.3}\n")
    with pytest.raises(ConfigError, match="unknown parameter.*'alfa' \\(did you mean 'alpha'\\?\\)"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot be written"):
        save_config(EADCTransformerClassifier(optimizer=torch.optim.Adam), tmp_path / "x.yaml")


# ----------------------------------------------------------------- scikit-learn integration
def test_search_cv_in_cross_val_score_and_pipeline(basic_motions):
    X, y = basic_motions
    search = TSRepSearchCV(
        EADCTransformerClassifier(**TINY),
        {"alpha": [0.1, 0.9], "beta": 0.5, "d_model": 8, "n_blocks": 1, "p": 0.5},
        n_trials=2,
    )
    assert is_classifier(search)
    scores = cross_val_score(search, X, y, cv=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))

    pipe = Pipeline([("copy", FunctionTransformer(np.array)), ("search", search)])
    pipe.fit(X, y)
    fitted = pipe.named_steps["search"]
    assert fitted.best_estimator_.is_fitted and len(fitted.study_.trials) == 2
    assert set(fitted.best_params_) >= {"alpha", "beta", "d_model", "n_blocks", "p"}
    assert fitted.best_params_["alpha"] in (0.1, 0.9)
    assert set(pipe.predict(X[:4])) <= set(np.unique(y))
    assert pipe.predict_proba(X[:4]).shape == (4, 4)
    assert 0.0 <= pipe.score(X, y) <= 1.0
    assert list(fitted.classes_) == sorted(np.unique(y))


def test_search_cv_regressor_with_cv_folds():
    X, y = load_regression("Covid3Month", split="train")
    X, y = X[:40], y[:40].astype(float)
    search = TSRepSearchCV(
        EADCTransformerRegressor(**TINY),
        {"d_model": 8, "n_blocks": 1, "p": 0.5, "alpha": [0.1, 0.9], "beta": 0.5},
        default_space=False, n_trials=1, cv=2, scoring="neg_root_mean_squared_error",
    ).fit(X, y)
    trial = search.study_.trials[0]
    assert len(trial.user_attrs["fold_scores"]) == 2
    assert max(trial.intermediate_values) >= TINY["max_epochs"]  # fold 2 reports at steps max_epochs + epoch
    assert search.score(X, y) <= 0.0  # negative RMSE


def test_repeated_parameters_reuse_the_completed_trial(basic_motions):
    X, y = basic_motions
    est = EADCTransformerClassifier(**{**TINY, "max_epochs": 1})
    space = {"alpha": [0.5], "d_model": 8, "n_blocks": 1, "p": 0.5}  # one point: the sampler must repeat it
    study, _ = tune(est, X, y, n_trials=2, storage="memory", search_space=space, default_space=False, refit=False)
    first, second = study.trials
    assert "duplicate_of" not in first.user_attrs and second.user_attrs["duplicate_of"] == 0
    assert second.value == first.value and second.state == TrialState.COMPLETE
