"""Database URLs, shared by the tuning studies' storages (tsrep.tuning.storage) and the benchmark's results
store (tsrep.benchmarks.store)."""

from __future__ import annotations

import importlib
import re


def mask_url(url: str) -> str:
    """The URL with any password replaced by ***, for messages and metadata."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", str(url))


def with_postgres_driver(url: str) -> str:
    """``postgresql://`` -> ``postgresql+psycopg://`` (psycopg 3) or ``+psycopg2`` (whichever is installed):
    SQLAlchemy's default driver for the bare scheme changed between versions."""
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            rest = url[len(bare):]
            for module, dialect in (("psycopg", "psycopg"), ("psycopg2", "psycopg2")):
                try:
                    importlib.import_module(module)
                except ImportError:
                    continue
                return f"postgresql+{dialect}://{rest}"
            return f"postgresql://{rest}"
    return url
