"""A benchmark cell's key names the estimator as it would be fitted, not only the config's parameters: its
defaults, its package's version and (for tsrep's models) the "auto" rules, so that a stored cell is never
reused by an estimator that would compute it differently (tsrep.benchmarks.registry.estimator_fingerprint)."""

import json
import warnings

import pytest

import tsrep
import tsrep.benchmarks.registry as registry
import tsrep.benchmarks.run as run_mod
from tsrep.benchmarks import parse_config, run_benchmark
from tsrep.benchmarks.registry import estimator_fingerprint

TINY = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "p": 0.5, "max_epochs": 1, "min_steps": 0, "batch_size": 16}


def tiny_config(**over):
    raw = {"name": "tiny", "datasets": ["BasicMotions"], "models": ["gru"], "seeds": [0], "params": TINY,
           "data": {"offline": True}}
    raw.update(over)
    return parse_config(raw)


def test_the_fingerprint_holds_every_default_the_version_and_the_rules():
    fp = estimator_fingerprint("ea-dc-transformer", "classification", {"d_model": 32})
    params = fp["params"]
    # The config's parameter and every default beside it; nothing that does not change a fit's result.
    assert params["d_model"] == 32 and params["precise_bn"] == "auto" and params["max_tokens"] == "auto"
    assert not {"random_state", "device", "verbose", "callbacks", "n_jobs", "train_members_together"} & set(params)
    assert fp["tsrep"] == tsrep.__version__ and len(fp["rules"]) == 12
    # Stable from one call (one process) to the next, and plain JSON (no object addresses).
    assert fp == estimator_fingerprint("ea-dc-transformer", "classification", {"d_model": 32})
    assert json.loads(json.dumps(fp)) == fp
    aeon = estimator_fingerprint("aeon:minirocket", "classification", {})
    import aeon as aeon_package

    assert aeon["aeon"] == aeon_package.__version__ and aeon["params"]["n_kernels"] == 10000
    assert "rules" not in aeon and "random_state" not in aeon["params"]


def test_a_changed_rule_or_version_makes_other_cells(monkeypatch):
    before = [c.key for c in run_mod.make_cells(tiny_config())]
    # A rule edited: the source of the module that holds the "auto" rules reads differently.
    real_source = registry.inspect.getsource

    def edited(module):
        text = real_source(module)
        return text + "\nAUTO_MIXUP = 0.3\n" if module.__name__ == "tsrep.estimators._tasks" else text

    monkeypatch.setattr(registry.inspect, "getsource", edited)
    assert [c.key for c in run_mod.make_cells(tiny_config())] != before
    monkeypatch.undo()
    assert [c.key for c in run_mod.make_cells(tiny_config())] == before
    monkeypatch.setattr(tsrep, "__version__", "99.0")
    assert [c.key for c in run_mod.make_cells(tiny_config())] != before


def test_a_changed_default_fits_the_cell_again_and_says_so(tmp_path, monkeypatch):
    cfg = tiny_config()
    store, cells = run_benchmark(cfg, tmp_path, threads=1, progress=False)
    (old,) = cells
    assert store.done_keys() == {old.key}

    # A release whose GRU estimator defaults to another learning rate: the config is unchanged.
    real_build = registry.build_model

    def changed_default(name, task, seed=None, device=None, **params):
        estimator = real_build(name, task, seed=seed, device=device, **params)
        return estimator if "lr" in params else estimator.set_params(lr=0.01)

    monkeypatch.setattr(registry, "build_model", changed_default)
    fitted = []
    real_run = run_mod.run_cell
    monkeypatch.setattr(run_mod, "run_cell", lambda cell: fitted.append(cell) or real_run(cell))
    with pytest.warns(UserWarning, match="1 of the 1 cells to run .* another specification"):
        store, (new,) = run_benchmark(cfg, tmp_path, threads=1, progress=False)
    assert new.key != old.key and new.estimator["params"]["lr"] == 0.01 and old.estimator["params"]["lr"] != 0.01
    assert [c.key for c in fitted] == [new.key]  # fitted again, not reused
    assert store.done_keys() == {old.key, new.key}  # the old row is kept ...
    assert list(store.frame([new.key])["key"]) == [new.key]  # ... and what is reported is the new one
    # Run once more under the changed default: nothing to fit, nothing to warn about, although the store holds
    # the old row beside the new one.
    fitted.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        run_benchmark(cfg, tmp_path, threads=1, progress=False)
    assert fitted == [] and run_mod.superseded_cells(store, [new]) == []
    assert run_mod.superseded_cells(store, [old]) == []  # the old cell is itself stored: it is not superseded


def test_report_only_names_cells_stored_under_another_specification(tmp_path, monkeypatch, capsys):
    from tsrep.benchmarks.cli import main as cli_main

    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps({"name": "tiny", "datasets": ["BasicMotions"], "models": ["gru"], "seeds": [0],
                                  "params": TINY, "data": {"offline": True}}))
    out = tmp_path / "out"
    args = ["--config", str(config), "--out", str(out), "--quiet", "--no-plots"]
    assert cli_main(args) == 0
    capsys.readouterr()
    monkeypatch.setattr(tsrep, "__version__", "99.0")  # the store was written by another release
    assert cli_main(args + ["--report-only"]) == 1  # nothing of this release is stored
    err = capsys.readouterr().err
    assert "1 of the 1 cells are stored" in err and "not reported" in err
