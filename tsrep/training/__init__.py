"""Training loops and optimisers."""

from tsrep.training.loop import (
    History,
    SeriesBatchData,
    TrainConfig,
    count_parameters,
    predict_outputs,
    train_supervised,
)
from tsrep.training.optim import build_optimizer, resolve_optimizer

__all__ = [
    "History",
    "SeriesBatchData",
    "TrainConfig",
    "build_optimizer",
    "count_parameters",
    "predict_outputs",
    "resolve_optimizer",
    "train_supervised",
]
