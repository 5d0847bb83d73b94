"""The MiniRocket blend (``blend_minirocket``) measured from a benchmark store's network-alone cells.

A cell fitted with ``blend_minirocket=False`` stores the network's test probabilities. The blended estimator of
the same seed and step budget trains the same network (the MiniRocket is fitted after it and draws nothing from
its random streams) and answers a weighted mean of those probabilities and its MiniRocket's (equal weights from 32
training cases, a quarter for the network below: tsrep.estimators._minirocket_blend.classifier_network_weight); by
default it trains a
smaller budget than the network alone, and ``--blended`` reads its own cells instead (their networks recovered).
This script fits that MiniRocket (tsrep.estimators._minirocket_blend.CalibratedMiniRocket, seeded with the
cell's seed as the estimator seeds it) on each problem's TRAIN and scores the blend on TEST, so the blend's
accuracy over many problems and seeds costs seconds a cell instead of a refit. Prints the mean accuracy of the
network, the MiniRocket and the blend (one model and, where a problem has several seeds, the seeds' networks
averaged) by group of the config, and writes the per-cell table as CSV.

    python benchmarks/minirocket_blend.py --config ucr-dev47 --store results/archive/ucr-dev47/results.sqlite \
        --model ea-dc-t-network
    python benchmarks/minirocket_blend.py --config ucr-dev47 --store <store of the default> --model ea-dc-transformer \
        --blended    # cells of the blended default: their networks recovered, and what n_estimators=3 would answer
    ... --rules      # also other ways to combine the two (weighted means, geometric mean, the more confident)
    ... --partners multirocket hydra multirocket+hydra   # other convolution transforms in the MiniRocket's place
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tsrep.benchmarks.config import load_config
from tsrep.benchmarks.published import published_results
from tsrep.benchmarks.store import ResultStore
from tsrep.data import as_case_list, load_archive
from tsrep.estimators._minirocket_blend import CalibratedMiniRocket, classifier_network_weight, torch_threads_kept


#: --blended: how far below zero a recovered network probability may come out (it is then clipped). The refitted
#: MiniRocket can differ from the cell's in the fourth decimal (measured: one ArrowHead cell, -0.0008).
RECOVERY_TOLERANCE = 0.01
#: --rules: the network's weight in a weighted mean with the MiniRocket (0.5 is the estimator's blend from 32 cases).
RULE_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)


#: --partners: aeon's convolution transforms that may stand in the MiniRocket's place ("a+b": their features side by
#: side, as MultiROCKET-Hydra: Dempster, Schmidt and Webb, "Hydra: Competing Convolutional Kernels for Fast and
#: Accurate Time Series Classification", Data Mining and Knowledge Discovery, 2023).
PARTNER_TRANSFORMS = ("minirocket", "multirocket", "hydra")


class CalibratedTransforms(CalibratedMiniRocket):
    """The estimator's calibrated ridge (features scaled by their standard deviation, leave-one-out temperature) on
    the features of other aeon convolution transforms, side by side: `partner` names them, joined by "+"."""

    def __init__(self, n_classes: int, partner: str, random_state: int = 0):
        super().__init__(n_classes, random_state=random_state)
        self.partner = partner

    def _fit_transform(self, series: np.ndarray) -> np.ndarray:
        from aeon.transformations.collection import convolution_based

        kinds = {"minirocket": convolution_based.MiniRocket, "multirocket": convolution_based.MultiRocket,
                 "hydra": convolution_based.HydraTransformer}
        with torch_threads_kept():
            self.transforms_ = [kinds[name](random_state=self.random_state, n_jobs=1).fit(series)
                                for name in self.partner.split("+")]
        return self._transform(series)

    def _transform(self, series: np.ndarray) -> np.ndarray:
        with torch_threads_kept():
            return np.concatenate([np.asarray(t.transform(series), dtype=np.float64) for t in self.transforms_], 1)


def accuracy(classes: np.ndarray, targets: np.ndarray, proba: np.ndarray) -> float:
    return float(np.mean(classes[np.argmax(proba, axis=1)] == targets))


def blend_cells(store: ResultStore, model: str, datasets: list[str], data_dir=None, blended=False,
                partners=()) -> pd.DataFrame:
    """One row per stored (problem, seed) of `model`: dataset, seed, network, minirocket, blend accuracies, seconds;
    for each of `partners` (CalibratedTransforms), its accuracy alone, blended with the network, and its seconds.

    blended: the cells are blended estimators (the default classifier), whose stored probabilities are the weighted
    mean w * network + (1 - w) * MiniRocket (w the estimator's network weight for the problem's TRAIN size): the
    network's are recovered as (stored - (1 - w) * MiniRocket) / w (the same MiniRocket, refitted here with the
    cell's seed). The blend columns use the same weight."""
    frame = store.frame()
    frame = frame[(frame.model == model) & (frame.status == "ok") & frame.dataset.isin(datasets)]
    # A store resumed under other defaults holds a problem's seed twice (the old key's row is kept): the newest.
    frame = frame.sort_values("finished_at").drop_duplicates(["dataset", "seed"], keep="last")
    outputs = store.outputs(list(frame.key))
    rows = []
    for dataset, cells in frame.groupby("dataset", sort=False):
        X, y = load_archive(dataset, split="train", offline=data_dir or True)
        X_test, _ = load_archive(dataset, split="test", offline=data_dir or True)
        train_cases, test_cases = as_case_list(X), as_case_list(X_test)  # once a problem, not once a cell
        weight = classifier_network_weight(len(train_cases))
        for cell in cells.itertuples():
            if cell.key not in outputs:
                continue
            stored = outputs[cell.key]
            classes, targets = np.asarray(stored["classes"]), np.asarray(stored["targets"])
            network = np.asarray(stored["outputs"], dtype=np.float64)
            index = np.searchsorted(classes, y)
            start = time.perf_counter()
            minirocket = CalibratedMiniRocket(len(classes), random_state=int(cell.seed)).fit(train_cases, index)
            mr_proba = minirocket.predict_proba(test_cases)
            recovery_error = 0.0
            if blended:
                network = (network - (1 - weight) * mr_proba) / weight
                recovery_error = max(-float(network.min()), 0.0)
                if recovery_error > RECOVERY_TOLERANCE or not np.allclose(network.sum(axis=1), 1, atol=1e-4):
                    raise SystemExit(f"{dataset} seed {cell.seed}: the stored probabilities are not a blend with this "
                                     "MiniRocket; without --blended the cells are read as the network alone")
                network = np.clip(network, 0.0, None)
                network /= network.sum(axis=1, keepdims=True)
            rows.append({
                "dataset": dataset, "seed": int(cell.seed), "network": accuracy(classes, targets, network),
                "minirocket": accuracy(classes, targets, mr_proba),
                "blend": accuracy(classes, targets, weight * network + (1 - weight) * mr_proba),
                "network_weight": weight, "temperature": minirocket.temperature_,
                "minirocket_seconds": time.perf_counter() - start,
                "network_seconds": float(cell.seconds), "recovery_error": recovery_error,
                "_network": network, "_minirocket": mr_proba, "_classes": classes, "_targets": targets,
            })
            for partner in partners:
                start = time.perf_counter()
                proba = CalibratedTransforms(len(classes), partner, int(cell.seed)).fit(
                    train_cases, index).predict_proba(test_cases)
                rows[-1].update({f"{partner} alone": accuracy(classes, targets, proba),
                                 f"network + {partner}": accuracy(
                                     classes, targets, weight * network + (1 - weight) * proba),
                                 f"{partner} seconds": time.perf_counter() - start})
    return pd.DataFrame(rows)


def seeds_averaged(cells: pd.DataFrame) -> pd.DataFrame:
    """Per problem: the seeds' networks averaged, alone and blended with the first seed's MiniRocket (the
    estimator's weights)."""
    rows = []
    for dataset, group in cells.groupby("dataset", sort=False):
        first = group.iloc[0]
        network = np.mean(np.stack(list(group["_network"])), axis=0)
        rows.append({"dataset": dataset, "n_seeds": len(group),
                     "networks averaged": accuracy(first["_classes"], first["_targets"], network),
                     "networks averaged + MiniRocket": accuracy(
                         first["_classes"], first["_targets"],
                         first["network_weight"] * network + (1 - first["network_weight"]) * first["_minirocket"])})
    return pd.DataFrame(rows).set_index("dataset")


def blend_rules(cells: pd.DataFrame) -> pd.DataFrame:
    """Per cell: accuracy of other ways to combine the network with the MiniRocket (weighted means, the geometric
    mean, the more confident of the two), to check the estimator's plain mean against them."""
    rows = []
    for cell in cells.to_dict("records"):  # (itertuples renames the underscored columns)
        network, minirocket = cell["_network"], cell["_minirocket"]
        score = lambda proba: accuracy(cell["_classes"], cell["_targets"], proba)  # noqa: E731
        row = {"dataset": cell["dataset"], "seed": cell["seed"]}
        row.update({f"{w:g} network": score(w * network + (1 - w) * minirocket) for w in RULE_WEIGHTS})
        row["geometric mean"] = score(np.log(network + 1e-12) + np.log(minirocket + 1e-12))
        more_sure = network.max(axis=1, keepdims=True) >= minirocket.max(axis=1, keepdims=True)
        row["more confident"] = score(np.where(more_sure, network, minirocket))
        rows.append(row)
    return pd.DataFrame(rows)


def print_rules(cells: pd.DataFrame, groups: dict) -> None:
    """Means over problems (of the seeds) of every rule by group, and each rule's change a problem against the mean
    (standard error; problems up / down)."""
    rules = blend_rules(cells)
    per_problem = rules.drop(columns="seed").groupby("dataset").mean()
    base = per_problem["0.5 network"]
    for name, datasets in groups.items():
        have = [d for d in datasets if d in per_problem.index]
        print(f"{name} (n={len(have)}): " + ", ".join(
            f"{rule} {per_problem.loc[have, rule].mean():.4f}" for rule in per_problem))
    for rule in per_problem:
        change = per_problem[rule] - base
        print(f"  {rule:16s} {change.mean():+.4f} a problem against the plain mean (SE "
              f"{change.std(ddof=1) / np.sqrt(len(change)):.4f}), {(change > 1e-9).sum()} up, "
              f"{(change < -1e-9).sum()} down")


def print_partners(cells: pd.DataFrame, partners: list[str], groups: dict) -> None:
    """Means over problems (of the seeds) of each partner alone and blended with the network, by group, and the
    blend's change a problem against the MiniRocket blend (standard error; problems up / down)."""
    columns = ["minirocket", "blend", *(c for p in partners for c in (f"{p} alone", f"network + {p}"))]
    per_problem = cells.groupby("dataset")[columns].mean()
    for name, datasets in groups.items():
        have = [d for d in datasets if d in per_problem.index]
        print(f"{name} (n={len(have)}): " + ", ".join(
            f"{column} {per_problem.loc[have, column].mean():.4f}" for column in columns))
    for partner in partners:
        change = per_problem[f"network + {partner}"] - per_problem["blend"]
        print(f"  network + {partner}: {change.mean():+.4f} a problem against network + MiniRocket (SE "
              f"{change.std(ddof=1) / np.sqrt(len(change)):.4f}), {(change > 1e-9).sum()} up, "
              f"{(change < -1e-9).sum()} down; fit+predict median {cells[f'{partner} seconds'].median():.1f} s "
              f"(MiniRocket {cells.minirocket_seconds.median():.1f} s)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="ucr-dev47")
    parser.add_argument("--store", required=True, help="results.sqlite of a tsrep-benchmark run")
    parser.add_argument("--model", default="ea-dc-t-network",
                        help="the model name of the network-alone cells in the store")
    parser.add_argument("--offline", default=None, help="directory of the archive files (default: tsrep's search)")
    parser.add_argument("--output", default="minirocket_blend.csv")
    parser.add_argument("--blended", action="store_true",
                        help="the cells are blended estimators (the default classifier): recover their networks")
    parser.add_argument("--rules", action="store_true",
                        help="also score other combinations (weighted means, geometric mean, the more confident)")
    parser.add_argument("--partners", nargs="+", default=[], metavar="TRANSFORMS",
                        help="also blend the network with other convolution transforms behind the same calibrated "
                             f"ridge: {', '.join(PARTNER_TRANSFORMS)}, or several joined by '+'")
    args = parser.parse_args(argv)
    for partner in args.partners:
        if not set(partner.split("+")) <= set(PARTNER_TRANSFORMS):
            parser.error(f"--partners {partner!r}: each transform must be one of {', '.join(PARTNER_TRANSFORMS)}")
    if not Path(args.store).is_file():  # ResultStore would create an empty store at a mistyped path
        parser.error(f"--store {args.store!r} is not a file; give the results.sqlite of a tsrep-benchmark run")
    config = load_config(args.config)
    cells = blend_cells(ResultStore(args.store), args.model, list(config.datasets), args.offline, args.blended,
                        args.partners)
    if cells.empty:
        raise SystemExit(f"no finished cells of {args.model!r} with stored outputs in {args.store}")
    cells.drop(columns=[c for c in cells if c.startswith("_")]).to_csv(args.output, index=False)
    per_problem = cells.groupby("dataset")[["network", "minirocket", "blend"]].mean()
    averaged = seeds_averaged(cells)
    published = published_results("classification", split="fold0", methods=["HC2", "InceptionTime", "MiniROCKET"])
    groups = {"all": list(config.datasets), **dict(config.groups or {})}
    print(f"{len(cells)} cells, {cells.seed.nunique()} seed(s); MiniRocket fit+predict median "
          f"{cells.minirocket_seconds.median():.1f} s, network fit+predict median "
          f"{cells.network_seconds.median():.0f} s" + (
              f"; largest recovered negative probability {cells.recovery_error.max():.1e} (clipped)"
              if args.blended else ""))
    for name, datasets in groups.items():
        have = [d for d in datasets if d in per_problem.index]
        line = per_problem.loc[have].mean()
        both = averaged.loc[have].mean()
        print(f"{name:32s} n={len(have):2d}  network {line.network:.4f}  MiniRocket {line.minirocket:.4f}  "
              f"blend {line.blend:.4f}  | seeds averaged {both['networks averaged']:.4f}, "
              f"+ MiniRocket {both['networks averaged + MiniRocket']:.4f}")
        known = [d for d in have if d in published.index]
        if known:
            mine = per_problem.loc[known].blend.mean()
            ours = averaged.loc[known, "networks averaged + MiniRocket"].mean()
            theirs = published.loc[known]
            print(f"{'':32s} on the {len(known)} with published figures: blend {mine:.4f}, seeds averaged + "
                  f"MiniRocket {ours:.4f} | HC2 {theirs.HC2.mean():.4f}, InceptionTime "
                  f"{theirs.InceptionTime.mean():.4f}, MiniROCKET {theirs.MiniROCKET.mean():.4f}")
    if args.rules:
        print_rules(cells, groups)
    if args.partners:
        print_partners(cells, args.partners, groups)
    print(f"per-cell table: {args.output}")


if __name__ == "__main__":
    main()
