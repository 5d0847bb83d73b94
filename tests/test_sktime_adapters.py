"""The sktime adapters (tsrep.sktime): sktime's conformance suite, pipelines, real data, optional import."""

import inspect
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("sktime")
torch = pytest.importorskip("torch")

from aeon.datasets import load_basic_motions, load_covid_3month  # noqa: E402
from sktime.utils.estimator_checks import check_estimator  # noqa: E402

import tsrep  # noqa: E402
from tsrep.sktime import EADCTransformerClassifier, EADCTransformerRegressor  # noqa: E402

ADAPTERS = [
    (EADCTransformerClassifier, tsrep.EADCTransformerClassifier),
    (EADCTransformerRegressor, tsrep.EADCTransformerRegressor),
]


@pytest.fixture(autouse=True)
def one_torch_thread():
    # The models here are tiny: torch's intra-op threads only add overhead, and on a busy machine
    # with few cores they spin against each other (a 2-epoch fit went from 0.06 s to 4 s).
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n_threads)


@pytest.mark.parametrize("adapter", [a for a, _ in ADAPTERS], ids=lambda c: c.__name__)
def test_sktime_check_estimator(adapter):
    results = check_estimator(adapter, raise_exceptions=False, verbose=False)
    assert results, "check_estimator ran no checks"
    failed = {name: outcome for name, outcome in results.items() if outcome != "PASSED"}
    assert not failed, f"{len(failed)} of {len(results)} sktime checks failed:\n" + "\n".join(
        f"{name}: {outcome!r}" for name, outcome in failed.items()
    )


@pytest.mark.parametrize(("adapter", "aeon_class"), ADAPTERS, ids=lambda c: c.__name__)
def test_adapter_mirrors_aeon_parameters(adapter, aeon_class):
    assert inspect.signature(adapter.__init__) == inspect.signature(aeon_class.__init__)
    assert adapter().get_params() == aeon_class().get_params()
    est = adapter(d_model=16, pooling="max", random_state=3)
    assert est.get_params()["d_model"] == 16 and est.get_params()["pooling"] == "max"
    # the fitted aeon estimator gets exactly the adapter's parameters
    assert est._make_estimator().get_params() == est.get_params()


def _tiny(cls, **overrides):
    params = cls.get_test_params()[0]
    params.update(device="cpu", **overrides)
    return params


def test_classifier_in_sktime_pipeline_on_basic_motions():
    from sktime.classification.compose import ClassifierPipeline
    from sktime.transformations.exponent import ExponentTransformer

    X_train, y_train = load_basic_motions(split="train")
    X_test, y_test = load_basic_motions(split="test")
    clf = EADCTransformerClassifier(**_tiny(EADCTransformerClassifier, d_model=16, max_epochs=30))
    pipe = ExponentTransformer(power=2) * clf
    assert isinstance(pipe, ClassifierPipeline)

    pipe.fit(X_train, y_train)
    y_pred = pipe.predict(X_test)
    proba = pipe.predict_proba(X_test)

    fitted = pipe.classifier_
    assert isinstance(fitted.estimator_, tsrep.EADCTransformerClassifier)
    assert fitted.n_parameters_ == fitted.estimator_.n_parameters_ > 0
    np.testing.assert_array_equal(fitted.classes_, np.unique(y_train))
    assert y_pred.shape == y_test.shape and set(y_pred) <= set(y_train)
    assert proba.shape == (len(X_test), 4)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(fitted.classes_[proba.argmax(axis=1)], y_pred)
    assert np.mean(y_pred == y_test) > 0.4  # four balanced classes: chance is 0.25 (seed 0 on CPU: 0.625)


def test_regressor_predicts_covid_3month():
    X_train, y_train = load_covid_3month(split="train")
    X_test, _ = load_covid_3month(split="test")
    reg = EADCTransformerRegressor(**_tiny(EADCTransformerRegressor, max_epochs=10)).fit(X_train, y_train)
    y_pred = reg.predict(X_test)
    assert isinstance(reg.estimator_, tsrep.EADCTransformerRegressor)
    assert reg.n_parameters_ == reg.estimator_.n_parameters_ > 0
    assert y_pred.shape == (len(X_test),)
    assert np.all(np.isfinite(y_pred))


def test_sktime_stays_optional():
    # In a fresh interpreter: importing tsrep does not import sktime, and tsrep.sktime without
    # sktime (blocked in sys.modules) says how to install it.
    code = textwrap.dedent(
        """
        import sys
        import tsrep
        assert not any(m == "sktime" or m.startswith("sktime.") for m in sys.modules), "tsrep imported sktime"
        sys.modules["sktime"] = None
        try:
            import tsrep.sktime
        except ImportError as err:
            assert "pip install tsrep[sktime]" in str(err), str(err)
        else:
            raise AssertionError("tsrep.sktime imported without sktime")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
