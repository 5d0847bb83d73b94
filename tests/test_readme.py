"""Every Python snippet of README.md runs as written and prints its result.

Each runs as a script of its own (a fresh interpreter in an empty working directory), as a reader would paste it:
a name defined only in another snippet is a NameError, and a bare expression at the end prints nothing. The
snippets that train read ``TSREP_QUICK=1``, the small-budget switch the README documents, so the file takes
well under a minute; the switch changes budgets, never which lines run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SNIPPETS = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)


def _id(index: int) -> str:
    """The first import of a snippet names it (pytest ids: readme-0-aeon.datasets, ...)."""
    first = re.search(r"^(?:from|import) ([\w.]+)", SNIPPETS[index].replace("import os\n", ""), re.M)
    return f"readme-{index}-{first.group(1) if first else 'snippet'}"


def test_readme_documents_the_small_budget_switch_its_snippets_read():
    assert len(SNIPPETS) >= 3
    prose = re.sub(r"```.*?```", "", README, flags=re.S)
    assert "TSREP_QUICK=1" in prose  # told to the reader outside the code, where they look for how to run it
    training = [s for s in SNIPPETS if re.search(r"\.fit\(|\btune\(", s)]
    assert training and all("TSREP_QUICK" in s for s in training)


@pytest.mark.parametrize("index", range(len(SNIPPETS)), ids=_id)
def test_readme_snippet_runs_as_a_script_and_prints_its_result(index, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env.update(TSREP_QUICK="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", SNIPPETS[index]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"README snippet {index} failed:\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"README snippet {index} ran but printed nothing"
