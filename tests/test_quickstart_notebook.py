"""notebooks/quickstart.ipynb runs top to bottom (small budgets) and its pictures are real PNG outputs."""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def _images(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


def test_committed_notebook_shows_its_pictures():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert len(_images(nb)) >= 3  # loss curve, t-SNE, attention maps are saved outputs a reader sees
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("TSREP_QUICKSTART_SCALE", "0.1")
    monkeypatch.setenv("TSREP_QUICKSTART_OUT", str(tmp_path))
    monkeypatch.setenv("TSREP_QUICKSTART_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    assert len(_images(nb)) >= 3
    for name in ("pretraining_loss.png", "tsne.png", "attention.png", "basic_motions_encoder.safetensors"):
        assert (tmp_path / name).stat().st_size > 1000, name
