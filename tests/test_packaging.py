"""Packaging: wheel and sdist build offline and carry their data (benchmark configs, published results, py.typed,
LICENSE); a wheel installed into a fresh virtual environment runs ``python -m tsrep`` and ``tsrep-benchmark`` with
its packaged configs; ``twine check`` passes on both. Also the lookup order of config names (the command line's
own errors: tests/test_cli.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

import tsrep
from tsrep.benchmarks.config import ConfigError, config_names, find_config, load_config

ROOT = Path(__file__).resolve().parents[1]
# A distribution is built from a copy of these and of tsrep/, so the build writes nothing into the repository.
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", "dev.py", ".ci/run")
# What the sdist carries besides the package, so that it rebuilds the documentation, reruns the benchmark tables
# and the notebook, and runs the test suite.
SOURCE_DIRS = ("docs", "benchmarks", "notebooks", "tests")
# Build outputs and caches a working tree may hold; none belongs in the sdist.
BUILD_OUTPUTS = ("_build", "generated", "auto_examples", ".ipynb_checkpoints", "__pycache__", "*.pyc")
PACKAGED_CONFIGS = sorted(p.name for p in (ROOT / "tsrep" / "configs").glob("*.yaml"))
PUBLISHED_CSVS = sorted(p.name for p in (ROOT / "tsrep" / "benchmarks" / "data").glob("*.csv"))
TIMEOUT = 300  # seconds for any one command; the whole file takes about 30 s on an idle 2-core machine


def _env() -> dict:
    """This environment's variables without those that would put other code on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(OMP_NUM_THREADS="1", PYTHONNOUSERSITE="1", MPLBACKEND="Agg")
    return env


def _run(cmd, cwd, expect=0, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env={**_env(), **(env or {})}, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == expect, f"{cmd} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


# ----------------------------------------------------------------------------- config lookup (in this process)


def test_config_names_are_looked_up_as_path_then_working_directory_then_packaged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no configs/ here: the packaged ones
    assert set(config_names()) == {Path(n).stem for n in PACKAGED_CONFIGS} >= {"quick", "paper", "ucr-dev"}
    assert find_config("quick").read_text(encoding="utf-8") == (ROOT / "tsrep/configs/quick.yaml").read_text("utf-8")
    assert load_config("quick").name == "quick"

    tiny = {"datasets": ["BasicMotions"], "models": ["gru"], "params": {"max_epochs": 1}}
    (tmp_path / "configs").mkdir()
    for name in ("quick", "own"):  # a user's quick.yaml in ./configs overrides the packaged one
        (tmp_path / "configs" / f"{name}.yaml").write_text(yaml.safe_dump({**tiny, "description": name}))
    cfg = load_config("quick")
    assert cfg.description == "quick" and cfg.models == ["gru"] and Path(cfg.path) == Path("configs/quick.yaml")
    assert {"own", "quick", "paper"} <= set(config_names())

    (tmp_path / "elsewhere.yml").write_text(yaml.safe_dump({**tiny, "name": "mine"}))
    assert load_config("elsewhere.yml").name == "mine"  # a path as given comes first
    assert load_config(str(tmp_path / "configs" / "own.yaml")).description == "own"
    (tmp_path / "paper").mkdir()  # a folder named like a config is no config file: the name is looked up
    assert load_config("paper").name == "paper" and len(load_config("paper").datasets) == 17

    with pytest.raises(ConfigError, match=r"no config named 'quik' \(did you mean 'quick'\?\); available: .*paper"):
        find_config("quik")
    with pytest.raises(ConfigError, match="missing.yaml does not exist"):
        find_config("missing.yaml")


# ----------------------------------------------------------------------------- wheel and sdist


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    for name in SOURCE_FILES:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for name in ("tsrep", *SOURCE_DIRS):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
    # Outputs of a docs build and of a test run, as a developer's tree has them: the sdist must leave them out.
    for junk in ("docs/_build/html/index.html", "docs/generated/tsrep.load.rst", "tests/__pycache__/conftest.pyc",
                 "docs/auto_examples/index.rst"):
        (src / junk).parent.mkdir(parents=True, exist_ok=True)
        (src / junk).write_text("build output\n")
    out = tmp_path_factory.mktemp("dist")
    # Offline, with this environment's setuptools and build (the dev extra); build makes the sdist, then the wheel
    # from the unpacked sdist, so a file missing from the sdist is missing from the wheel too.
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], cwd=src)
    (wheel,), (sdist,) = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    return wheel, sdist


def test_twine_check_passes_on_wheel_and_sdist(dists):
    # The metadata PyPI would show: README renders, license and URLs are well formed (--strict: warnings fail too).
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *dists], cwd=dists[0].parent)
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_wheel_and_sdist_carry_license_typing_configs_and_published_results(dists):
    wheel, sdist = dists
    version = tsrep.__version__
    assert wheel.name == f"tsrep-{version}-py3-none-any.whl" and PACKAGED_CONFIGS and len(PUBLISHED_CSVS) >= 2
    data = {"tsrep/py.typed", *(f"tsrep/configs/{n}" for n in PACKAGED_CONFIGS),
            *(f"tsrep/benchmarks/data/{n}" for n in PUBLISHED_CSVS)}
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(f"tsrep-{version}.dist-info/METADATA").decode()
    assert data | {f"tsrep-{version}.dist-info/licenses/LICENSE"} <= names
    assert not any(n.startswith(("configs/", "tests/", "benchmarks/", "docs/", "notebooks/")) for n in names)
    for line in (f"Version: {version}", "License-Expression: MIT", "License-File: LICENSE",
                 "Project-URL: Changelog, ", "Classifier: Typing :: Typed"):
        assert line in metadata, line
    with tarfile.open(sdist) as tf:
        sdist_names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert data | {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml"} <= sdist_names


@pytest.fixture(scope="module")
def installed(dists, tmp_path_factory):
    """The wheel installed (no dependencies) into a fresh venv that finds this environment's dependencies."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    work = tmp_path_factory.mktemp("work")  # the working directory: no tsrep/ and no configs/ here
    site_packages = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              cwd=work).stdout.strip())
    # torch, aeon, ... come from this environment: a .pth file puts its site-packages after the venv's own. Plain
    # path lines do not run that folder's .pth files, so an editable tsrep installed there is not seen.
    deps = dict.fromkeys(sysconfig.get_path(key) for key in ("purelib", "platlib"))
    (site_packages / "_tsrep_test_dependencies.pth").write_text("\n".join(deps) + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--quiet",
          dists[0]], cwd=work)
    return env_dir, python, bin_dir, work


def test_installed_wheel_runs_the_cli_with_its_packaged_configs(installed):
    env_dir, python, bin_dir, work = installed
    probe = (
        "import json, tsrep, importlib.metadata as md; from importlib.resources import files; "
        "from tsrep.benchmarks.config import config_names, find_config; "
        "print(json.dumps({'file': tsrep.__file__, 'version': tsrep.__version__, 'dist': md.version('tsrep'), "
        "'dist_at': str(md.distribution('tsrep').locate_file('')), 'quick': str(find_config('quick')), "
        "'names': config_names(), 'typed': files('tsrep').joinpath('py.typed').is_file()}))"
    )
    info = json.loads(_run([python, "-c", probe], cwd=work).stdout.splitlines()[-1])
    env_dir = env_dir.resolve()
    for key in ("file", "dist_at", "quick"):  # the installed copy, not the source tree
        assert Path(info[key]).resolve().is_relative_to(env_dir), (key, info[key])
    assert info["version"] == info["dist"] == tsrep.__version__ and info["typed"]
    assert Path(info["quick"]).name == "quick.yaml" and set(info["names"]) == {Path(n).stem for n in PACKAGED_CONFIGS}

    benchmark = bin_dir / ("tsrep-benchmark.exe" if os.name == "nt" else "tsrep-benchmark")
    assert "--config" in _run([benchmark, "--help"], cwd=work).stdout
    listed = _run([benchmark, "--config", "quick", "--list", "--offline"], cwd=work).stdout
    assert re.search(r"^quick: \d+ datasets x \d+ models x 1 seeds = \d+ cells", listed, re.M), listed
    assert "no config" in _run([benchmark, "--config", "nope"], cwd=work, expect=2).stderr

    out = _run([python, "-m", "tsrep", "--dataset", "GunPoint", "--max-epochs", "1", "--min-steps", "0",
                "--d-model", "8", "--n-heads", "2", "--n-blocks", "1", "--device", "cpu", "--quiet"], cwd=work).stdout
    assert re.search(r"GunPoint: EA-DC-Transformer accuracy [01]\.\d{4} .* epochs 1 \(kept 1\)", out), out


def test_sdist_carries_the_docs_benchmarks_notebooks_and_tests_without_build_outputs(dists):
    _, sdist = dists
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    # Every source file of these folders, as the repository has them (build outputs excepted).
    expected = {p.relative_to(ROOT).as_posix() for d in SOURCE_DIRS for p in (ROOT / d).rglob("*")
                if p.is_file() and not any(part in BUILD_OUTPUTS or part.endswith(".pyc") for part in p.parts)}
    missing = sorted(expected - names)
    assert not missing, f"files missing from the sdist: {missing[:20]}"
    # What each purpose needs: the Sphinx site with its templates and gallery, the scripts of the benchmark
    # tables, the notebook, the suite's conftest, the README's commands and the package's configs.
    for name in ("docs/conf.py", "docs/api.rst", "docs/_templates/autosummary/class.rst", "docs/examples/README.rst",
                 "benchmarks/README.md", "benchmarks/run_archive.py", "benchmarks/recipe_log.md",
                 "notebooks/quickstart.ipynb", "notebooks/make_quickstart.py", "tests/conftest.py", "dev.py", ".ci/run",
                 "README.md", "CHANGELOG.md", "LICENSE", "pyproject.toml", "tsrep/configs/quick.yaml"):
        assert name in names, name
    assert any(n.startswith("docs/examples/plot_") for n in names)
    leaked = sorted(n for n in names if re.search(r"(^|/)(_build|generated|auto_examples|__pycache__)/|\.pyc$", n))
    assert not leaked, leaked


# ----------------------------------------------------------------------------- benchmarks shipped in the package
#: The benchmark scripts that ship as modules of the package, so that an installed tsrep reruns them.
SHIPPED_BENCHMARKS = ("tsrep.benchmarks.text", "tsrep.benchmarks.vision")
# Runs a module as ``python -m`` does, then prints its exit code and whether it had imported torch.
_HELP_PROBE = """
import json, runpy, sys
module = sys.argv[1]
sys.argv = [module, "--help"]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    code = None
except SystemExit as exited:
    code = exited.code
print(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


@pytest.mark.parametrize("module", SHIPPED_BENCHMARKS)
def test_shipped_benchmarks_answer_help_without_importing_torch(module):
    done = _run([sys.executable, "-m", module, "--help"], cwd=ROOT)
    assert done.stdout.startswith(f"usage: python -m {module}") and "--seed" in done.stdout, done.stdout
    probed = json.loads(_run([sys.executable, "-c", _HELP_PROBE, module], cwd=ROOT).stdout.splitlines()[-1])
    assert probed == {"code": 0, "torch": False}


def test_wheel_carries_the_shipped_benchmarks_and_the_installed_copy_runs_them(dists, installed):
    wheel, sdist = dists
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {f"{module.replace('.', '/')}.py" for module in SHIPPED_BENCHMARKS} <= names
    with tarfile.open(sdist) as tf:
        sdist_names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert not {"benchmarks/text_minilm.py", "benchmarks/vision.py"} & sdist_names  # moved into the package
    _, python, _, work = installed
    for module in SHIPPED_BENCHMARKS:
        assert _run([python, "-m", module, "--help"], cwd=work).stdout.startswith(f"usage: python -m {module}")


INSTALLED_TEXT_AND_IMAGES = """
import json, tempfile, numpy as np, tsrep
from pathlib import Path
from sklearn.datasets import load_digits
from tsrep import EATextClassifier, EAViTClassifier
texts = ["a wonderful film", "dull and far too long", "I loved every minute", "a waste of an evening"] * 2
labels = ["pos", "neg"] * 4
text_model = EATextClassifier(random_state=0).fit(texts, labels)  # the bundled MiniLM, every default but the seed
images, digits = load_digits(return_X_y=True)
images = images.reshape(-1, 8, 8)[:40]
image_model = EAViTClassifier(max_epochs=2, random_state=0).fit(images, digits[:40])
out, folder = {}, Path(tempfile.mkdtemp())
for name, model, X in (("text", text_model, texts), ("image", image_model, images)):
    loaded = tsrep.load(model.save(folder / f"{name}.safetensors"))
    out[name] = {"file": tsrep.__file__, "classes": sorted(map(str, set(model.predict(X)) | set(model.classes_))),
                 "same": bool(np.array_equal(loaded.predict_proba(X), model.predict_proba(X)))}
print(json.dumps(out))
"""


def test_installed_wheel_fits_text_and_image_estimators_offline_and_round_trips_them(installed):
    _, python, _, work = installed
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = json.loads(_run([python, "-c", INSTALLED_TEXT_AND_IMAGES], cwd=work, env=offline).stdout.splitlines()[-1])
    for name, classes in (("text", ["neg", "pos"]), ("image", [str(d) for d in range(10)])):
        assert Path(result[name]["file"]).resolve().is_relative_to(Path(python).parents[1].resolve())
        assert result[name]["classes"] == classes and result[name]["same"], result


# ----------------------------------------------------------------------------- the vision benchmark: Fashion-MNIST


def _write_idx(path: Path, array, compress: bool = True) -> Path:
    """An IDX file (magic 0x0000080N: unsigned bytes, N dimensions; big-endian sizes; the bytes), as Zalando and
    Debian's dataset-fashion-mnist ship Fashion-MNIST."""
    import gzip

    import numpy as np

    array = np.ascontiguousarray(array, dtype=np.uint8)
    raw = bytes([0, 0, 8, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape) + array.tobytes()
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def _fake_fashion_mnist(directory: Path, n_train: int = 12, n_test: int = 5, compress_test: bool = False):
    """Tiny Fashion-MNIST files: image i is filled with the byte 10 * label + i % 10, so an image and its label can
    be matched after any subset or shuffle."""
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n, compress in (("train", n_train, True), ("t10k", n_test, not compress_test)):
        labels = np.arange(n, dtype=np.uint8) % 10
        images = np.empty((n, 28, 28), dtype=np.uint8)
        images[:] = (10 * labels + np.arange(n) % 10)[:, None, None]
        _write_idx(directory / f"{split}-images-idx3-ubyte", images, compress)
        _write_idx(directory / f"{split}-labels-idx1-ubyte", labels, compress)
        out[split] = (images, labels)
    return out


def test_vision_benchmark_reads_fashion_mnist_idx_files_with_a_seeded_training_subset(tmp_path):
    import numpy as np
    import torch

    from tsrep.benchmarks import vision

    written = _fake_fashion_mnist(tmp_path / "fm", compress_test=True)  # test files plain: both forms are read
    assert sorted(p.name for p in (tmp_path / "fm").iterdir()) == [
        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
    ]
    X_tr, y_tr, X_te, y_te = vision.load_fashion_mnist_images(tmp_path / "fm", train_size=7, seed=3)
    assert X_tr.shape == (7, 1, 28, 28) and X_te.shape == (5, 1, 28, 28)
    assert X_tr.dtype == X_te.dtype == torch.float32 and y_tr.dtype == y_te.dtype == torch.int64
    # Bytes / 255, and every image keeps its own label through the subset.
    pick = np.random.default_rng(3).permutation(12)[:7]
    np.testing.assert_array_equal(y_tr.numpy(), written["train"][1][pick])
    np.testing.assert_allclose(X_tr.numpy(), written["train"][0][pick][:, None].astype(np.float32) / 255.0)
    np.testing.assert_array_equal(y_te.numpy(), written["t10k"][1])  # all test images, in file order
    np.testing.assert_allclose(X_te.numpy()[:, 0], written["t10k"][0] / 255.0, rtol=1e-6)
    assert float(X_tr.max()) <= 1.0 and float(X_tr.min()) >= 0.0
    # The subset is drawn with the seed: the same seed, the same images; another seed, others; a size past the
    # file, all of them.
    again = vision.load_fashion_mnist_images(tmp_path / "fm", train_size=7, seed=3)
    assert torch.equal(again[0], X_tr) and torch.equal(again[1], y_tr)
    other = vision.load_fashion_mnist_images(tmp_path / "fm", train_size=7, seed=4)
    assert not torch.equal(other[0], X_tr)
    assert len(vision.load_fashion_mnist_images(tmp_path / "fm", train_size=1000, seed=0)[0]) == 12
    with pytest.raises(ValueError, match="train_size"):
        vision.load_fashion_mnist_images(tmp_path / "fm", train_size=0, seed=0)


def test_vision_benchmark_refuses_missing_or_bad_fashion_mnist_files_naming_the_install(tmp_path, capsys):
    import numpy as np

    from tsrep.benchmarks import vision

    (tmp_path / "empty").mkdir()
    assert vision.fashion_mnist_paths(tmp_path / "empty") is None
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        vision.load_fashion_mnist_images(tmp_path / "empty", train_size=5, seed=0)
    # The command line stops before importing torch or training anything, with the install command.
    with pytest.raises(SystemExit) as exited:
        vision.main(["--datasets", "digits", "fashion-mnist", "--fashion-mnist-dir", str(tmp_path / "empty")])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "fashion-mnist: no IDX files in" in err and "apt-get install dataset-fashion-mnist" in err
    # A file that is not what its name says is an error naming it, not garbage images.
    _fake_fashion_mnist(tmp_path / "bad")
    _write_idx(tmp_path / "bad" / "train-labels-idx1-ubyte", np.zeros((12, 2), dtype=np.uint8))  # 2 dims, not 1
    with pytest.raises(ValueError, match="train-labels-idx1-ubyte.gz: not an IDX file"):
        vision.load_fashion_mnist_images(tmp_path / "bad", train_size=5, seed=0)
    _write_idx(tmp_path / "bad" / "train-labels-idx1-ubyte", np.zeros(11, dtype=np.uint8))  # one label short
    with pytest.raises(ValueError, match="12 images but"):
        vision.load_fashion_mnist_images(tmp_path / "bad", train_size=5, seed=0)
