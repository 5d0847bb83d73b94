"""Tables and pictures of a benchmark, laid out like Tables I-IV of Wang et al., "Convolution-enhanced
Evolving Attention Networks" (IEEE TPAMI 2023).

Per task, one table: a row per dataset, a column per model, each cell ``score / #params`` (mean
over seeds, "± std" when there are several), and the paper's number beside ours where it has one
for that dataset and model. Under it:

- Avg Rank: models ranked per dataset (1 = best: highest accuracy, lowest RMSE; ties share the
  average rank), averaged over datasets;
- Avg Rel. diff (regression, Eq. 12): r_j = 1/N sum_i (r_ij - R_i) / R_i with R_i the mean RMSE of
  all compared models on dataset i; negative is better than the average model;
- Avg Accuracy (classification);
- Avg fit+predict s: the mean seconds of a cell (fit on TRAIN, predict TEST), cost beside quality.

A last, unranked column gives the score of a constant prediction fitted on TRAIN (majority class,
or the mean training target): a model that does not beat it has learnt nothing.

With several seeds, a second table per task scores seed ensembles: each model's seeds averaged (class
probabilities, or regression predictions) from the test outputs the store keeps, as ``n_estimators``
members would be, at no extra fit (seed_ensembles).

Published columns (``published=[...]``, tsrep.benchmarks.published): test scores other studies
published for methods not run here, headed ``<method>†`` and followed by a footnote citing the study
and the split; "n/a" where the study has no figure for a problem. They are left out of the summary
rows and the critical-difference diagram unless ``published_in_ranks=True`` (only their mean accuracy
over the same datasets is shown); then the summary rows use only the datasets where every model and
every published method has a score.

The summary rows use only the datasets where every model has a score (their number is printed);
a dataset with a missing cell is still shown. The paper's own summary rows are printed beside ours
only when the table holds exactly the paper's datasets and the models are among its seven.

Groups (``groups={name: [datasets]}``, a config's ``groups``): under each task's table, "Means by group",
a row per group that has datasets of the task: the mean score of every model and published column over
the group's datasets where all of them have one (published ones included whether ranked or not, so that
every column of a row averages the same problems), "n of N" when only n of its N datasets were counted,
and each model's mean fit+predict seconds over the same datasets; also written to <task>_groups.csv.

Pictures (matplotlib, PNG): aeon's critical-difference diagram per task (needs three models and
at least two complete datasets) and a grouped bar chart per task (accuracy; for regression the
RMSE relative to the dataset's mean over models, the quantity that Eq. 12 averages).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from tsrep.benchmarks.paper import PAPER_SUMMARY, paper_score
from tsrep.benchmarks.published import SPLIT_DESCRIPTION, published_methods, published_results
from tsrep.benchmarks.registry import model_label
from tsrep.benchmarks.run import score
from tsrep.data.archive import PAPER_CLASSIFICATION, PAPER_REGRESSION, dataset_task, load_archive
from tsrep.models import PAPER_MODELS

LOWER_IS_BETTER = {"classification": False, "regression": True}
PUBLISHED_PREFIX = "published:"
PUBLISHED_MARK = "†"  # heads the published columns and their footnote


def column_label(column: str, labels: dict | None = None) -> str:
    """Table header of a model or of a published column (``published:HC2`` -> ``HC2†``); labels: {column:
    header} that win over a model's own label (a config's variants: BenchmarkConfig.labels)."""
    if labels and column in labels:
        return labels[column]
    if column.startswith(PUBLISHED_PREFIX):
        return column[len(PUBLISHED_PREFIX):] + PUBLISHED_MARK
    return model_label(column)


def published_columns(task: str, methods, datasets: list[str], split: str = "fold0") -> pd.DataFrame:
    """datasets x ``published:<method>`` for the methods the task's study has (NaN where it has no figure)."""
    methods = [m for m in (methods or ()) if m in published_methods(task)]
    frame = published_results(task, split, methods) if methods else pd.DataFrame()
    out = frame.reindex(index=datasets).rename(columns=lambda m: PUBLISHED_PREFIX + m)
    out.attrs = dict(frame.attrs, study_names={d: n for d, n in frame.attrs.get("study_names", {}).items()
                                               if d in set(datasets)})
    return out


def published_footnote(task: str, published: pd.DataFrame, ranked: bool) -> str:
    metric = published.attrs["metric"]
    note = (f"{PUBLISHED_MARK} Published test {metric} of methods not run here, "
            f"{SPLIT_DESCRIPTION[published.attrs['split']]} ({published.attrs['split']}): "
            f"{published.attrs['citation']}. "
            + ("Counted in the summary rows and the critical-difference diagram."
               if ranked else "Not counted in the ranks or the critical-difference diagram"
               + ("; their mean accuracy over the same datasets is shown (n/a where the study has no figure "
                  "for one of them)." if task == "classification" else ".")))
    versions = published.attrs.get("study_names")
    if versions:
        note += " Figures of the study's own version of " + ", ".join(
            f"{d} ({n})" for d, n in versions.items()) + "."
    return note


def average_ranks(scores: pd.DataFrame, lower_better: bool) -> pd.Series:
    """scores: datasets x models (complete rows) -> mean rank per model (1 = best, ties averaged)."""
    from scipy.stats import rankdata

    values = scores.to_numpy(dtype=float)
    ranks = np.array([rankdata(row if lower_better else -row) for row in values])
    return pd.Series(ranks.mean(axis=0), index=scores.columns)


def average_relative_difference(scores: pd.DataFrame) -> pd.Series:
    """Eq. 12 of Wang et al. (TPAMI 2023): mean over datasets of (r_ij - mean_k r_ik) / mean_k r_ik."""
    values = scores.to_numpy(dtype=float)
    means = values.mean(axis=1, keepdims=True)
    return pd.Series(((values - means) / means).mean(axis=0), index=scores.columns)


def aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """Stored rows -> one row per (task, dataset, model): mean, std and count over seeds, mean #params,
    mean seconds of a cell (fit + predict)."""
    ok = df[df["status"] == "ok"]
    if "seconds" not in ok.columns:
        ok = ok.assign(seconds=np.nan)
    if ok.empty:
        return pd.DataFrame(columns=["task", "dataset", "model", "score", "std", "n_seeds", "n_params", "seconds"])
    grouped = ok.groupby(["task", "dataset", "model"], sort=False)
    out = grouped.agg(score=("score", "mean"), std=("score", "std"), n_seeds=("score", "size"),
                      n_params=("n_params", "mean"), seconds=("seconds", "mean")).reset_index()
    return out


def seed_ensembles(df: pd.DataFrame, outputs: dict) -> pd.DataFrame:
    """Seed ensembles from the stored test outputs (tsrep.benchmarks.store), without another fit.

    Per (task, dataset, model) with at least two finished seeds whose outputs are stored: the mean of the
    seeds' class probabilities (classification: the class of the largest mean wins; a model whose
    probabilities are 0 or 1 votes) or of their predictions (regression), scored like a cell. This is
    what ``n_estimators`` = the number of seeds gives, with the seeds' models as its members. Rows as
    aggregate()'s; n_seeds is the number of members, n_params and seconds are the members' sums (the
    ensemble's size and cost). Seeds that disagree on the test targets or the classes are not averaged.
    """
    columns = ["task", "dataset", "model", "score", "std", "n_seeds", "n_params", "seconds"]
    if not outputs or not len(df):
        return pd.DataFrame(columns=columns)
    ok = df[(df["status"] == "ok") & df["key"].isin(set(outputs))]
    rows = []
    for (task, dataset, model), group in ok.groupby(["task", "dataset", "model"], sort=False):
        members = [outputs[key] for key in group["key"]]
        labels = [(_as_list(m["targets"]), _as_list(m["classes"])) for m in members]
        if len(members) < 2 or any(pair != labels[0] for pair in labels):
            continue
        targets, classes = labels[0]
        mean = np.mean([np.asarray(m["outputs"], dtype=float) for m in members], axis=0)
        predicted = np.asarray(classes, dtype=object)[mean.argmax(axis=1)] if task == "classification" else mean
        rows.append({"task": task, "dataset": dataset, "model": model, "score": score(task, targets, predicted),
                     "std": np.nan, "n_seeds": len(members),
                     "n_params": pd.to_numeric(group["n_params"], errors="coerce").sum(min_count=1),
                     "seconds": pd.to_numeric(group["seconds"], errors="coerce").sum(min_count=1)})
    return pd.DataFrame(rows, columns=columns)


def _as_list(values) -> list | None:
    """Stored labels (JSON lists) and those of a row fresh from run_cell (arrays) compare alike."""
    return None if values is None else np.asarray(values).tolist()


def format_params(n: float | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "?"
    if n >= 1e5:
        return f"{n / 1e6:.2g} M" if n < 1e6 else f"{n / 1e6:.1f} M"
    return f"{n / 1e3:.3g} k"


def format_score(x: float, task: str) -> str:
    return f"{x:.3f}" if task == "classification" or abs(x) >= 1 else f"{x:.4g}"


def reference_scores(datasets, offline=None, cache_dir=None) -> dict[str, float]:
    """Per dataset the test score of a constant prediction fitted on TRAIN: the majority class's accuracy
    (classification) or the RMSE of predicting the mean training target (regression). A model that does
    not beat it has learnt nothing; datasets that cannot be loaded are left out."""

    out = {}
    for d in datasets:
        try:
            _, y_train = load_archive(d, "train", cache_dir=cache_dir, offline=offline)
            _, y_test = load_archive(d, "test", cache_dir=cache_dir, offline=offline)
        except Exception:
            continue
        if dataset_task(d) == "classification":
            values, counts = np.unique(y_train, return_counts=True)
            constant = values[counts.argmax()]
        else:
            constant = float(np.mean(y_train))
        out[d] = score(dataset_task(d), y_test, np.full(len(y_test), constant, dtype=object
                                                         if dataset_task(d) == "classification" else float))
    return out


REFERENCE_LABEL = {"classification": "Majority class", "regression": "Train mean"}
#: What run_cell adds to a row for the seed ensembles; kept out of cells.csv (whole test sets).
OUTPUT_KEYS = ("outputs", "classes", "targets")
ENSEMBLE_NOTE = ("each model's seeds averaged (class probabilities, or predictions) into one ensemble, from the "
                 "stored test outputs; #params and seconds are the members' sums")
SECONDS_ROW = "Avg fit+predict s"


def task_table(agg: pd.DataFrame, task: str, models: list[str], datasets: list[str], published=None,
               published_split: str = "fold0", published_in_ranks: bool = False, labels: dict | None = None) -> dict:
    """Everything one task's table needs: scores (datasets x models), the published columns, the complete
    datasets (over the ranked columns: the models, and the published ones when published_in_ranks), summary rows,
    and the headers that are not a model's own label (labels, column_label)."""
    sub = agg[agg["task"] == task]
    datasets = [d for d in datasets if d in set(sub["dataset"])]
    scores = sub.pivot(index="dataset", columns="model", values="score").reindex(index=datasets, columns=models)
    extra = published_columns(task, published, datasets, published_split)
    ranked = pd.concat([scores, extra], axis=1) if published_in_ranks and len(extra.columns) else scores
    complete = ranked.dropna()
    summary = {}
    if len(complete) and len(complete.columns) > 1:  # ranks and relative differences compare models
        summary["Avg Rank"] = average_ranks(complete, LOWER_IS_BETTER[task])
        if task == "regression":
            summary["Avg Rel. diff"] = average_relative_difference(complete)
    if len(complete) and task == "classification":  # a mean accuracy means something for one model too
        # Published columns get their mean over the same datasets even when they are not ranked (n/a
        # where the study has no figure for one of them).
        unranked = extra.loc[complete.index, [c for c in extra.columns if c not in complete.columns]]
        summary["Avg Accuracy"] = pd.concat([complete, unranked], axis=1).mean(axis=0, skipna=False)
    seconds = sub.pivot(index="dataset", columns="model", values="seconds").reindex(index=datasets, columns=models)
    if len(complete) and seconds.notna().any().any():
        # Cost beside quality: mean fit + predict seconds per problem (published columns have none).
        summary[SECONDS_ROW] = seconds.loc[complete.index].mean(axis=0)
    return {"scores": scores, "complete": complete, "summary": summary, "datasets": datasets, "sub": sub,
            "published": extra, "published_in_ranks": published_in_ranks and len(extra.columns) > 0,
            "seconds": seconds, "labels": dict(labels or {})}


def _task_of(dataset: str) -> str | None:
    try:
        return dataset_task(dataset)
    except ValueError:  # a name outside the archive's lists: known only by its results
        return None


def group_means(table: dict, task: str, models: list[str], groups: dict) -> pd.DataFrame:
    """A row per group with datasets of `task`: group, datasets_counted (those where every model and published
    column has a score), datasets_in_group (its datasets of the task), the mean score of each model and
    published column over the counted datasets, and <model>_seconds, the model's mean fit+predict seconds there."""
    values = pd.concat([table["scores"], table["published"]], axis=1)
    seconds = table["seconds"].rename(columns=lambda m: f"{m}_seconds")
    rows = []
    for name, members in groups.items():
        # A dataset of the group without any result yet still counts in N: its task is known by its name.
        members = [d for d in members if d in table["datasets"] or _task_of(d) == task]
        if not members:
            continue
        counted = values.reindex(members).dropna()
        rows.append({"group": name, "datasets_counted": len(counted), "datasets_in_group": len(members),
                     **counted.mean(axis=0), **seconds.reindex(counted.index).mean(axis=0)})
    return pd.DataFrame(rows, columns=["group", "datasets_counted", "datasets_in_group", *values.columns,
                                       *seconds.columns])


GROUPS_NOTE = ("Means over the datasets of each group where every column has a score; 'n of N': n of the group's "
               "N datasets counted (on the others a model's cell is missing or failed, or a published method has "
               "no figure). '<model> s': the model's mean fit+predict seconds over the same datasets.")


def render_groups(means: pd.DataFrame, task: str, models: list[str], labels: dict | None = None) -> str:
    """The "Means by group" table of group_means' rows, and its note (labels: as column_label's)."""
    metric = "accuracy" if task == "classification" else "RMSE"
    columns = [c for c in means.columns if c in models or c.startswith(PUBLISHED_PREFIX)]
    lines = [f"| Means by group ({metric}) | Datasets | " + " | ".join(
                 [column_label(c, labels) for c in columns] + [f"{column_label(m, labels)} s" for m in models]) + " |",
             "|---|---|" + "---|" * (len(columns) + len(models))]
    for row in means.to_dict("records"):
        counted, size = row["datasets_counted"], row["datasets_in_group"]
        cells = [f"{counted} of {size}" if counted < size else str(counted)]
        cells += ["n/a" if pd.isna(row[c]) else format_score(row[c], task) for c in columns]
        cells += ["n/a" if pd.isna(row[f"{m}_seconds"]) else f"{row[f'{m}_seconds']:.1f}" for m in models]
        lines.append(f"| {row['group']} | " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", GROUPS_NOTE])


def _paper_summary_applies(task: str, complete: pd.DataFrame, models: list[str]) -> bool:
    paper_sets = {"classification": set(PAPER_CLASSIFICATION), "regression": set(PAPER_REGRESSION)}
    return set(complete.index) == paper_sets[task] and set(models) <= set(PAPER_MODELS)


def render_markdown(table: dict, task: str, models: list[str], paper: bool = True, references=None) -> str:
    """references: {dataset: constant-prediction score} shown as a last column (not ranked)."""
    sub, datasets = table["sub"], table["datasets"]
    lookup = {(r.dataset, r.model): r for r in sub.itertuples()}
    metric = "accuracy" if task == "classification" else "RMSE"
    published = table["published"]
    labels = [column_label(c, table.get("labels")) for c in models + list(published.columns)]
    extra = [REFERENCE_LABEL[task]] if references else []
    lines = [f"| Dataset ({metric} / #params) | " + " | ".join(labels + extra) + " |",
             "|---|" + "---|" * (len(labels) + len(extra))]
    for d in datasets:
        cells = []
        for m in models:
            r = lookup.get((d, m))
            text = "n/a"
            if r is not None:
                text = format_score(r.score, task)
                if r.n_seeds > 1 and not math.isnan(r.std):
                    text += f" ± {format_score(r.std, task)}"
                text += f" / {format_params(r.n_params)}"
            ref = paper_score(d, m) if paper else None
            if ref is not None:
                text += f" (paper {ref[0]:g}" + (f" / {format_params(ref[1])})" if ref[1] else ")")
            cells.append(text)
        for column in published.columns:
            value = published.at[d, column]
            cells.append("n/a" if pd.isna(value) else format_score(value, task))
        if references:
            cells.append(format_score(references[d], task) if d in references else "n/a")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    n = len(table["complete"])
    paper_rows = paper and _paper_summary_applies(task, table["complete"], models)
    for name, values in table["summary"].items():
        digits = {"Avg Rank": 2, SECONDS_ROW: 1}.get(name, 3)
        cells = []
        for m in models:
            text = "n/a" if pd.isna(values[m]) else f"{values[m]:.{digits}f}"
            if paper_rows and m in PAPER_SUMMARY[task].get(name, {}):
                text += f" (paper {PAPER_SUMMARY[task][name][m]:g})"
            cells.append(text)
        cells += ["" if c not in values.index else "n/a" if pd.isna(values[c]) else f"{values[c]:.{digits}f}"
                  for c in published.columns]
        lines.append(f"| {name} (over {n} datasets) | " + " | ".join(cells + [""] * bool(references)) + " |")
    if len(published.columns):
        lines += ["", published_footnote(task, published, table["published_in_ranks"])]
    return "\n".join(lines)


def table_csv(table: dict, task: str, models: list[str], references=None) -> pd.DataFrame:
    """Wide CSV: per model score, std, n_seeds, n_params, paper score, paper n_params; summary rows after."""
    sub, datasets = table["sub"], table["datasets"]
    lookup = {(r.dataset, r.model): r for r in sub.itertuples()}
    rows = []
    for d in datasets:
        row = {"dataset": d}
        for m in models:
            r = lookup.get((d, m))
            ref = paper_score(d, m)
            row.update({
                f"{m}": r.score if r is not None else np.nan,
                f"{m}_std": r.std if r is not None else np.nan,
                f"{m}_n_seeds": r.n_seeds if r is not None else 0,
                f"{m}_n_params": r.n_params if r is not None else np.nan,
                f"{m}_paper": ref[0] if ref else np.nan,
                f"{m}_paper_n_params": ref[1] if ref and ref[1] else np.nan,
            })
        row.update(table["published"].loc[d].to_dict() if len(table["published"].columns) else {})
        row["reference"] = (references or {}).get(d, np.nan)
        rows.append(row)
    for name, values in table["summary"].items():
        row = {"dataset": f"{name} (over {len(table['complete'])} datasets)"}
        row.update(values.to_dict())
        rows.append(row)
    return pd.DataFrame(rows)


def plot_cd(table: dict, task: str, models: list[str], path: Path) -> Path | None:
    """aeon's critical-difference diagram; None (and why, printed) when it cannot be drawn."""
    complete = table["complete"]  # the ranked columns: the models, and the published ones when counted
    if len(complete.columns) < 3 or len(complete) < 2:  # aeon's Friedman test needs three models
        print(f"[report] no critical-difference diagram for {task}: needs >= 3 models and >= 2 complete datasets")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from aeon.visualisation import plot_critical_difference

    try:
        fig, _ = plot_critical_difference(
            complete.to_numpy(dtype=float), [column_label(c, table.get("labels")) for c in complete.columns],
            lower_better=LOWER_IS_BETTER[task],
        )
    except Exception as err:  # e.g. too few datasets for the test
        print(f"[report] critical-difference diagram for {task} failed: {type(err).__name__}: {err}")
        return None
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_bars(table: dict, task: str, models: list[str], path: Path) -> Path | None:
    scores = table["scores"]
    if scores.empty:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = scores.to_numpy(dtype=float)
    if task == "regression":
        values = values / np.nanmean(values, axis=1, keepdims=True)
        ylabel = "RMSE / mean RMSE over models (lower is better)"
    else:
        ylabel = "test accuracy"
    n_d, n_m = values.shape
    width = 0.8 / n_m
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * n_d + 2), 4))
    x = np.arange(n_d)
    for j, m in enumerate(models):
        ax.bar(x + (j - (n_m - 1) / 2) * width, values[:, j], width, label=column_label(m, table.get("labels")))
        if task == "classification":
            for i, d in enumerate(scores.index):
                ref = paper_score(d, m)
                if ref is not None:
                    ax.plot(x[i] + (j - (n_m - 1) / 2) * width, ref[0], "k_", markersize=8)
    ax.set_xticks(x, list(scores.index), rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    title = f"{task}: test {'accuracy' if task == 'classification' else 'relative RMSE'} per dataset"
    if task == "classification":
        title += " (black marks: Wang et al. 2023)"
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path


def _write_task_table(table: dict, task: str, models: list[str], out_dir: Path, stem: str, paper: bool,
                      references, groups) -> tuple[str, list]:
    """One task table as <stem>.md and <stem>.csv, with its groups' means (and <stem>_groups.csv) when there
    are groups; returns (its markdown, the files written)."""
    md = render_markdown(table, task, models, paper, references)
    table_csv(table, task, models, references).to_csv(out_dir / f"{stem}.csv", index=False)
    files = [out_dir / f"{stem}.csv", out_dir / f"{stem}.md"]
    means = group_means(table, task, models, groups) if groups else pd.DataFrame()
    if len(means):
        md += "\n\n" + render_groups(means, task, models, table.get("labels"))
        means.to_csv(out_dir / f"{stem}_groups.csv", index=False)
        files.append(out_dir / f"{stem}_groups.csv")
    (out_dir / f"{stem}.md").write_text(md + "\n")
    return md, files


def write_report(df: pd.DataFrame, models: list[str], datasets: list[str], out_dir, title: str = "",
                 plots: bool = True, paper: bool = True, references: dict | None = None, published=None,
                 published_split: str = "fold0", published_in_ranks: bool = False,
                 outputs: dict | None = None, groups: dict | None = None, labels: dict | None = None) -> dict:
    """Write tables (Markdown + CSV), the cells' CSV and the pictures; returns {"markdown": str, "files": [...]}.

    references: {dataset: score of a constant prediction} (reference_scores), shown beside the models.
    published: methods whose published scores are shown beside the models (tsrep.benchmarks.published;
    each where its task's study has it), from split "fold0" or "mean"; counted in the summary rows and
    the critical-difference diagram only with published_in_ranks=True.
    outputs: the cells' stored test outputs (ResultStore.outputs); with several seeds, a second table per
    task gives the seed ensembles (seed_ensembles), written to <task>_seed_ensembles.md/.csv.
    groups: {name: [datasets]}; each task table is followed by its groups' means (group_means), also written
    to <task>_groups.csv (and <task>_seed_ensembles_groups.csv).
    labels: {model: header} that win over the models' own labels in every table and picture (a config's
    variants, BenchmarkConfig.labels).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    cells_csv = out_dir / "cells.csv"
    df.drop(columns=["spec", *OUTPUT_KEYS], errors="ignore").to_csv(cells_csv, index=False)
    files.append(cells_csv)
    agg = aggregate(df)
    ensembles = seed_ensembles(df, outputs or {})
    parts = [f"# {title}".rstrip()] if title else []
    for task in ("classification", "regression"):
        table = task_table(agg, task, models, datasets, published, published_split, published_in_ranks, labels)
        if not table["datasets"]:
            continue
        md, written = _write_task_table(table, task, models, out_dir, task, paper, references, groups)
        parts.append(f"## {task.capitalize()} ({'accuracy, higher' if task == 'classification' else 'RMSE, lower'}"
                     " is better)\n\n" + md)
        files += written
        if len(ensembles[ensembles["task"] == task]):
            ens_table = task_table(ensembles, task, models, datasets, published, published_split, published_in_ranks,
                                   labels)
            ens_md, written = _write_task_table(ens_table, task, models, out_dir, f"{task}_seed_ensembles", False,
                                                references, groups)
            parts.append(f"### Seed ensembles ({task}): {ENSEMBLE_NOTE}\n\n" + ens_md)
            files += written
        if plots:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                print("[report] matplotlib is not installed (pip install tsrep[plots]); no pictures")
                plots = False
                continue
            for made in (plot_cd(table, task, models, out_dir / f"cd_{task}.png"),
                         plot_bars(table, task, models, out_dir / f"bar_{task}.png")):
                if made is not None:
                    files.append(made)
    errors = df[df["status"] != "ok"]
    if len(errors):
        parts.append("Failed cells (run again to retry): " + ", ".join(
            f"{r.dataset}/{r.model}/seed {r.seed}" for r in errors.itertuples()))
    markdown = "\n\n".join(parts) + "\n"
    (out_dir / "tables.md").write_text(markdown)
    files.append(out_dir / "tables.md")
    return {"markdown": markdown, "files": files}
