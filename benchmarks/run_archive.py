"""The archive benchmark of Tables I-IV of Wang et al., "Convolution-enhanced Evolving Attention Networks"
(IEEE TPAMI 2023) (also installed as the `tsrep-benchmark` command).

    .venv/bin/python benchmarks/run_archive.py --config quick            # shipped data, offline
    .venv/bin/python benchmarks/run_archive.py --config paper --jobs 2   # the paper's 17 problems

See tsrep/benchmarks/cli.py for the options and benchmarks/README.md for results.
"""

from tsrep.benchmarks.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
