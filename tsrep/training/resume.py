"""Resumable supervised training: the whole state of :func:`tsrep.training.loop.train_supervised` in a
checkpoint directory, written after every epoch.

``<checkpoint_dir>/train-state.pt`` holds the model, optimiser and learning-rate schedule states, the
RNG states (torch, CUDA when training on a GPU, numpy's and Python's global generators, and the data
shuffling generator), the epoch, the history, the early-stopping bookkeeping and the best weights so far.
A resumed fit sets all of these, numpy's and Python's global generators included, to their state at the end
of the last finished epoch, as an uninterrupted run would have them. It is written atomically
(tsrep._io: a killed run leaves the previous epoch's complete state), by rank
0 only under data parallelism, and read with ``torch.load(weights_only=True)`` (tensors, numbers and
strings only: no pickled code runs).

Every training state (this one and masked pretraining's, tsrep.training.pretrain) is read by
:func:`load_safely` and written by :func:`save_atomically`.

The state records a fingerprint of what made it: a hash of the training and validation data (values,
masks, targets, weights) and of the network's weights when training started (so a warm start or a
pretrained encoder counts), and a description of every setting that changes the result. A fit that
finds a state with another fingerprint raises ValueError naming what differs and leaves the
directory as it is.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

import numpy as np
import torch

from tsrep._fingerprint import data_fingerprint, describe_settings, differing_settings
from tsrep._io import atomic_torch_save
from tsrep.training.distributed import is_main_process

STATE_FILE = "train-state.pt"
PRETRAIN_STATE_FILE = "pretrain-state.pt"
TRAIN_STATE_FORMAT = "tsrep-train-state/1"


def load_safely(path) -> dict:
    """torch.load with weights_only=True: tensors and plain containers only, never pickled code."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt file, or a pickle that asks for code (refused by weights_only)
        raise ValueError(
            f"checkpoint {str(path)!r} could not be loaded safely (corrupt, not a tsrep checkpoint, or it "
            f"holds objects other than tensors and plain containers): {type(exc).__name__}: {exc}"
        ) from exc


def save_atomically(obj, path) -> None:
    """torch.save through a temporary file of its own and a rename (tsrep._io.atomic_torch_save), so
    neither an interrupted save nor several processes saving to one path leave a broken file. Under
    data parallelism only rank 0 writes (every rank holds the same weights, and several ranks writing
    one file would corrupt it); no barrier, so a caller may save from rank 0 alone."""
    if not is_main_process():
        return
    atomic_torch_save(obj, path)


def check_writable_directory(directory, what: str = "checkpoint_dir") -> Path:
    """Create `directory` if needed and prove that files can be written in it, or raise OSError naming `what`."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"{what}={str(directory)!r} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise type(exc)(
            f"{what}={str(directory)!r} cannot be created or written ({exc.strerror or exc}); "
            "give a writable directory"
        ) from exc
    return directory


def rng_states() -> dict:
    """The global RNG states (torch CPU, numpy, python) as tensors and plain numbers."""
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    py_version, py_internal, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {"keys": torch.from_numpy(np_keys.astype(np.int64)), "pos": int(np_pos),
                  "has_gauss": int(np_has_gauss), "gauss": float(np_gauss), "name": str(np_name)},
        "python": {"version": int(py_version), "internal": torch.tensor(py_internal, dtype=torch.int64),
                   "gauss": py_gauss},
    }


def set_rng_states(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    p = state["python"]
    random.setstate((p["version"], tuple(int(v) for v in p["internal"].tolist()), p["gauss"]))


def weights_fingerprint(model: torch.nn.Module) -> str:
    return data_fingerprint([v for _, v in sorted(model.state_dict().items())])


def stored_seed(directory, default: int) -> int:
    """The seed recorded by the training state in `directory` (a fit with a drawn seed resumes with
    it), or `default` when there is no readable state."""
    path = Path(directory) / STATE_FILE
    if not path.is_file():
        return default
    try:
        seed = json.loads(load_safely(path)["fingerprint"])["settings"]["seed"]
    except (ValueError, KeyError, TypeError):
        return default  # the full check in TrainCheckpoint.load names the problem
    return int(seed) if isinstance(seed, int) else default


class TrainCheckpoint:
    """The resumable state of one supervised training run in `directory` (see the module doc).

    Parameters
    ----------
    directory : path
        Created if needed; must be writable (checked at once, before any training).
    settings : dict
        Everything besides the data that changes the result (parameters, seed): recorded, compared.
    """

    def __init__(self, directory, settings: dict):
        self.directory = check_writable_directory(directory)
        self.path = self.directory / STATE_FILE
        self.settings = describe_settings(settings)
        self.fingerprint: dict | None = None

    def bind(self, train, val, model: torch.nn.Module) -> None:
        """Fingerprint the data and the starting weights of this run."""
        parts = [train.values, train.valid, train.targets, train.weights]
        if val is not None:
            parts += [val.values, val.valid, val.targets, val.weights]
        self.fingerprint = {
            "data": data_fingerprint(*parts),
            "start_weights": weights_fingerprint(model),
            "settings": self.settings,
        }

    def load(self) -> dict | None:
        """The stored state when it belongs to this run; None when there is none; ValueError otherwise."""
        if not self.path.exists():
            return None
        where = f"the checkpoint {str(self.path)!r} (checkpoint_dir={str(self.directory)!r})"
        state = load_safely(self.path)
        if not isinstance(state, dict) or state.get("format") != TRAIN_STATE_FORMAT:
            raise ValueError(f"{where} is not a tsrep training state (format {TRAIN_STATE_FORMAT!r} expected)")
        try:
            stored = json.loads(state["fingerprint"])
            stored["data"], stored["start_weights"], stored["settings"], int(state["epoch"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} is incomplete or corrupt: {exc!r}") from exc
        problems = []
        if stored["data"] != self.fingerprint["data"]:
            problems.append("the training data differ")
        was, now = stored["settings"].get("estimator"), self.fingerprint["settings"].get("estimator")
        differ = differing_settings(stored["settings"], self.fingerprint["settings"])
        if was != now:  # another estimator: its parameters are another list altogether
            problems.append(f"it holds a {str(was).rsplit('.', 1)[-1]} fit, this is a {str(now).rsplit('.', 1)[-1]}")
        elif differ:
            problems.append("settings differ: " + "; ".join(differ))
        if not problems and stored["start_weights"] != self.fingerprint["start_weights"]:
            problems.append("the network's starting weights differ (another warm start or pretrained encoder)")
        if problems:
            raise ValueError(
                f"{where} was written by a fit on other data or with other settings, so it cannot be resumed: "
                f"{'; '.join(problems)}. It was left as it is; delete it or give another checkpoint_dir"
            )
        return state

    def save(self, state: dict) -> None:
        save_atomically(
            {"format": TRAIN_STATE_FORMAT, "fingerprint": json.dumps(self.fingerprint, sort_keys=True), **state},
            self.path,
        )
