"""The seed summaries of the shipped text and image comparisons: means, standard errors, paired differences."""

from types import SimpleNamespace

import numpy as np
import pytest

from tsrep.benchmarks import text, vision
from tsrep.benchmarks.seed_summary import mean_and_standard_error


def test_standard_error_is_the_sample_deviation_over_root_n():
    values = [0.71, 0.74, 0.69, 0.73]
    se = np.std(values, ddof=1) / np.sqrt(len(values))
    assert mean_and_standard_error(values) == f"{np.mean(values):.4f} +- {se:.4f} (SE)"
    assert mean_and_standard_error([-0.01, -0.03], signed=True).startswith("-0.0200 +- 0.0100")
    assert mean_and_standard_error([0.02, 0.04], signed=True).startswith("+0.0300")
    assert "no standard error" in mean_and_standard_error([0.5])
    with pytest.raises(ValueError, match="no values"):
        mean_and_standard_error([])


def test_vision_pairs_each_evolving_model_with_its_plain_twin_by_seed():
    accuracy = {("EA-ViT", 0): 0.90, ("EA-ViT", 1): 0.96, ("ViT", 0): 0.91, ("ViT", 1): 0.93}
    rows = [dict(dataset="d", model=m, alpha=0.1, beta=0.3, seed=s, accuracy=a, params=1, epoch_s=1.0,
                 n_train=5, n_test=3) for (m, s), a in accuracy.items()]
    table = vision.markdown(rows)
    # differences -0.01 and +0.03: mean +0.01, SE 0.02
    assert "d: EA-ViT - ViT, paired by seed: +0.0100 +- 0.0200 (SE)" in table
    assert "0.9300 +- 0.0300 (SE)" in table  # EA-ViT over its two seeds


def test_text_summary_pairs_the_two_models_by_seed():
    def history(accuracy):
        return SimpleNamespace(val_score=[0.0, accuracy], train_loss=[1.0, 0.5], epoch_seconds=[2.0, 2.0])

    rows = [(seed, name, a, a, history(acc), 10, 0)
            for seed, (plain, evolving) in enumerate(((0.70, 0.72), (0.74, 0.73), (0.71, 0.74)))
            for name, a, acc in (("MiniLM", 0.0, plain), ("EA-MiniLM", 0.1, evolving))]
    lines = text.summary(rows).splitlines()
    assert lines[0].startswith("MiniLM: mean test accuracy 0.7167 +- 0.0120 (SE) over 3 seed(s)")
    # differences +0.02, -0.01, +0.03: mean +0.0133, SE 0.0120
    assert lines[2] == "EA-MiniLM - MiniLM, paired by seed: +0.0133 +- 0.0120 (SE)"
    assert "| 2 | EA-MiniLM | 0.1 | 0.1 | 0.7400 |" in text.markdown(rows)


def test_text_takes_several_seeds():
    assert text.build_parser().parse_args(["--seeds", "0", "1", "2"]).seeds == [0, 1, 2]
