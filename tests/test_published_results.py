"""Published reference results (tsrep.benchmarks.published) beside a benchmark's models, aeon estimators
named ``aeon:<name>`` in a benchmark (tsrep.benchmarks.registry), the config keys of both."""

import numpy as np
import pandas as pd
import pytest
import yaml

import tsrep.benchmarks.run as run_mod
from tsrep.benchmarks import ConfigError, parse_config
from tsrep.benchmarks.cli import main as cli_main
from tsrep.benchmarks.published import published_methods, published_results
from tsrep.benchmarks.registry import AeonModel, build_model, resolve_model

# ----------------------------------------------------------------------------- the published files


def test_published_classification_results_of_the_bake_off():
    fold0 = published_results("classification", split="fold0", methods=["hc2", "MiniROCKET"])
    assert list(fold0.columns) == ["HC2", "MiniROCKET"] and len(fold0) == 112
    assert fold0.loc["GunPoint", "MiniROCKET"] == pytest.approx(0.993333)
    assert fold0.loc["ItalyPowerDemand", "HC2"] == pytest.approx(0.969874)
    mean = published_results("classification", split="mean30", methods=["MiniROCKET"])
    assert mean.loc["GunPoint", "MiniROCKET"] == pytest.approx(0.992)
    assert published_methods("classification")[:3] == ["MiniROCKET", "MultiROCKET-Hydra", "HC2"]
    assert "bake off redux" in fold0.attrs["citation"].lower()


def test_published_regression_results_under_archive_names():
    rmse = published_results("regression", split="mean", methods=["DrCIF"])
    assert len(rmse) == 62 and rmse.attrs["metric"] == "RMSE"
    # The study's no-missing-values version of BenzeneConcentration is listed under the archive's name.
    assert "BenzeneConcentration" in rmse.index and "BenzeneConcentration_nmv" not in rmse.index
    assert rmse.attrs["study_names"]["BenzeneConcentration"] == "BenzeneConcentration_nmv"
    assert rmse.attrs["study_names"]["PPGDalia"] == "PPGDalia_eq"
    assert "AppliancesEnergy" not in rmse.attrs["study_names"]  # same name in both


def test_bad_published_requests_are_clear_errors():
    with pytest.raises(ValueError, match="no published results for method 'HC3'.*did you mean 'HC2'"):
        published_results("classification", methods=["HC3"])
    with pytest.raises(ValueError, match="split must be one of"):
        published_results("classification", split="fold1")
    with pytest.raises(ValueError, match="task must be one of"):
        published_results("forecasting")
    with pytest.raises(ValueError, match="'DrCIF'"):  # a regression method asked of the classification study
        published_results("classification", methods=["DrCIF"])


# ----------------------------------------------------------------------------- published columns in a run

# Stub scores (no training): on GunPoint DC-T beats MiniROCKET's published 0.993333, on ItalyPowerDemand it
# beats MiniROCKET's 0.963071 but not the GRU; PickupGestureWiimoteZ (unequal length) is not in the study.
SCORES = {
    ("GunPoint", "gru"): 0.90, ("GunPoint", "dc-transformer"): 0.995,
    ("ItalyPowerDemand", "gru"): 0.97, ("ItalyPowerDemand", "dc-transformer"): 0.965,
    ("PickupGestureWiimoteZ", "gru"): 0.5, ("PickupGestureWiimoteZ", "dc-transformer"): 0.6,
}


def _stub_run_cell(cell):
    return {
        "key": cell.key, "config": cell.config, "dataset": cell.dataset, "model": cell.model, "seed": cell.seed,
        "task": cell.task, "metric": "accuracy", "device": cell.device, "spec": cell.spec(),
        "score": SCORES[cell.dataset, cell.model], "n_params": 1000, "status": "ok", "seconds": 0.0,
    }


def _run_stubbed(tmp_path, monkeypatch, capsys, *flags):
    monkeypatch.setattr(run_mod, "run_cell", _stub_run_cell)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({
        "datasets": ["GunPoint", "ItalyPowerDemand", "PickupGestureWiimoteZ"], "models": ["gru", "dc-transformer"],
        "published": ["MiniROCKET"], "data": {"offline": True},
    }))
    out = tmp_path / "out"
    assert cli_main(["--config", str(path), "--out", str(out), "--quiet", *flags]) == 0
    printed = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in printed.splitlines() if line.startswith("| ")}
    return printed, rows, out


def test_published_column_is_shown_but_not_ranked_by_default(tmp_path, monkeypatch, capsys):
    printed, rows, out = _run_stubbed(tmp_path, monkeypatch, capsys)
    assert rows["Dataset (accuracy / #params)"] == ["GRU", "DC-T", "MiniROCKET†", "Majority class"]
    assert rows["GunPoint"][2] == "0.993" and rows["ItalyPowerDemand"][2] == "0.963"
    assert rows["PickupGestureWiimoteZ"][2] == "n/a"
    # Ranks over the three datasets and the two models run: GRU 2,1,2 and DC-T 1,2,1; no published rank.
    assert rows["Avg Rank (over 3 datasets)"][:3] == ["1.67", "1.33", ""]
    # Its mean accuracy over the same datasets is shown, n/a where the study lacks one of them.
    assert rows["Avg Accuracy (over 3 datasets)"][2] == "n/a"
    assert "† Published test accuracy" in printed and "Bake off redux" in printed and "Not counted" in printed
    csv = pd.read_csv(out / "classification.csv").set_index("dataset")
    assert csv.loc["GunPoint", "published:MiniROCKET"] == pytest.approx(0.993333)
    assert not (out / "cd_classification.png").exists()  # two ranked columns: no diagram


def test_published_column_is_ranked_when_asked(tmp_path, monkeypatch, capsys):
    printed, rows, out = _run_stubbed(tmp_path, monkeypatch, capsys, "--published-in-ranks")
    # Only the datasets the study has count; GunPoint: DC-T 1, MiniROCKET 2, GRU 3; ItalyPowerDemand: GRU 1,
    # DC-T 2, MiniROCKET 3.
    assert rows["Avg Rank (over 2 datasets)"][:3] == ["2.00", "1.50", "2.50"]
    assert rows["Avg Accuracy (over 2 datasets)"][2] == f"{(0.993333 + 0.963071) / 2:.3f}"
    assert "Counted in the summary rows" in printed
    assert (out / "cd_classification.png").is_file()  # three ranked columns over two datasets


# ----------------------------------------------------------------------------- aeon estimators in a benchmark


def test_aeon_minirocket_cell_reproduces_the_published_figure():
    cfg = parse_config({"datasets": ["GunPoint"], "models": ["aeon:MiniRocket"], "params": {"max_epochs": 3},
                        "data": {"offline": True}})
    assert cfg.models == ["aeon:minirocket"] and cfg.params_for("aeon:minirocket", "GunPoint") == {}
    (cell,) = run_mod.make_cells(cfg, "cpu")
    row = run_mod.run_cell(cell)
    assert row["status"] == "ok", row.get("error")
    published = published_results("classification", methods=["MiniROCKET"]).loc["GunPoint", "MiniROCKET"]
    assert row["score"] == pytest.approx(published, abs=5e-7)  # 149 / 150, published to six decimals
    assert row["n_params"] > 9000  # the ridge weights over MiniRocket's ~10k features


def test_aeon_model_gets_input_it_can_take():
    rng = np.random.default_rng(0)
    model = build_model("aeon:minirocket", "classification", seed=0, n_kernels=84)
    X = rng.normal(size=(6, 1, 40))
    assert model.fit(X, np.arange(6) % 2)._prepare(X) is X  # equal length, no NaN: passed unchanged
    cases = [rng.normal(size=(1, n)) for n in (30, 45, 38, 45, 33, 41)]
    cases[1][0, 10] = np.nan
    model.fit(cases, np.arange(6) % 2)
    prepared = model._prepare(cases)
    assert prepared.shape == (6, 1, 45) and not np.isnan(prepared).any()
    assert np.all(prepared[0, 0, 30:] == 0) and prepared[1, 0, 10] == pytest.approx(np.mean(cases[1][0, 9:12:2]))
    longer = model._prepare([rng.normal(size=(1, 60)), rng.normal(size=(1, 20))])
    assert longer.shape == (2, 1, 45)  # cut to the training length
    assert len(model.predict([rng.normal(size=(1, 60)), rng.normal(size=(1, 20))])) == 2
    assert isinstance(model, AeonModel)


def test_aeon_names_come_only_from_the_allow_list():
    assert resolve_model("aeon:MiniRocketRegressor") == "aeon:minirocket"
    with pytest.raises(ValueError, match="did you mean 'aeon:minirocket'"):
        resolve_model("aeon:minirokcet")
    with pytest.raises(ValueError, match="runs only the aeon estimators"):
        resolve_model("aeon:os.system")
    with pytest.raises(ConfigError, match="'aeon:minirocket' takes no"):
        parse_config({"datasets": ["GunPoint"], "models": ["aeon:minirocket"],
                      "model_params": {"aeon:minirocket": {"alpha": 0.5}}})
    cfg = parse_config({"datasets": ["GunPoint"], "models": ["aeon:minirocket", "gru"],
                        "model_params": {"aeon:minirocket": {"n_kernels": 840}}})
    assert cfg.params_for("aeon:minirocket", "GunPoint") == {"n_kernels": 840}


@pytest.mark.parametrize("over,match", [
    ({"published": ["HC3"]}, "did you mean 'HC2'"),
    ({"published_split": "fold1"}, "split must be one of"),
    ({"published_in_ranks": "yes"}, "published_in_ranks must be true or false"),
    ({"data": {"available_offline": 1}}, "available_offline must be true or false"),
    ({"data": {"offline": "/no/such/dir"}, "collections": ["ucr"]}, "not a directory"),
])
def test_published_and_offline_config_keys_are_checked(over, match):
    with pytest.raises(ConfigError, match=match):
        parse_config({"datasets": ["GunPoint"], "models": ["gru"], **over})
