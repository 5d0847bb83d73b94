"""
Critical-difference diagram of a small benchmark
================================================

``tsrep-benchmark`` (and ``python -m tsrep`` without ``--dataset``) trains every model of a config on every
problem, stores each finished cell, and writes paper-style ``score / #params`` tables with average ranks and a
critical-difference diagram (aeon's Friedman/Nemenyi-style diagram: models joined by a bar are not
significantly different).

Here a config given as a dictionary runs three models of the paper's ablation tables (the DC-Transformer, the
EA-DC-Transformer without the skip connection between attention maps, and the full EA-DC-Transformer) on three
problems that ship with aeon, with a budget of six epochs each at a high learning rate, so the whole run takes
seconds. The ranks it draws are noise; the point is the
picture and the table. The published test accuracy of MiniROCKET (Middlehurst et al., "Bake off redux", 2024)
is printed beside ours, marked with a dagger and left out of the ranks.
"""

import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import pandas as pd

from tsrep.benchmarks import make_cells, parse_config, run_cell, write_report

config = parse_config({
    "name": "gallery",
    "datasets": ["GunPoint", "ItalyPowerDemand", "BasicMotions"],
    "models": ["dc-transformer", "ea-dc-t-no-skip", "ea-dc-transformer"],
    "seeds": [0],
    "params": {"d_model": 16, "n_blocks": 1, "max_epochs": 6, "min_steps": 0, "batch_size": 8, "lr": 0.01},
    "published": ["MiniROCKET"],
    "data": {"offline": True},
})
# tsrep-benchmark runs the cells in worker processes and stores each as it finishes; here they run in turn.
rows = [run_cell(cell) for cell in make_cells(config, device="cpu")]
out = Path(tempfile.mkdtemp())
report = write_report(pd.DataFrame(rows), config.models, config.datasets, out, published=config.published,
                      published_split=config.published_split, published_in_ranks=config.published_in_ranks)

# %%
# The table (Markdown; also written as CSV beside it):
print((out / "classification.md").read_text())

# %%
# The critical-difference diagram, as written to ``cd_classification.png``:
fig, ax = plt.subplots(figsize=(7, 2.6))
ax.imshow(mpimg.imread(out / "cd_classification.png"))
ax.set_axis_off()
plt.show()
