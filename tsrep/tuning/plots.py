"""PNG pictures of a study (needs matplotlib, in the ``plots`` extra): optimisation history, parameter
importances, alpha x beta contour and a slice over alpha, beta and p (the paper's Figure 9 view)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import optuna
from optuna.trial import TrialState

logger = logging.getLogger("tsrep.tuning")


def save_study_plots(study: optuna.Study, outdir, prefix: str = "") -> dict[str, Path]:
    """Write the pictures that the study has enough trials for; returns {kind: path}.

    Skipped pictures (too few completed trials, a parameter that never varied) are logged, not raised.
    """
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        from optuna.visualization import matplotlib as ovm
    except ImportError as e:
        raise ImportError("the study pictures need matplotlib: pip install 'tsrep[plots]'") from e

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    varied = {
        name
        for name in {k for t in complete for k in t.params}
        if len({repr(t.params.get(name)) for t in complete}) > 1
    }
    ab = [p for p in ("alpha", "beta") if p in varied]
    sliced = [p for p in ("alpha", "beta", "p") if p in varied]
    jobs = {
        "history": (lambda: ovm.plot_optimization_history(study), len(complete) >= 1),
        "intermediate": (
            lambda: ovm.plot_intermediate_values(study),
            any(t.intermediate_values for t in study.get_trials(deepcopy=False)),
        ),
        "importances": (lambda: ovm.plot_param_importances(study), len(complete) >= 2 and len(varied) >= 1),
        "alpha_beta_contour": (lambda: ovm.plot_contour(study, params=["alpha", "beta"]), len(ab) == 2),
        "alpha_beta_p_slice": (lambda: ovm.plot_slice(study, params=sliced), len(sliced) >= 1),
    }
    written = {}
    for kind, (make, possible) in jobs.items():
        if not possible:
            logger.info("no %s picture: not enough completed trials or varied parameters", kind)
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ax = make()
            fig = (ax.flat[0] if hasattr(ax, "flat") else ax).figure
            fig.set_size_inches(max(fig.get_size_inches()[0], 8), max(fig.get_size_inches()[1], 5))
            path = outdir / f"{prefix}{kind}.png"
            fig.savefig(path, dpi=100, bbox_inches="tight")
            plt.close(fig)
            written[kind] = path
        except Exception as e:  # a picture must never lose the study's results
            logger.warning("could not draw the %s picture: %s", kind, e)
            plt.close("all")
    return written
