"""The archive benchmark (tsrep.benchmarks, benchmarks/run_archive.py): model registry, configs, the
selection protocol, the results store and resuming, the tables' Avg Rank and Eq. 12, the CLI."""

import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

import tsrep.benchmarks.run as run_mod
from tsrep.benchmarks import ConfigError, parse_config, run_benchmark, write_report
from tsrep.benchmarks.cli import main as cli_main
from tsrep.benchmarks.paper import PAPER_SUMMARY, _TABLE_I, _parse
from tsrep.benchmarks.report import average_ranks, average_relative_difference
from tsrep.models import MODELS, get_model

TINY = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 2, "min_steps": 0, "batch_size": 16}


def tiny_config(**over):
    raw = {
        "name": "tiny",
        "datasets": ["BasicMotions", "CardanoSentiment"],
        "models": ["gru", "dc-transformer"],
        "seeds": [0],
        "params": TINY,
        "data": {"offline": True},
    }
    raw.update(over)
    return raw


# ----------------------------------------------------------------------------- metrics


def test_average_rank_and_eq12_on_a_hand_computed_table():
    # 3 datasets x 3 models, RMSE (lower is better), with a tie on d2.
    scores = pd.DataFrame(
        {"A": [1.0, 4.0, 10.0], "B": [2.0, 4.0, 30.0], "C": [3.0, 1.0, 20.0]}, index=["d1", "d2", "d3"]
    )
    # ranks: d1 A1 B2 C3; d2 A2.5 B2.5 C1; d3 A1 B3 C2 -> A 4.5/3, B 7.5/3, C 6/3
    np.testing.assert_allclose(average_ranks(scores, lower_better=True), [1.5, 2.5, 2.0])
    # accuracy direction: the same numbers ranked the other way
    np.testing.assert_allclose(average_ranks(scores, lower_better=False), [2.5, 1.5, 2.0])
    # Eq. 12: means per dataset 2, 3, 20 -> A: (-1/2 + 1/3 - 1/2) / 3, B: (0 + 1/3 + 1/2) / 3, C: (1/2 - 2/3 + 0) / 3
    np.testing.assert_allclose(
        average_relative_difference(scores), [(-0.5 + 1 / 3 - 0.5) / 3, (0 + 1 / 3 + 0.5) / 3, (0.5 - 2 / 3) / 3]
    )


def test_eq12_reproduces_the_papers_table_i_summary():
    table = _parse(_TABLE_I)
    models = list(PAPER_SUMMARY["regression"]["Avg Rel. diff"])
    scores = pd.DataFrame({m: [table[d][m][0] for d in table] for m in models}, index=list(table))
    ours = average_relative_difference(scores).round(3)
    assert list(ours) == [PAPER_SUMMARY["regression"]["Avg Rel. diff"][m] for m in models]
    ranks = average_ranks(scores, lower_better=True).round(1)
    assert list(ranks) == [5.2, 5.5, 4.5, 4.7, 4.8, 2.3, 1.0]


# ----------------------------------------------------------------------------- registry and configs


def test_every_model_builds_for_both_tasks_and_bad_names_are_clear():
    for name in MODELS:
        for task in ("classification", "regression"):
            est = get_model(name, task, d_model=16)
            assert est.get_params()["d_model"] == 16
    assert get_model("ea-dc-t-no-conv", "regression").beta == 0.0
    assert get_model("EA-DC-T", "classification").alpha == 0.5
    with pytest.raises(ValueError, match="did you mean 'resnet'"):
        get_model("resnt", "classification")
    with pytest.raises(ValueError, match="defined by beta=0.0"):
        get_model("ea-dc-t-no-conv", "classification", beta=0.5)
    with pytest.raises(ValueError, match="takes no parameter 'alpha'"):
        get_model("lstm", "classification", alpha=0.5)


@pytest.mark.parametrize(
    "over,match",
    [
        ({"models": ["gru", "lstmm"]}, "unknown model 'lstmm'.*did you mean 'lstm'"),
        ({"datasets": ["BasicMotion"]}, "did you mean 'BasicMotions'"),
        ({"modles": ["gru"]}, "unknown key 'modles'.*did you mean 'models'"),
        ({"grid": {"d_model": 64}}, "grid.d_model must be a non-empty list"),
        ({"params": {"d_modle": 8}}, "no model takes a parameter 'd_modle'.*did you mean 'd_model'"),
        ({"model_params": {"gru": {"alpha": 0.1}}}, "'gru' takes no"),
        ({"models": ["ea-dc-t-no-conv"], "model_params": {"ea-dc-t-no-conv": {"beta": 0.3}}}, "takes no"),
        ({"seeds": ["zero"]}, "seeds"),
        ({"selection": {"validation_fraction": 1.5}}, "validation_fraction"),
        ({"models": []}, "'models' must be a non-empty list"),
        ({"scheduler": 8786}, "'scheduler' must be a non-empty string"),
        ({"store": ""}, "'store' must be a non-empty string"),
        ({"name": "../../x"}, r"'name' names the output folder results/archive/<name> and must be a single plain "
                              r"folder name .*, got '../../x'"),
        ({"name": ["x"]}, "'name' must be a string, got list"),
        ({"groups": ["BasicMotions"]}, "'groups' must be a mapping"),
        ({"groups": {"mine": []}}, "groups: group 'mine' must be a non-empty list of dataset names"),
        ({"groups": {"mine": ["BasicMotions", "GunPoint", "Nope"]}},
         "groups: group 'mine' has datasets that are not the config's: 'GunPoint', 'Nope'"),
        ({"groups": {"mine": ["BasicMotion"]}}, r"group 'mine' .*'BasicMotion' \(did you mean 'BasicMotions'\?\)"),
    ],
)
def test_malformed_configs_are_clear_errors(over, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(tiny_config(**over))


def test_groups_name_the_configs_datasets_and_keep_those_run_with_datasets_narrowed(tmp_path, capsys):
    groups = {"both": ["basicmotions", "CardanoSentiment", "BasicMotions"], "one": ["CardanoSentiment"]}
    cfg = parse_config(tiny_config(groups=groups))
    assert cfg.groups == {"both": ["BasicMotions", "CardanoSentiment"], "one": ["CardanoSentiment"]}
    assert parse_config(tiny_config()).groups == {}
    # tsrep-benchmark --datasets runs a part of the config: each group keeps what is still run, an empty one goes.
    narrowed = parse_config(tiny_config(datasets=["BasicMotions"], groups=groups), datasets_narrowed=True)
    assert narrowed.groups == {"both": ["BasicMotions"]}
    with pytest.raises(ConfigError, match="group 'one' has datasets that are not the config's: 'Cardano'"):
        parse_config(tiny_config(groups={"one": ["Cardano"]}), datasets_narrowed=True)  # a typo stays an error
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_config(groups=groups)))
    assert cli_main(["--config", str(path), "--datasets", "BasicMotions", "--list", "--out", str(tmp_path)]) == 0
    assert "datasets: BasicMotions" in capsys.readouterr().out


def test_shared_params_apply_only_where_a_model_takes_them():
    cfg = parse_config(tiny_config(models=["lstm", "ea-dc-t-no-skip"], params={**TINY, "alpha": 0.3, "beta": 0.7}))
    assert "alpha" not in cfg.params_for("lstm", "BasicMotions")
    # alpha is the defining parameter of "w/o skip": the shared value never overrides it
    assert cfg.params_for("ea-dc-t-no-skip", "BasicMotions")["beta"] == 0.7
    assert "alpha" not in cfg.params_for("ea-dc-t-no-skip", "BasicMotions")


def test_shipped_configs_parse():
    for name in ("quick", "shipped-paper-budget", "paper"):
        from tsrep.benchmarks import load_config

        cfg = load_config(name)
        assert cfg.models and cfg.datasets
    quick = load_config("quick")
    assert len(quick.datasets) >= 6 and set(quick.models) >= {"lstm", "ea-dc-transformer"}
    assert len(load_config("paper").datasets) == 17


# ----------------------------------------------------------------------------- protocol


def test_grid_is_chosen_on_a_validation_split_of_train_never_on_test(monkeypatch):
    fits, predicts = [], []
    import tsrep.models  # run_cell imports get_model from here at call time

    original = tsrep.models.get_model

    def spying_get_model(*args, **kwargs):
        est = original(*args, **kwargs)
        fit, predict = est.fit, est.predict
        est.fit = lambda X, y: (fits.append(len(X)), fit(X, y))[1]
        est.predict = lambda X: (predicts.append(len(X)), predict(X))[1]
        return est

    monkeypatch.setattr(tsrep.models, "get_model", spying_get_model)
    cfg = parse_config(tiny_config(datasets=["BasicMotions"], models=["gru"], grid={"d_model": [4, 8]}))
    (cell,) = run_mod.make_cells(cfg, "cpu")
    row = run_mod.run_cell(cell)
    assert row["status"] == "ok", row.get("error")
    n_train, n_test, n_val = 40, 40, 8  # BasicMotions; 20 % of TRAIN for selection
    assert fits == [n_train - n_val, n_train - n_val, n_train]  # two candidates, then the refit on TRAIN
    assert predicts == [n_val, n_val, n_test]  # TEST is predicted once, by the refitted model
    assert row["n_candidates"] == 2 and row["params"]["d_model"] in (4, 8)


# ----------------------------------------------------------------------------- store, resume, tables, CLI


def test_tiny_benchmark_stores_resumes_and_writes_tables(tmp_path, monkeypatch):
    cfg = parse_config(tiny_config())
    real = run_mod.run_cell
    calls = []

    def killed_after_two(cell):
        if len(calls) == 2:
            raise KeyboardInterrupt  # the run is killed while the third cell trains
        calls.append(cell.key)
        return real(cell)

    monkeypatch.setattr(run_mod, "run_cell", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(cfg, tmp_path, threads=1, progress=False)
    store = run_mod.ResultStore(tmp_path / "results.sqlite")
    assert len(store.done_keys()) == 2  # both finished cells were written at once

    resumed = []

    def counting(cell):
        resumed.append(cell.key)
        return real(cell)

    monkeypatch.setattr(run_mod, "run_cell", counting)
    store, cells = run_benchmark(cfg, tmp_path, threads=1, progress=False)
    assert len(cells) == 4 and len(resumed) == 2 and not set(resumed) & set(calls)  # only the missing cells
    df = store.frame([c.key for c in cells])
    assert (df["status"] == "ok").all() and len(df) == 4
    assert set(df["metric"]) == {"accuracy", "rmse"} and (df["n_params"] > 0).all()
    # Each cell's test outputs are stored beside it: probabilities (rows summing to 1) or predictions.
    outputs = store.outputs([c.key for c in cells])
    assert set(outputs) == {c.key for c in cells}
    for cell in cells:
        stored = outputs[cell.key]
        if cell.task == "classification":
            assert stored["outputs"].shape == (len(stored["targets"]), len(stored["classes"]))
            np.testing.assert_allclose(stored["outputs"].sum(axis=1), 1.0, atol=1e-5)
        else:
            assert stored["classes"] is None and stored["outputs"].shape == (len(stored["targets"]),)
    resumed.clear()
    run_benchmark(cfg, tmp_path, threads=1, progress=False)
    assert resumed == []  # everything done: nothing runs

    # A changed config is a different cell: nothing stale is reused.
    changed = parse_config(tiny_config(params={**TINY, "max_epochs": 1}))
    assert not {c.key for c in run_mod.make_cells(changed)} & store.done_keys()

    report = write_report(df, cfg.models, cfg.datasets, tmp_path / "report", plots=False)
    md = report["markdown"]
    assert "| BasicMotions |" in md and "| CardanoSentiment |" in md
    assert "Avg Rank (over 1 datasets)" in md and "Avg Rel. diff" in md and "Avg Accuracy" in md
    assert "Avg fit+predict s (over 1 datasets)" in md  # cost beside quality
    csv = pd.read_csv(tmp_path / "report" / "regression.csv")
    assert {"gru", "gru_n_params", "dc-transformer_paper"} <= set(csv.columns)


def test_cli_runs_a_config_file_and_draws_pictures(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    raw = tiny_config(datasets=["ItalyPowerDemand", "BasicMotions", "CardanoSentiment"],
                      models=["gru", "resnet", "dilated-conv"], params={**TINY, "max_epochs": 1})
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert cli_main(["--config", str(path), "--out", str(out), "--quiet", "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    assert "9/9 cells done" in printed and "| ItalyPowerDemand |" in printed
    for name in ("tables.md", "classification.csv", "regression.md", "cells.csv", "cd_classification.png",
                 "bar_classification.png", "bar_regression.png"):
        assert (out / name).is_file(), name
    # Bad input on the command line: clear errors, exit status 2.
    assert cli_main(["--config", "no-such-config"]) == 2
    assert "no config named 'no-such-config'" in capsys.readouterr().err
    assert cli_main(["--config", str(path), "--models", "lsmt", "--out", str(out)]) == 2
    assert "did you mean 'lstm'" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [gru\n")
    assert cli_main(["--config", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../../escaped", "ABSOLUTE", "..", "sub/dir", ""])
def test_a_config_name_that_is_not_one_folder_name_writes_nothing_outside_results_archive(name, tmp_path, monkeypatch,
                                                                                         capsys):
    # The name is the folder results/archive/<name> of the tables, cells.csv and results.sqlite.
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    name = str(tmp_path / "escaped") if name == "ABSOLUTE" else name
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(tiny_config(name=name, datasets=["BasicMotions"], models=["gru"],
                                               params={**TINY, "max_epochs": 1})))
    assert cli_main(["--config", str(path), "--quiet", "--no-plots", "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert err == ("tsrep-benchmark: error: 'name' names the output folder results/archive/<name> and must be a "
                   "single plain folder name (not empty, no '/' or '\\', not '.' or '..', not an absolute path), "
                   f"got {name!r}\n")
    assert list(work.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["cfg.yaml", "work"]
    # A folder chosen with --out may be anywhere; the name stays a name.
    ok = tiny_config(name="tiny", datasets=["BasicMotions"], models=["gru"], params={**TINY, "max_epochs": 1})
    path.write_text(yaml.safe_dump(ok))
    assert cli_main(["--config", str(path), "--out", str(tmp_path / "elsewhere"), "--list"]) == 0


def test_parallel_jobs_store_every_cell_and_hide_lokys_note_on_a_replaced_worker(tmp_path, monkeypatch):
    # loky notes a worker it replaced between two cells in the benchmark's own process, while rows are being
    # recorded; that note is hidden (no cell is lost when it happens), any other warning still shows.
    write = run_mod.ResultStore.write

    def noisy_write(self, row):
        warnings.warn(run_mod.LOKY_RECYCLED_WORKER + ". This can be caused by a too short worker timeout or by a "
                      "memory leak.", UserWarning)
        warnings.warn("another note", UserWarning)
        return write(self, row)

    monkeypatch.setattr(run_mod.ResultStore, "write", noisy_write)
    cfg = parse_config(tiny_config(params={**TINY, "max_epochs": 1}))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        store, cells = run_benchmark(cfg, tmp_path, jobs=2, threads=1, progress=False)
    df = store.frame([c.key for c in cells])
    assert len(df) == 4 and (df["status"] == "ok").all()
    messages = [str(w.message) for w in seen]
    assert messages.count("another note") == 4
    assert not any(m.startswith(run_mod.LOKY_RECYCLED_WORKER) for m in messages)


# ----------------------------------------------------------------------------- seed ensembles


def _stored_cell(key, dataset, task, seed, targets, outputs, classes=None):
    return {"key": key, "config": "hand", "dataset": dataset, "model": "resnet", "seed": seed, "task": task,
            "metric": "accuracy" if task == "classification" else "rmse", "status": "ok", "n_params": 10,
            "seconds": 2.0, "score": 0.0, "targets": targets, "classes": classes, "outputs": np.asarray(outputs)}


def test_seed_ensembles_average_the_stored_outputs_of_the_seeds(tmp_path):
    from tsrep.benchmarks.report import seed_ensembles

    store = run_mod.ResultStore(tmp_path / "results.sqlite")
    targets = ["a", "b", "a"]
    # Seed 0 predicts a, a, b (1/3 right), seed 1 b, b, a (2/3); their mean probabilities a, b, a (3/3).
    store.write(_stored_cell("c0", "D", "classification", 0, targets, [[.9, .1], [.6, .4], [.4, .6]], ["a", "b"]))
    store.write(_stored_cell("c1", "D", "classification", 1, targets, [[.4, .6], [.1, .9], [.9, .1]], ["a", "b"]))
    # Regression: each seed is off by 1 everywhere, in opposite directions; their mean is exact.
    store.write(_stored_cell("r0", "R", "regression", 0, [2.0, 4.0], [1.0, 3.0]))
    store.write(_stored_cell("r1", "R", "regression", 1, [2.0, 4.0], [3.0, 5.0]))
    # A lone seed is no ensemble.
    store.write(_stored_cell("s0", "S", "regression", 0, [1.0], [1.0]))
    df = store.frame()
    ens = seed_ensembles(df, store.outputs()).set_index("dataset")
    assert set(ens.index) == {"D", "R"}
    assert ens.at["D", "score"] == 1.0 and ens.at["R", "score"] == 0.0
    assert ens.at["D", "n_seeds"] == 2 and ens.at["D", "n_params"] == 20 and ens.at["D", "seconds"] == 4.0
    report = write_report(df, ["resnet"], ["D", "R", "S"], tmp_path / "report", plots=False, outputs=store.outputs())
    assert "### Seed ensembles (classification)" in report["markdown"]
    assert (tmp_path / "report" / "regression_seed_ensembles.csv").is_file()
    assert "outputs" not in pd.read_csv(tmp_path / "report" / "cells.csv").columns  # no whole test sets there
    # Seeds scored on different test targets (another data version) are not averaged.
    store.write(_stored_cell("r1", "R", "regression", 1, [2.0, 5.0], [3.0, 5.0]))
    assert "R" not in set(seed_ensembles(store.frame(), store.outputs())["dataset"])
    # A rerun of a cell that stores no outputs leaves none of the earlier run's behind.
    store.write({**_stored_cell("c1", "D", "classification", 1, targets, [[1, 0]] * 3, ["a", "b"]), "outputs": None})
    assert "c1" not in store.outputs() and "c1" in set(store.frame()["key"])


def test_a_store_written_before_outputs_were_kept_opens_and_keeps_its_cells(tmp_path):
    import sqlalchemy as sa

    from tsrep.benchmarks.store import COLUMNS

    path = tmp_path / "results.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    old = sa.Table("cells", sa.MetaData(), *(sa.Column(n, k, primary_key=n == "key") for n, k in COLUMNS))
    old.metadata.create_all(engine)
    with engine.begin() as db:
        db.execute(sa.insert(old).values(key="k", dataset="GunPoint", model="resnet", seed=0, task="classification",
                                         status="ok", score=0.9))
    engine.dispose()
    store = run_mod.ResultStore(path)
    assert store.done_keys() == {"k"} and store.outputs() == {}
    report = write_report(store.frame(), ["resnet"], ["GunPoint"], tmp_path / "report", plots=False,
                          outputs=store.outputs())
    assert "| GunPoint |" in report["markdown"] and "Seed ensembles" not in report["markdown"]


# ----------------------------------------------------------------------------- means by group

EA, MR = "ea-dc-transformer", "aeon:minirocket"
# Hand-made cells (dataset, model, seed, score, seconds; score None: the cell failed), no training. MiniROCKET's
# published fold0 accuracies: GunPoint 0.993333, ItalyPowerDemand 0.963071, Coffee 1.0, Car 0.916667, none for
# AllGestureWiimoteX (unequal length); Covid3Month is a regression problem.
HAND_CELLS = [("GunPoint", EA, 0, 0.90, 10.0), ("GunPoint", EA, 1, 0.98, 20.0), ("GunPoint", MR, 0, 0.99, 1.0),
              ("ItalyPowerDemand", EA, 0, 0.96, 4.0), ("ItalyPowerDemand", MR, 0, 0.95, 2.0),
              ("Coffee", EA, 0, None, 7.0), ("Coffee", MR, 0, 1.0, 1.0),
              ("Car", EA, 0, 0.80, 30.0), ("Car", MR, 0, 0.90, 3.0),
              ("AllGestureWiimoteX", EA, 0, 0.70, 50.0), ("AllGestureWiimoteX", MR, 0, 0.75, 5.0),
              ("Covid3Month", EA, 0, 0.05, 6.0), ("Covid3Month", MR, 0, 0.04, 1.0)]
HAND_DATASETS = list(dict.fromkeys(c[0] for c in HAND_CELLS))
HAND_GROUPS = {"panel": ["GunPoint", "ItalyPowerDemand", "Coffee"],
               "off-panel": ["Car", "AllGestureWiimoteX", "Covid3Month"],
               "off-panel equal-length": ["Car", "Covid3Month"]}


def _hand_report(tmp_path, folder, **kwargs):
    store = run_mod.ResultStore(tmp_path / "results.sqlite")
    for dataset, model, seed, value, seconds in HAND_CELLS:
        task = "regression" if dataset == "Covid3Month" else "classification"
        store.write({"key": f"{dataset}/{model}/{seed}", "config": "hand", "dataset": dataset, "model": model,
                     "seed": seed, "task": task, "metric": "rmse" if task == "regression" else "accuracy",
                     "status": "error" if value is None else "ok", "score": value, "n_params": 1000,
                     # a fixed time: two reports written a second apart must not differ by it
                     "seconds": seconds, "finished_at": "2026-01-01 00:00:00"})
    return write_report(store.frame(), [EA, MR], HAND_DATASETS, tmp_path / folder, plots=False,
                        published=["MiniROCKET"], references={"GunPoint": 0.5}, **kwargs)


def _markdown_rows(markdown: str, header: str) -> dict:
    """{first cell: other cells} of the table of `markdown` whose header row starts with `header`."""
    table = markdown[markdown.index(f"| {header}"):].split("\n\n")[0]
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table.splitlines()}


def test_means_by_group_average_the_datasets_where_every_column_has_a_score(tmp_path):
    report = _hand_report(tmp_path, "report", groups=HAND_GROUPS)
    rows = _markdown_rows(report["markdown"], "Means by group (accuracy)")
    assert rows["Means by group (accuracy)"] == ["Datasets", "EA-DC-T", "MiniRocket", "MiniROCKET†", "EA-DC-T s",
                                                 "MiniRocket s"]
    # panel: Coffee has no EA-DC-T score (its cell failed), so GunPoint (EA-DC-T's seeds 0.90, 0.98: 0.94; 15 s)
    # and ItalyPowerDemand count. off-panel: AllGestureWiimoteX has no published figure, Covid3Month is regression.
    assert rows["panel"] == ["2 of 3", "0.950", "0.970", f"{(0.993333 + 0.963071) / 2:.3f}", "9.5", "1.5"]
    assert rows["off-panel"] == ["1 of 2", "0.800", "0.900", "0.917", "30.0", "3.0"]
    assert rows["off-panel equal-length"] == ["1", "0.800", "0.900", "0.917", "30.0", "3.0"]
    assert "'n of N': n of the group's N datasets counted" in report["markdown"]
    # Regression: the mean RMSE; the panel has no regression problem, so no row.
    rows = _markdown_rows(report["markdown"], "Means by group (RMSE)")
    assert rows["off-panel"] == rows["off-panel equal-length"] == ["1", "0.05", "0.04", "6.0", "1.0"]
    assert "panel" not in rows
    means = pd.read_csv(tmp_path / "report" / "classification_groups.csv").set_index("group")
    assert means.loc["panel", EA] == pytest.approx(0.95)
    assert means.loc["panel", "published:MiniROCKET"] == pytest.approx((0.993333 + 0.963071) / 2)
    assert means.loc["panel", ["datasets_counted", "datasets_in_group"]].tolist() == [2, 3]
    assert means.loc["off-panel", f"{MR}_seconds"] == pytest.approx(3.0)
    assert (tmp_path / "report" / "classification.md").read_text().count("| panel | 2 of 3 |") == 1


def test_a_report_without_groups_is_the_same_as_before_groups_existed(tmp_path):
    plain = _hand_report(tmp_path, "plain")
    grouped = _hand_report(tmp_path, "grouped", groups=HAND_GROUPS)
    written = {f.name for f in plain["files"]}
    assert written == {"cells.csv", "tables.md", "classification.md", "classification.csv", "regression.md",
                       "regression.csv"}
    assert {f.name for f in grouped["files"]} == written | {"classification_groups.csv", "regression_groups.csv"}
    for name in ("cells.csv", "classification.csv", "regression.csv"):  # the groups add files, change none
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "grouped" / name).read_bytes()
    # Written by the report as it was before groups (one line per row; the footnote is cut for the line length).
    assert plain["markdown"] == (
        "## Classification (accuracy, higher is better)\n\n"
        "| Dataset (accuracy / #params) | EA-DC-T | MiniRocket | MiniROCKET† | Majority class |\n"
        "|---|---|---|---|---|\n"
        "| GunPoint | 0.940 ± 0.057 / 1 k | 0.990 / 1 k | 0.993 | 0.500 |\n"
        "| ItalyPowerDemand | 0.960 / 1 k | 0.950 / 1 k | 0.963 | n/a |\n"
        "| Coffee | n/a | 1.000 / 1 k | 1.000 | n/a |\n"
        "| Car | 0.800 / 1 k | 0.900 / 1 k | 0.917 | n/a |\n"
        "| AllGestureWiimoteX | 0.700 / 1 k | 0.750 / 1 k | n/a | n/a |\n"
        "| Avg Rank (over 4 datasets) | 1.75 | 1.25 |  |  |\n"
        "| Avg Accuracy (over 4 datasets) | 0.850 | 0.897 | n/a |  |\n"
        "| Avg fit+predict s (over 4 datasets) | 24.8 | 2.8 |  |  |\n\n"
        "† Published test accuracy of methods not run here, on the archive's own TRAIN/TEST split (fold0): "
        "Middlehurst, Schäfer, Bagnall, \"Bake off redux: a review and experimental evaluation of recent time series "
        "classification algorithms\", Data Mining and Knowledge Discovery 38 (2024); result files of tsml-eval. Not "
        "counted in the ranks or the critical-difference diagram; their mean accuracy over the same datasets is "
        "shown (n/a where the study has no figure for one of them).\n\n"
        "## Regression (RMSE, lower is better)\n\n"
        "| Dataset (RMSE / #params) | EA-DC-T | MiniRocket | Train mean |\n"
        "|---|---|---|---|\n"
        "| Covid3Month | 0.05 / 1 k | 0.04 / 1 k | n/a |\n"
        "| Avg Rank (over 1 datasets) | 2.00 | 1.00 |  |\n"
        "| Avg Rel. diff (over 1 datasets) | 0.111 | -0.111 |  |\n"
        "| Avg fit+predict s (over 1 datasets) | 6.0 | 1.0 |  |\n\n"
        "Failed cells (run again to retry): Coffee/ea-dc-transformer/seed 0\n"
    )
    # With groups, the same text with the group tables inserted after each task's table.
    blocks = grouped["markdown"].split("\n\n")
    kept = [b for i, b in enumerate(blocks) if not b.startswith("| Means by group")
            and not (i and blocks[i - 1].startswith("| Means by group"))]
    assert "\n\n".join(kept) == plain["markdown"]


# ----------------------------------------------------------------------------- progress inside a cell


def test_a_cell_prints_progress_lines_of_its_fits_and_none_when_quiet(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_config(datasets=["BasicMotions"], models=["dc-transformer", "gru"])))
    args = ["--config", str(path), "--threads", "1", "--no-plots"]
    assert cli_main([*args, "--out", str(tmp_path / "loud")]) == 0
    lines = re.split(r"[\r\n]+", capsys.readouterr().err)  # the bar redraws itself after a carriage return
    for model in ("dc-transformer", "gru"):
        assert any(re.match(rf"BasicMotions / {model} / seed 0: epoch 1/2, train loss \d", x) for x in lines), lines
    assert cli_main([*args, "--out", str(tmp_path / "quiet"), "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "epoch" not in printed.err and "epoch" not in printed.out


def test_progress_lines_come_after_the_first_epoch_then_every_interval(monkeypatch, capsys):
    # What keeps a cell of many minutes from looking stuck: a line at once, then one every `interval` seconds.
    now = [0.0]
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: now[0])
    progress = run_mod.CellProgress("GunPoint / ea-dc-transformer / seed 0", interval=30)
    progress.on_fit_start({"epochs": 800, "start_epoch": 0, "phase": "train", "member": None})
    shown = []
    for epoch, seconds in enumerate([0.5, 10, 29, 31, 45, 60.5, 61, 95]):
        now[0] = seconds
        progress.on_epoch_end(epoch, {"train_loss": 0.5, "val_score": 0.75, "lr": 1e-3, "seconds": 0.5})
        if capsys.readouterr().err:
            shown.append(seconds)
    assert shown == [0.5, 31, 61, 95]
    now[0] = 96
    progress.on_epoch_end(8, {"train_loss": 0.25})
    progress.on_fit_start({"epochs": 20, "start_epoch": 0, "phase": "pretrain", "member": 1})
    progress.on_epoch_end(0, {"train_loss": 0.125})
    assert capsys.readouterr().err.splitlines() == [
        "GunPoint / ea-dc-transformer / seed 0 (ensemble member 2): pretraining epoch 1/20, train loss 0.125, 0 s"]


def test_progress_lines_of_worker_processes_reach_the_terminal(tmp_path):
    # With --jobs the cells train in joblib's worker processes, whose standard error is the command's.
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_config(datasets=["BasicMotions"], models=["dc-transformer", "gru"])))
    done = subprocess.run(
        [sys.executable, "-m", "tsrep.benchmarks.cli", "--config", str(path), "--out", str(tmp_path / "out"),
         "--jobs", "2", "--threads", "1", "--no-plots"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    for model in ("dc-transformer", "gru"):
        assert re.search(rf"BasicMotions / {model} / seed 0: epoch 1/2, train loss \d", done.stderr), done.stderr


def test_a_tsrep_cell_after_an_aeon_minirocket_cell_computes_as_it_does_alone(tmp_path):
    # aeon's numba models reset the OpenMP threads torch runs on: the runner sets torch's threads before every
    # cell, so a cell's result does not depend on what ran before it in the process (measured: 7.5e-5 apart).
    tiny = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 2, "min_steps": 0, "batch_size": 8,
            "blend_minirocket": False}

    def network_outputs(models, out):
        config = parse_config({"name": "threads", "datasets": ["BasicMotions"], "models": models, "seeds": [0],
                               "params": tiny, "data": {"offline": True}})
        store, cells = run_benchmark(config, out, threads=1, progress=False)
        assert [c.model for c in cells] == models  # the MiniRocket cell runs first
        (cell,) = [c for c in cells if c.model == "ea-dc-transformer"]
        return np.asarray(store.outputs([cell.key])[cell.key]["outputs"])

    alone = network_outputs(["ea-dc-transformer"], tmp_path / "alone")
    after = network_outputs(["aeon:minirocket", "ea-dc-transformer"], tmp_path / "after")
    np.testing.assert_array_equal(after, alone)
