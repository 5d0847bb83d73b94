"""Named variants of a model in a benchmark config (``variants:``): parsing and its errors, the parameters of a
variant's cells, their keys beside the unchanged keys of the models' own cells, and a tiny run of a model beside a
variant of it through run_benchmark, write_report and tsrep-benchmark."""

from __future__ import annotations

import json
import pickle

import pandas as pd
import pytest
import yaml

import tsrep.benchmarks.registry as registry
import tsrep.benchmarks.run as run_mod
from tsrep.benchmarks import ConfigError, parse_config, run_benchmark, write_report
from tsrep.benchmarks.cli import main as cli_main
from tsrep.benchmarks.registry import estimator_fingerprint
from tsrep.benchmarks.store import cell_key

TINY = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 2, "min_steps": 0, "batch_size": 16}
WIDE = {"model": "gru", "params": {"d_model": 16}, "label": "GRU wide"}


def config(**over):
    raw = {
        "name": "variants",
        "datasets": ["BasicMotions"],
        "models": ["gru", "gru-wide"],
        "variants": {"gru-wide": dict(WIDE)},
        "seeds": [0],
        "params": TINY,
        "data": {"offline": True},
    }
    raw.update(over)
    return raw


def with_variant(**entry):
    """config() whose variant 'gru-wide' is `entry` over WIDE (a key given None is left out)."""
    merged = {k: v for k, v in {**WIDE, **entry}.items() if v is not None}
    return config(variants={"gru-wide": merged})


# ----------------------------------------------------------------------------- parsing


def test_a_variant_is_a_registered_model_with_parameters_and_a_label_of_its_own():
    cfg = parse_config(config(
        models=["gru", "GRU-Wide", "ea-dc-transformer", "ea-dc-t-inception"],  # names are case-insensitive
        variants={"gru-wide": dict(WIDE),
                  "ea-dc-t-inception": {"model": "EA-DC-T", "params": {"stem_kind": "inception", "stem_skip": True}}},
        model_params={"gru-wide": {"n_blocks": 2}},
    ))
    assert cfg.models == ["gru", "gru-wide", "ea-dc-transformer", "ea-dc-t-inception"]
    inception = cfg.variants["ea-dc-t-inception"]
    assert (inception.model, inception.params) == ("ea-dc-transformer", {"stem_kind": "inception", "stem_skip": True})
    assert cfg.base_model("ea-dc-t-inception") == "ea-dc-transformer" and cfg.base_model("gru") == "gru"
    # The label given, else the model's label with the variant's name.
    assert cfg.labels() == {"gru-wide": "GRU wide", "ea-dc-t-inception": "EA-DC-T (ea-dc-t-inception)"}
    assert [cfg.label(m) for m in cfg.models] == ["GRU", "GRU wide", "EA-DC-T", "EA-DC-T (ea-dc-t-inception)"]
    assert cfg.model_params == {"gru-wide": {"n_blocks": 2}}


def test_a_variant_not_listed_in_models_is_checked_but_not_run():
    cfg = parse_config(config(models=["gru"]))
    assert [c.model for c in run_mod.make_cells(cfg)] == ["gru"]
    assert "gru-wide" in cfg.variants
    with pytest.raises(ConfigError, match=r"variants\.gru-wide\.params: 'gru' takes no \(free\) parameter 'd_modle'"):
        parse_config({**with_variant(params={"d_modle": 16}), "models": ["gru"]})


@pytest.mark.parametrize("raw, match", [
    # a name that a registered model already has, or one of its aliases
    (config(variants={"gru": {"model": "lstm"}}), r"variants\.gru: 'gru' is already the name of the model 'gru'"),
    (config(variants={"EA-DC-T": {"model": "gru"}}),
     r"variants\.EA-DC-T: 'EA-DC-T' is already the name of the model 'ea-dc-transformer'"),
    (config(variants={"aeon:x": {"model": "gru"}}), r"variants: a variant's name must be letters.*'aeon:x'"),
    (config(variants={"gru-wide": dict(WIDE), "GRU-WIDE": {"model": "gru"}}),
     r"variants\.GRU-WIDE: a second variant of the name"),
    # its model must resolve to a registered model
    (with_variant(model="gur"), r"variants\.gru-wide\.model: unknown model 'gur' \(did you mean 'gru'"),
    (with_variant(model="aeon:minirockit"), r"variants\.gru-wide\.model: unknown aeon estimator 'aeon:minirockit'"),
    (with_variant(model=None), r"variants\.gru-wide: no 'model'"),
    (config(variants={"gru-wide": dict(WIDE), "gru-wider": {"model": "gru-wide"}}, models=["gru"]),
     r"variants\.gru-wider\.model: 'gru-wide' is a variant"),
    # its params are checked against the model's, as model_params are
    (with_variant(params={"d_modle": 16}),
     r"variants\.gru-wide\.params: 'gru' takes no \(free\) parameter 'd_modle' \(did you mean 'd_model'\?\)"),
    (with_variant(params={"alpha": 0.5}), r"variants\.gru-wide\.params: 'gru' takes no \(free\) parameter 'alpha'"),
    (config(models=["ea-dc-t-no-conv", "nc"], variants={"nc": {"model": "ea-dc-t-no-conv", "params": {"beta": 0.5}}}),
     r"variants\.nc\.params: 'ea-dc-t-no-conv' takes no \(free\) parameter 'beta'"),  # its defining parameter
    (with_variant(params=[16]), r"variants\.gru-wide\.params must be a mapping"),
    # the entry itself
    (with_variant(parms={"d_model": 16}),
     r"variants\.gru-wide: unknown key 'parms' \(did you mean 'params'\?\); known keys: model, params, label"),
    (config(variants={"gru-wide": "gru"}), r"variants\.gru-wide must be a mapping with 'model'"),
    (config(variants=["gru-wide"]), r"'variants' must be a mapping"),
    (with_variant(label="GRU"), r"variants\.gru-wide\.label: 'GRU' is also the header of 'gru'"),
    (with_variant(label=""), r"variants\.gru-wide\.label must be a non-empty string"),
    # its name elsewhere: model_params, model_grid and models
    (config(model_params={"gru-wide": {"alpah": 0.1}}),
     r"model_params\.gru-wide: 'gru' takes no \(free\) parameter 'alpah'"),
    (config(model_grid={"gru-wide": {"d_modle": [8, 16]}}),
     r"model_grid\.gru-wide: 'gru' takes no \(free\) parameter 'd_modle' \(did you mean 'd_model'\?\)"),
    (config(models=["gru"], model_params={"gru-wide": {"n_blocks": 2}}),
     r"model_params\.gru-wide: model 'gru-wide' is not in 'models'"),
    (config(models=["gru", "gru-wid"]), r"models: unknown model or variant 'gru-wid' \(did you mean 'gru-wide'\?\)"),
    # every cell must build: a bad value names the variant
    (with_variant(params={"d_model": -8}), r"variant 'gru-wide' of 'gru' on BasicMotions: .*d_model"),
])
def test_malformed_variants_are_config_errors_naming_the_problem(raw, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(raw)


# ----------------------------------------------------------------------------- parameters and keys


def test_a_variants_parameters_shared_then_dataset_then_its_own_then_model_params():
    cfg = parse_config(config(
        datasets=["BasicMotions", "ERing"],
        models=["ea-dc-transformer", "eadc-wide", "gru", "gru-wide"],
        variants={"eadc-wide": {"model": "ea-dc-transformer", "params": {"d_model": 32, "p": 0.5, "alpha": 0.2}},
                  "gru-wide": dict(WIDE)},
        params={"max_epochs": 5, "d_model": 8, "n_blocks": 1, "beta": 0.9},
        dataset_params={"BasicMotions": {"max_epochs": 4, "d_model": 16}},
        model_params={"eadc-wide": {"p": 0.25}, "ea-dc-transformer": {"alpha": 0.9}},
        grid={"n_blocks": [1, 2], "beta": [0.1, 0.5]},
        model_grid={"eadc-wide": {"alpha": [0.1, 0.3]}, "ea-dc-transformer": {"n_heads": [1, 2]}},
    ))
    # dataset_params over params, the variant's params over both, model_params.<variant> over all; the model's
    # own model_params (alpha 0.9) are its row's settings, not the variant's.
    assert cfg.params_for("eadc-wide", "BasicMotions") == {"max_epochs": 4, "d_model": 32, "n_blocks": 1,
                                                           "beta": 0.9, "p": 0.25, "alpha": 0.2}
    assert cfg.params_for("eadc-wide", "ERing") == {**cfg.params_for("eadc-wide", "BasicMotions"), "max_epochs": 5}
    assert cfg.params_for("ea-dc-transformer", "BasicMotions") == {"max_epochs": 4, "d_model": 16, "n_blocks": 1,
                                                                   "beta": 0.9, "alpha": 0.9}
    # Shared params and grid reach a variant only where its model takes them (a GRU has no beta).
    assert cfg.params_for("gru-wide", "ERing") == {"max_epochs": 5, "d_model": 16, "n_blocks": 1}
    assert cfg.grid_for("eadc-wide") == {"n_blocks": [1, 2], "beta": [0.1, 0.5], "alpha": [0.1, 0.3]}
    assert cfg.grid_for("gru-wide") == {"n_blocks": [1, 2]}
    cells = {(c.dataset, c.model): c for c in run_mod.make_cells(cfg)}
    wide = cells["BasicMotions", "eadc-wide"]
    assert (wide.base, wide.estimator_model) == ("ea-dc-transformer", "ea-dc-transformer")
    assert wide.params == cfg.params_for("eadc-wide", "BasicMotions") and wide.grid == cfg.grid_for("eadc-wide")


def plain_spec(cell) -> dict:
    """A model's own cell's spec: what it was before variants existed, and the estimator's fingerprint."""
    return {"dataset": cell.dataset, "model": cell.model, "seed": cell.seed, "task": cell.task, "params": cell.params,
            "grid": cell.grid, "validation_fraction": cell.validation_fraction, "refit": cell.refit,
            "estimator": estimator_fingerprint(cell.model, cell.task, cell.params)}


def test_a_models_cells_keep_their_keys_and_a_variants_cells_have_their_own():
    without = run_mod.make_cells(parse_config(config(models=["gru"], variants={}, seeds=[0, 1])))
    cells = run_mod.make_cells(parse_config(config(seeds=[0, 1])))
    gru = [c for c in cells if c.model == "gru"]
    # A model's cells are the same cells with or without variants in the config (stored results stay valid).
    assert [c.key for c in gru] == [c.key for c in without]
    for cell in gru:
        assert cell.base is None and cell.spec() == plain_spec(cell) and cell.key == cell_key(plain_spec(cell))
    wide = [c for c in cells if c.model == "gru-wide"]
    assert [c.spec()["base"] for c in wide] == ["gru", "gru"]
    assert len({c.key for c in cells}) == len(cells) == 4
    # A variant with the model's own parameters is still a cell of its own (stored and reported apart).
    same = run_mod.make_cells(parse_config(with_variant(params={})))
    assert same[0].params == same[1].params and same[0].key != same[1].key
    # The cell travels to Dask workers and joblib processes by pickle: its model and key arrive intact.
    travelled = pickle.loads(pickle.dumps(wide[0]))
    assert (travelled.base, travelled.estimator_model, travelled.key) == ("gru", "gru", wide[0].key)


# ----------------------------------------------------------------------------- a tiny run


@pytest.fixture
def built(monkeypatch):
    """[(registered model, parameters, estimator)] of every estimator the cells build to fit (run_cell imports
    build_model from the registry at call time; the cells' keys build one without a seed, not recorded)."""
    made = []
    real = registry.build_model

    def spying_build_model(name, task, seed=None, device=None, **params):
        estimator = real(name, task, seed=seed, device=device, **params)
        if seed is not None:
            made.append((name, params, estimator))
        return estimator

    monkeypatch.setattr(registry, "build_model", spying_build_model)
    return made


def test_a_model_and_its_variant_run_as_separate_cells_rows_and_columns(tmp_path, monkeypatch, built, capsys):
    out = tmp_path / "out"
    # The model alone first, as a store written before the variant was added to the config holds it.
    run_benchmark(parse_config(config(models=["gru"], variants={}, seeds=[0, 1])), out, threads=1, progress=False)
    built.clear()
    ran = []
    real_run_cell = run_mod.run_cell
    monkeypatch.setattr(run_mod, "run_cell", lambda cell: (ran.append(cell.model), real_run_cell(cell))[1])
    cfg = parse_config(config(seeds=[0, 1]))
    store, cells = run_benchmark(cfg, out, threads=1, progress=False)
    assert ran == ["gru-wide", "gru-wide"]  # the model's cells were stored already: only the variant's run
    # The variant's estimators are the registered model's, with its parameter over the shared one.
    assert [(name, params["d_model"]) for name, params, _ in built] == [("gru", 16), ("gru", 16)]
    assert all(type(est).__name__ == "BackboneClassifier" and est.d_model == 16 for _, _, est in built)

    keys = [c.key for c in cells]
    df = store.frame(keys)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert df.groupby("model").size().to_dict() == {"gru": 2, "gru-wide": 2}
    by_model = df.set_index(["model", "seed"])
    stored = {model: json.loads(by_model.loc[(model, 0), "params"]) for model in ("gru", "gru-wide")}
    assert (stored["gru"]["d_model"], stored["gru-wide"]["d_model"]) == (8, 16)
    assert by_model.loc[("gru-wide", 0), "n_params"] > by_model.loc[("gru", 0), "n_params"]  # a wider network

    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the report's pictures to read their legends
    report = write_report(df, cfg.models, cfg.datasets, tmp_path / "report", outputs=store.outputs(keys),
                          groups={"all": ["BasicMotions"]}, labels=cfg.labels())
    md = report["markdown"]
    assert "| Dataset (accuracy / #params) | GRU | GRU wide |" in md
    assert md.count("| Dataset (accuracy / #params) | GRU | GRU wide |") == 2  # the seed ensembles' table too
    assert md.count("| Means by group (accuracy) | Datasets | GRU | GRU wide | GRU s | GRU wide s |") == 2
    assert [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()] == ["GRU", "GRU wide"]
    table = pd.read_csv(tmp_path / "report" / "classification.csv")
    assert {"gru", "gru-wide", "gru_n_params", "gru-wide_n_params"} <= set(table.columns)
    assert table.loc[0, "gru-wide_n_params"] == pytest.approx(by_model.loc[("gru-wide", 0), "n_params"])

    # The command line: --models takes the variant's name, --list shows the variants, the tables their labels.
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump(config(seeds=[0, 1])))
    assert cli_main(["--config", str(path), "--out", str(out), "--models", "GRU-WIDE", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "gru-wide             GRU wide: gru with d_model=16" in listed
    assert "variants: 1 datasets x 1 models x 2 seeds = 2 cells" in listed
    assert cli_main(["--config", str(path), "--out", str(out), "--report-only", "--no-plots", "--quiet"]) == 0
    assert "4/4 cells done" in capsys.readouterr().out
    assert "| Dataset (accuracy / #params) | GRU | GRU wide |" in (out / "tables.md").read_text()


def test_a_variant_of_an_aeon_estimator_gets_no_progress_callbacks(built):
    # aeon's estimators take no callbacks: the progress check looks at the registered model, not the name.
    cfg = parse_config(config(models=["mr-84"], variants={"mr-84": {"model": "aeon:minirocket",
                                                                     "params": {"n_kernels": 84}}}))
    (cell,) = run_mod.make_cells(cfg)
    row = run_mod.run_cell(cell, progress=True)
    assert row["status"] == "ok", row.get("error")
    assert row["model"] == "mr-84" and row["spec"]["base"] == "aeon:minirocket"
    ((name, params, estimator),) = built
    assert name == "aeon:minirocket" and "callbacks" not in params and estimator.estimator.n_kernels == 84


def test_a_variants_cells_run_on_a_dask_cluster_as_here(tmp_path):
    from distributed import LocalCluster

    cfg = parse_config(config(models=["aeon:minirocket", "mr-84"],
                              variants={"mr-84": {"model": "aeon:minirocket", "params": {"n_kernels": 84}}}))
    here, cells = run_benchmark(cfg, tmp_path / "here", threads=1, progress=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        there, _ = run_benchmark(cfg, tmp_path / "there", scheduler=cluster.scheduler_address, threads=1,
                                 progress=True)
    columns = ["key", "model", "status", "score", "n_params"]
    on_cluster = there.frame([c.key for c in cells])[columns].sort_values("key").reset_index(drop=True)
    assert on_cluster.equals(here.frame([c.key for c in cells])[columns].sort_values("key").reset_index(drop=True))
    assert sorted(on_cluster["model"]) == ["aeon:minirocket", "mr-84"] and (on_cluster["status"] == "ok").all()
    assert on_cluster.set_index("model").loc["mr-84", "n_params"] < on_cluster.set_index("model").loc[
        "aeon:minirocket", "n_params"]  # 84 kernels' features against the default's 10,000
