"""The numbers of the time-series tables of Wang et al., "Convolution-enhanced Evolving Attention Networks"
(IEEE TPAMI 2023, Tables I-IV), keyed by
tsrep's dataset names and tsrep.models names.

Table I: RMSE / #parameters (millions) on 6 Monash regression problems; Table II: accuracy /
#parameters on 11 UEA problems; Tables III-IV: ablations (scores only) on 4 + 4 of them.
Where Table IV repeats a Table II cell with another value (Transformer-Base on Handwriting: 0.251
in Table IV, 0.282 in Table II), the main tables win for the seven main models and Tables III-IV
give only the ablation columns.
"""

from __future__ import annotations

_MODELS = ("lstm", "gru", "resnet", "dilated-conv", "transformer", "dc-transformer", "ea-dc-transformer")

# dataset -> seven (score, params in M) pairs in _MODELS order
_TABLE_I = {
    "AppliancesEnergy": "3.844 1.2 4.151 0.9 3.369 0.6 3.711 0.6 3.663 0.6 3.035 0.8 2.957 0.8",
    "BenzeneConcentration": "7.936 1.2 6.919 0.9 2.889 0.5 2.758 0.5 1.576 0.5 1.127 0.5 0.758 0.5",
    "BeijingPM10Quality": "101.863 0.3 101.452 0.2 95.22 0.1 96.927 0.1 98.035 0.2 91.993 0.2 91.774 0.2",
    "BeijingPM25Quality": "64.715 0.3 65.667 0.2 64.54 0.1 64.813 0.1 64.874 0.4 59.425 0.5 59.118 0.5",
    "LiveFuelMoistureContent": "43.316 0.3 44.19 0.3 44.723 0.2 43.457 0.2 44.874 0.2 43.326 0.3 43.261 0.3",
    "IEEEPPG": "34.814 1.4 26.961 1.1 46.593 2.7 39.633 2.7 33.848 5.8 30.075 5.8 23.14 5.8",
}
_TABLE_II = {
    "EthanolConcentration": "0.224 0.8 0.251 0.8 0.27 0.7 0.272 0.7 0.272 0.6 0.293 0.8 0.307 0.8",
    "FaceDetection": "0.644 0.3 0.661 0.3 0.667 0.5 0.669 0.5 0.664 0.4 0.672 0.5 0.685 0.5",
    "Handwriting": "0.156 0.5 0.159 0.5 0.25 0.4 0.251 0.4 0.282 0.7 0.319 0.7 0.329 0.7",
    "Heartbeat": "0.686 0.4 0.675 0.3 0.704 0.2 0.698 0.2 0.699 0.3 0.715 0.3 0.724 0.3",
    "JapaneseVowels": "0.827 0.3 0.871 0.2 0.954 0.4 0.955 0.4 0.979 0.4 0.982 0.4 0.985 0.5",
    "PEMS-SF": "0.742 0.7 0.798 0.5 0.811 0.5 0.803 0.5 0.724 0.5 0.825 0.5 0.829 0.5",
    "SelfRegulationSCP1": "0.836 1.5 0.877 1.2 0.887 0.9 0.882 0.9 0.885 0.7 0.893 0.8 0.896 0.8",
    "SelfRegulationSCP2": "0.459 1.6 0.511 1.3 0.481 1.0 0.454 1.0 0.491 0.8 0.493 0.9 0.526 0.9",
    "SpokenArabicDigits": "0.98 0.4 0.985 0.3 0.979 0.2 0.984 0.2 0.984 0.2 0.987 0.3 0.991 0.3",
    "UWaveGestureLibrary": "0.435 1.5 0.774 1.2 0.843 1.7 0.846 1.7 0.852 1.9 0.861 2.0 0.873 2.0",
    "InsectWingbeat": "0.575 0.3 0.574 0.3 0.610 0.5 0.619 0.5 0.639 0.4 0.630 0.5 0.622 0.5",
}
_ABLATION_MODELS = ("ea-dc-t-no-conv", "ea-dc-t-no-skip", "ea-dc-t-1x1", "ea-dc-t-5x5")
_TABLE_III = {  # w/o conv, w/o skip, 1x1, 5x5
    "AppliancesEnergy": (3.256, 3.258, 3.197, 3.147),
    "BenzeneConcentration": (0.801, 0.937, 0.736, 0.865),
    "BeijingPM10Quality": (92.343, 92.353, 94.566, 95.163),
    "BeijingPM25Quality": (61.243, 60.290, 61.820, 60.805),
}
_TABLE_IV = {
    "UWaveGestureLibrary": (0.872, 0.869, 0.866, 0.859),
    "FaceDetection": (0.667, 0.682, 0.672, 0.678),
    "Handwriting": (0.323, 0.324, 0.303, 0.342),
    "Heartbeat": (0.696, 0.698, 0.704, 0.715),
}

#: The summary rows the paper prints under Tables I and II (over all its datasets and seven models).
PAPER_SUMMARY = {
    "regression": {
        "Avg Rank": dict(zip(_MODELS, (5.2, 5.5, 4.5, 4.7, 4.8, 2.3, 1.0))),
        "Avg Rel. diff": dict(zip(_MODELS, (0.251, 0.182, 0.035, 0.009, -0.072, -0.173, -0.231))),
    },
    "classification": {
        "Avg Rank": dict(zip(_MODELS, (6.5, 5.5, 4.5, 4.5, 3.8, 2.1, 1.2))),
        "Avg Accuracy": dict(zip(_MODELS, (0.597, 0.649, 0.678, 0.676, 0.679, 0.697, 0.706))),
    },
}


def _parse(table: dict[str, str]) -> dict[str, dict[str, tuple[float, float]]]:
    out = {}
    for dataset, row in table.items():
        values = [float(v) for v in row.split()]
        out[dataset] = {m: (values[2 * i], values[2 * i + 1] * 1e6) for i, m in enumerate(_MODELS)}
    return out


def _build() -> dict[tuple[str, str], tuple[float, float | None]]:
    cells: dict[tuple[str, str], tuple[float, float | None]] = {}
    for table in (_parse(_TABLE_I), _parse(_TABLE_II)):
        for dataset, row in table.items():
            for model, value in row.items():
                cells[dataset, model] = value
    for table in (_TABLE_III, _TABLE_IV):
        for dataset, row in table.items():
            for model, score in zip(_ABLATION_MODELS, row):
                cells[dataset, model] = (score, None)
    return cells


#: (dataset, model) -> (score, #parameters or None)
PAPER_SCORES = _build()


def paper_score(dataset: str, model: str) -> tuple[float, float | None] | None:
    """The paper's (score, #parameters) for a dataset and a tsrep.models name, or None."""
    return PAPER_SCORES.get((dataset, model))
