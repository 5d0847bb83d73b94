"""
A tuning history
================

:func:`tsrep.tuning.tune` searches alpha, beta, p, d_model and n_blocks with Optuna (the paper's grid unless
overridden), scoring each trial on a validation split of the training data and pruning trials whose per-epoch
validation score falls behind. :func:`tsrep.tuning.plots.save_study_plots` writes the pictures of a study
(``tsrep-tune`` does both from the shell).

Six trials on ItalyPowerDemand with four epochs each, in memory; only alpha, beta and p are searched.
"""

import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import optuna
from aeon.datasets import load_italy_power_demand

from tsrep import EADCTransformerClassifier
from tsrep.tuning import tune
from tsrep.tuning.plots import save_study_plots

optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial is too much for a page

X_train, y_train = load_italy_power_demand(split="train")
base = EADCTransformerClassifier(d_model=16, n_heads=2, n_blocks=1, max_epochs=4, min_steps=0, batch_size=8, lr=0.01,
                                 random_state=0)
result = tune(base, X_train, y_train, n_trials=6, storage="memory", seed=0, default_space=False,
              search_space={"alpha": [0.1, 0.5, 0.9], "beta": [0.1, 0.5, 0.9], "p": [0.25, 0.5]})
print("best parameters:", result.best_params, f"| validation accuracy {result.best_value:.3f}")

pictures = save_study_plots(result.study, Path(tempfile.mkdtemp()))
print("pictures written:", sorted(pictures))

# %%
# The optimisation history: every trial's validation score and the best so far.
fig, ax = plt.subplots(figsize=(8, 5))
ax.imshow(mpimg.imread(pictures["history"]))
ax.set_axis_off()
plt.show()
