#!/usr/bin/env python3
"""Set up a virtual environment and run tsrep's main job or its tests. Needs only Python >= 3.10.

    python3 dev.py run  [--dataset BasicMotions ...]   # set-up, then train and score a model
    python3 dev.py test [pytest args ...]              # set-up, then the test suite

Set-up creates .venv/ and installs the project with its dev extras. torch is installed first, only
when the venv has none, from TSREP_TORCH (default "torch==2.13.0": on the project's CPU machines
pip takes that CPU build from local disk). The package itself asks for any torch >= 2.2, so users
keep the build they have; set TSREP_TORCH to e.g. "torch --index-url <your wheel index>" elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("TSREP_VENV", ROOT / ".venv"))
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / ".tsrep-installed"


def sh(*args: str) -> None:
    print("+", " ".join(shlex.quote(a) for a in args), flush=True)
    subprocess.run(args, check=True, cwd=ROOT)


def has_torch() -> bool:
    return subprocess.run([str(PY), "-c", "import torch"], capture_output=True).returncode == 0


def setup() -> None:
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
        sh(str(PY), "-m", "pip", "install", "-q", "--upgrade", "pip")
    if not has_torch():
        sh(str(PY), "-m", "pip", "install", "-q", *shlex.split(os.environ.get("TSREP_TORCH", "torch==2.13.0")))
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text() != digest:
        sh(str(PY), "-m", "pip", "install", "-q", "-e", ".[dev]")
        STAMP.write_text(digest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__)
        return 2
    setup()
    command, rest = argv[0], argv[1:]
    if command == "setup":
        return 0
    if command == "run":
        return subprocess.run([str(PY), "-m", "tsrep", *rest], cwd=ROOT).returncode
    return subprocess.run([str(PY), "-m", "pytest", *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
