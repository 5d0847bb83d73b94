"""Writes notebooks/quickstart.ipynb from the cells below (then run it to fill its outputs:
``python notebooks/make_quickstart.py --execute``). Kept so the notebook's source is reviewable as code."""

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

cells = [
    new_markdown_cell(
        "# tsrep quickstart\n\n"
        "A tour of tsrep: the EA-DC-Transformer classifier and regressor (aeon estimators), masked-reconstruction "
        "pretraining (TST masking), `TSRepEncoder` representations in a scikit-learn `Pipeline`, encoder "
        "checkpoints, and the analysis pictures of Wang et al., *Convolution-enhanced Evolving Attention Networks* (IEEE TPAMI 2023): t-SNE with AvgWCD, attention maps of every layer.\n\n"
        "Budgets are small so the notebook runs in a few minutes on two CPU cores; the test suite runs it with "
        "even smaller ones (`TSREP_QUICKSTART_SCALE`)."
    ),
    new_code_cell(
        "import os, tempfile\n"
        "import numpy as np\n"
        "import torch\n"
        "import matplotlib.pyplot as plt\n"
        "from aeon.datasets import load_basic_motions, load_covid_3month\n"
        "from sklearn.linear_model import LogisticRegression\n"
        "from sklearn.pipeline import make_pipeline\n"
        "from sklearn.preprocessing import StandardScaler\n\n"
        "from tsrep import EADCTransformerClassifier, EADCTransformerRegressor, TSRepEncoder\n"
        "from tsrep.analysis import avg_wcd, plot_tsne, attention_maps, plot_attention_maps\n\n"
        "SCALE = float(os.environ.get('TSREP_QUICKSTART_SCALE', '1'))  # the test suite shrinks the budgets\n"
        "OUT = os.environ.get('TSREP_QUICKSTART_OUT', tempfile.mkdtemp())  # where the PNG files go\n"
        "def epochs(n):\n"
        "    return max(1, int(n * SCALE))\n"
        "torch.set_num_threads(int(os.environ.get('TSREP_QUICKSTART_THREADS', '2')))\n"
        "SMALL = dict(d_model=32, n_blocks=2, n_heads=4, p=0.25, batch_size=16, device='cpu', random_state=0)"
    ),
    new_markdown_cell(
        "## Classification\n"
        "BasicMotions ships with aeon: 40 training and 40 test series, 6 channels, 100 steps, 4 classes. "
        "Input is a 3-D array `(n_cases, n_channels, n_timepoints)`; lists of 2-D arrays of unequal length work too."
    ),
    new_code_cell(
        "X_train, y_train = load_basic_motions(split='train')\n"
        "X_test, y_test = load_basic_motions(split='test')\n"
        "clf = EADCTransformerClassifier(max_epochs=epochs(40), **SMALL).fit(X_train, y_train)\n"
        "print('predictions:', clf.predict(X_test[:5]))\n"
        "print(f'test accuracy: {clf.score(X_test, y_test):.3f}  (epochs run: {clf.n_epochs_}, kept: {clf.best_epoch_})')"
    ),
    new_markdown_cell("## Regression\nCovid3Month: univariate series of 84 days, target a death rate. Targets are standardised internally."),
    new_code_cell(
        "Xr_train, yr_train = load_covid_3month(split='train')\n"
        "Xr_test, yr_test = load_covid_3month(split='test')\n"
        "reg = EADCTransformerRegressor(max_epochs=epochs(30), scaling='symlog', **SMALL).fit(Xr_train, yr_train)\n"
        "rmse = float(np.sqrt(np.mean((reg.predict(Xr_test) - yr_test) ** 2)))\n"
        "rmse_mean = float(np.sqrt(np.mean((yr_train.mean() - yr_test) ** 2)))\n"
        "print(f'test RMSE {rmse:.4f}   (predicting the training mean: {rmse_mean:.4f})')"
    ),
    new_markdown_cell(
        "## Pretraining and representations\n"
        "`TSRepEncoder.fit(X)` pretrains the encoder by masked reconstruction (no labels): per-variable geometric "
        "spans of mean length 3 cover 15% of the values, masked values are zeroed after standardisation, and the "
        "loss is the MSE on masked, non-padded values only. `transform(X)` gives one vector per series."
    ),
    new_code_cell(
        "encoder = TSRepEncoder(pretrain_epochs=epochs(20), **SMALL).fit(X_train)\n"
        "fig, ax = plt.subplots(figsize=(5, 3))\n"
        "ax.plot(range(1, len(encoder.loss_history_) + 1), encoder.loss_history_, marker='o')\n"
        "ax.set_xlabel('epoch'); ax.set_ylabel('masked MSE'); ax.set_title('reconstruction loss (BasicMotions)')\n"
        "fig.tight_layout(); fig.savefig(os.path.join(OUT, 'pretraining_loss.png')); plt.show()\n"
        "Z_train, Z_test = encoder.transform(X_train), encoder.transform(X_test)\n"
        "print('representation shape:', Z_test.shape)\n"
        "probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(Z_train, y_train)\n"
        "print(f'logistic regression on the representations: test accuracy {probe.score(Z_test, y_test):.3f}')"
    ),
    new_markdown_cell(
        "The encoder is a scikit-learn transformer, so it also goes straight into a `Pipeline` (which pretrains it "
        "again on whatever `fit` receives):"
    ),
    new_code_cell(
        "pipe = make_pipeline(TSRepEncoder(pretrain_epochs=epochs(20), **SMALL), StandardScaler(),\n"
        "                     LogisticRegression(max_iter=2000))\n"
        "print(f'Pipeline test accuracy: {pipe.fit(X_train, y_train).score(X_test, y_test):.3f}')"
    ),
    new_markdown_cell(
        "## Checkpoints\n"
        "`save` writes one safetensors file: the encoder's weights and standardisation, with a JSON configuration "
        "in its metadata; nothing in it is pickled, so loading never runs code. A classifier or regressor starts "
        "from it with `pretrained_encoder=path` (only the output head is new; `freeze_encoder=True` trains the head "
        "alone). This is also how extra unlabelled series enter: pretrain a `TSRepEncoder` on them."
    ),
    new_code_cell(
        "path = encoder.save(os.path.join(OUT, 'basic_motions_encoder.safetensors'))\n"
        "loaded = TSRepEncoder.load(path)\n"
        "print('transform identical after load:', np.array_equal(loaded.transform(X_test), Z_test))\n"
        "warm = EADCTransformerClassifier(pretrained_encoder=path, freeze_encoder=True, lr=1e-2, validation_fraction=0,\n"
        "                                 max_epochs=epochs(80), **SMALL).fit(X_train, y_train)\n"
        "print(f'head trained on the frozen pretrained encoder: test accuracy {warm.score(X_test, y_test):.3f}')"
    ),
    new_markdown_cell(
        "## Analysis\n"
        "t-SNE of the test representations coloured by class (Figure 4 of Wang et al. 2023) with the average within-class "
        "distance AvgWCD (Eq. 13; smaller is tighter), then the attention maps of every layer for one series "
        "(rows: layers, bottom = deepest; columns: heads), which evolve from layer to layer."
    ),
    new_code_cell(
        "print(f'AvgWCD of the pretrained representations: {avg_wcd(Z_test, y_test):.3f}')\n"
        "fig, _ = plot_tsne(Z_test, y_test, os.path.join(OUT, 'tsne.png'), title='TSRepEncoder, BasicMotions test')\n"
        "plt.show()"
    ),
    new_code_cell(
        "maps = attention_maps(encoder, X_test[0])\n"
        "fig = plot_attention_maps(maps, os.path.join(OUT, 'attention.png'), title=f'series 0 ({y_test[0]})')\n"
        "plt.show()"
    ),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
target = HERE / "quickstart.ipynb"
if "--execute" in sys.argv:
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
nbformat.write(nb, target)
print("wrote", target)
