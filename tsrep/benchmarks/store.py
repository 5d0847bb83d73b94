"""The results store: one SQLite file, one row per finished cell, written (and committed) the moment
the cell finishes, so that a killed run loses at most the cells in flight.

A cell is (dataset, model, seed) under one specification (fixed parameters, grid, selection
protocol, data source); its key is a hash of all of that, so a changed config never reuses a result
computed under another one, and an unchanged config skips every cell already stored with status "ok".
Cells that failed are stored with status "error" and the message, and are run again next time.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

import pandas as pd

COLUMNS = (
    ("key", "TEXT PRIMARY KEY"),
    ("config", "TEXT"),
    ("dataset", "TEXT"),
    ("model", "TEXT"),
    ("seed", "INTEGER"),
    ("task", "TEXT"),
    ("metric", "TEXT"),
    ("score", "REAL"),
    ("n_params", "INTEGER"),
    ("params", "TEXT"),
    ("val_score", "REAL"),
    ("n_candidates", "INTEGER"),
    ("seconds", "REAL"),
    ("n_epochs", "INTEGER"),
    ("best_epoch", "INTEGER"),
    ("status", "TEXT"),
    ("error", "TEXT"),
    ("device", "TEXT"),
    ("spec", "TEXT"),
    ("finished_at", "TEXT"),
)


def cell_key(spec: dict) -> str:
    return hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:20]


class ResultStore:
    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS cells ({', '.join(f'{c} {t}' for c, t in COLUMNS)})")

    def _connect(self):
        db = sqlite3.connect(self.path, timeout=60)
        db.execute("PRAGMA journal_mode=WAL")  # readers (a report) never block the writer
        return db

    def done_keys(self) -> set[str]:
        with self._connect() as db:
            return {row[0] for row in db.execute("SELECT key FROM cells WHERE status = 'ok'")}

    def write(self, row: dict) -> None:
        row = {c: row.get(c) for c, _ in COLUMNS}
        row["finished_at"] = row["finished_at"] or time.strftime("%Y-%m-%d %H:%M:%S")
        for c in ("params", "spec"):
            if row[c] is not None and not isinstance(row[c], str):
                row[c] = json.dumps(row[c], sort_keys=True, default=str)
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self._connect() as db:  # the context manager commits
            db.execute(f"INSERT OR REPLACE INTO cells ({names}) VALUES ({marks})", list(row.values()))

    def frame(self, keys=None) -> pd.DataFrame:
        """Stored rows (only the given keys when keys is not None)."""
        with self._connect() as db:
            df = pd.read_sql_query("SELECT * FROM cells", db)
        if keys is not None:
            df = df[df["key"].isin(set(keys))]
        return df.reset_index(drop=True)
