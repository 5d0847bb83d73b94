"""The results store: one row per finished cell, written (and committed) the moment the cell finishes,
so that a killed run loses at most the cells in flight.

The store is a database reached through SQLAlchemy: by default the SQLite file ``OUT/results.sqlite``;
any SQLAlchemy URL (``sqlite:///path/results.sqlite``, ``postgresql://user@host:5432/bench``) lets runs
on several machines share one store. Only the process that runs the benchmark (the client of a Dask
cluster) writes to it; workers return their rows to it.

A cell is (dataset, model, seed) under one specification (fixed parameters, grid, selection
protocol, data source, and the estimator as it would be built: every default, the package version and,
for tsrep's models, the "auto" rules; tsrep.benchmarks.registry.estimator_fingerprint); its key is a hash
of all of that, so neither a changed config nor a changed default reuses a result computed under another
one, and an unchanged config skips every cell already stored with status "ok".
The key is the table's primary key: a cell is stored once, however often it runs. Cells that failed
are stored with status "error" and the message, and are run again next time.

Beside each finished cell, a second table keeps its test outputs (class probabilities of a classifier,
predictions of a regressor) and the test targets, written in the same transaction as the cell: the
report averages the seeds' outputs into seed ensembles without fitting anything again
(tsrep.benchmarks.report).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from tsrep.exceptions import StoreError
from tsrep._database_urls import mask_url, with_postgres_driver

DEFAULT_NAME = "results.sqlite"

COLUMNS = (
    ("key", sa.Text),
    ("config", sa.Text),
    ("dataset", sa.Text),
    ("model", sa.Text),
    ("seed", sa.Integer),
    ("task", sa.Text),
    ("metric", sa.Text),
    ("score", sa.Float),
    ("n_params", sa.Integer),
    ("params", sa.Text),
    ("val_score", sa.Float),
    ("n_candidates", sa.Integer),
    ("seconds", sa.Float),
    ("n_epochs", sa.Integer),
    ("best_epoch", sa.Integer),
    ("status", sa.Text),
    ("error", sa.Text),
    ("device", sa.Text),
    ("spec", sa.Text),
    ("finished_at", sa.Text),
)
NAMES = tuple(name for name, _ in COLUMNS)

#: A cell's test outputs: (n_test, n_classes) probabilities or (n_test,) predictions as an ``np.save``
#: blob, the classes they are ordered by (JSON, None for regression) and the test targets (JSON).
OUTPUT_COLUMNS = (
    ("key", sa.Text),
    ("classes", sa.Text),
    ("targets", sa.Text),
    ("outputs", sa.LargeBinary),
)

# Keys per "IN (...)" query: old SQLite builds allow 999 parameters.
_KEYS_PER_QUERY = 500

# Insert-or-update in one statement where the dialect has it (else delete and insert in one transaction).
_UPSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}

# SQLite's words for a file that is not (or no longer) a whole database.
_DAMAGED = ("file is not a database", "malformed", "disk image", "not a database")


def cell_key(spec: dict) -> str:
    return hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:20]


def store_url(location) -> str:
    """The SQLAlchemy URL of a store given as a URL or as the path of an SQLite file."""
    text = str(location)
    if "://" in text:
        return with_postgres_driver(text)
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def _sqlite_file(url: str) -> Path | None:
    if url.startswith("sqlite:///") and url[len("sqlite:///"):] not in ("", ":memory:"):
        return Path(url[len("sqlite:///"):])
    return None


class ResultStore:
    """Finished cells in a database: ``ResultStore("out/results.sqlite")`` or ``ResultStore(url)``."""

    def __init__(self, location):
        self.url = store_url(location)
        self.path = _sqlite_file(self.url)  # None for a database server
        self.where = str(self.path) if self.path is not None else mask_url(self.url)
        if self.path is not None:
            self._prepare_directory(self.path)
        metadata = sa.MetaData()
        self._table = sa.Table("cells", metadata, *(
            sa.Column(name, kind, primary_key=name == "key") for name, kind in COLUMNS))
        self._outputs = sa.Table("outputs", metadata, *(
            sa.Column(name, kind, primary_key=name == "key") for name, kind in OUTPUT_COLUMNS))
        with self._guard("open"):
            self._engine = self._make_engine()
            self._table.metadata.create_all(self._engine, checkfirst=True)
            with self._engine.connect() as db:  # reads the file: a damaged one fails here, not mid-run
                db.execute(sa.select(sa.func.count()).select_from(self._table)).scalar()

    def _prepare_directory(self, path: Path) -> None:
        if path.is_dir():
            raise StoreError(f"the results store {str(path)!r} is a directory; give the path of a file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a file where a directory should be, no permission, read-only file system
            raise StoreError(
                f"cannot create the directory of the results store {str(path)!r}: {err.strerror or err}") from None

    def _make_engine(self):
        if self.url.startswith("sqlite"):
            engine = sa.create_engine(self.url, connect_args={"timeout": 60})

            @sa.event.listens_for(engine, "connect")
            def _wal(dbapi_connection, _record):
                # Readers (a report) never block the writer.
                dbapi_connection.execute("PRAGMA journal_mode=WAL")

            return engine
        connect_args = {"connect_timeout": 10} if self.url.startswith(("postgresql", "mysql")) else {}
        return sa.create_engine(self.url, pool_pre_ping=True, connect_args=connect_args)

    @contextmanager
    def _guard(self, action: str):
        """Database errors as a StoreError that says what to do."""
        try:
            yield
        except ImportError as err:
            raise StoreError(f"cannot {action} the results store {self.where}: its database driver is missing "
                             f"({err}); for postgresql:// install psycopg (pip install 'tsrep[postgres]')") from None
        except (sa.exc.SQLAlchemyError, OSError) as err:
            raise StoreError(self._explain(action, err)) from None

    def _explain(self, action: str, err: BaseException) -> str:
        original = getattr(err, "orig", None) or err
        first = (str(original).strip().splitlines() or [type(original).__name__])[0]
        if self.path is not None and any(word in first.lower() for word in _DAMAGED):
            return (
                f"the results store {str(self.path)!r} is damaged or truncated ({first}): it cannot be read, so "
                f"its finished cells cannot be reused. Move it aside (mv {self.path} {self.path}.damaged) and run "
                "the same command again to recompute the cells, or give another --out or --store"
            )
        if self.path is not None:
            hint = f"check that {str(self.path.parent)!r} is a writable directory and the file is not locked"
        else:
            hint = "check that the database server runs and is reachable, and the URL's host, port, database and user"
        return f"cannot {action} the results store {self.where}: {first} ({hint})"

    def done_keys(self) -> set[str]:
        with self._guard("read"), self._engine.connect() as db:
            rows = db.execute(sa.select(self._table.c.key).where(self._table.c.status == "ok"))
            return {row[0] for row in rows}

    def write(self, row: dict) -> None:
        """Store a finished cell's row; its "outputs" (with "classes" and "targets"), when present, go to
        the outputs table in the same transaction."""
        outputs = _output_row(row)
        row = {c: row.get(c) for c in NAMES}
        row["finished_at"] = row["finished_at"] or time.strftime("%Y-%m-%d %H:%M:%S")
        for c in ("params", "spec"):
            if row[c] is not None and not isinstance(row[c], str):
                row[c] = json.dumps(row[c], sort_keys=True, default=str)
        with self._guard("write"), self._engine.begin() as db:  # one transaction, committed on exit
            self._upsert(db, self._table, row)
            if outputs is not None:
                self._upsert(db, self._outputs, outputs)
            else:  # a rerun without outputs must not leave an earlier run's beside the new row
                db.execute(sa.delete(self._outputs).where(self._outputs.c.key == row["key"]))

    def _upsert(self, db, table: sa.Table, row: dict) -> None:
        upsert = _UPSERTS.get(self._engine.dialect.name)
        if upsert is not None:
            insert = upsert(table).values(**row)
            db.execute(insert.on_conflict_do_update(
                index_elements=["key"], set_={c: insert.excluded[c] for c in row if c != "key"}))
        else:
            db.execute(sa.delete(table).where(table.c.key == row["key"]))
            db.execute(sa.insert(table).values(**row))

    def outputs(self, keys=None) -> dict[str, dict]:
        """{key: {"classes": list or None, "targets": list, "outputs": ndarray}} of the stored test outputs
        (only the given keys when keys is not None)."""
        query = sa.select(self._outputs)
        with self._guard("read"), self._engine.connect() as db:
            if keys is None:
                rows = db.execute(query).all()
            else:  # only the wanted blobs leave the database, in chunks below SQLite's limit on parameters
                keys = list(keys)
                rows = [r for i in range(0, len(keys), _KEYS_PER_QUERY)
                        for r in db.execute(query.where(self._outputs.c.key.in_(keys[i:i + _KEYS_PER_QUERY])))]
        return {
            r.key: {"classes": None if r.classes is None else json.loads(r.classes), "targets": json.loads(r.targets),
                    "outputs": np.load(io.BytesIO(r.outputs), allow_pickle=False)}
            for r in rows
        }

    def frame(self, keys=None) -> pd.DataFrame:
        """Stored rows (only the given keys when keys is not None)."""
        with self._guard("read"), self._engine.connect() as db:
            rows = db.execute(sa.select(self._table)).all()
        df = pd.DataFrame([tuple(r) for r in rows], columns=list(NAMES))
        if keys is not None:
            df = df[df["key"].isin(set(keys))]
        return df.reset_index(drop=True)

    def close(self) -> None:
        self._engine.dispose()


def _output_row(row: dict) -> dict | None:
    """The outputs-table row of a cell's row, or None when it carries no outputs."""
    if row.get("outputs") is None:
        return None
    blob = io.BytesIO()
    np.save(blob, np.asarray(row["outputs"]), allow_pickle=False)
    classes = row.get("classes")
    return {"key": row["key"], "classes": None if classes is None else json.dumps(_plain(classes)),
            "targets": json.dumps(_plain(row["targets"])), "outputs": blob.getvalue()}


def _plain(values) -> list:
    """Labels or targets as JSON-ready Python values (numpy scalars to int, float, str, bool)."""
    return np.asarray(values).tolist()
