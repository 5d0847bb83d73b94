"""Training loops and optimisers."""

from tsrep.training.loop import (
    History,
    SeriesBatchData,
    TrainConfig,
    count_parameters,
    predict_outputs,
    train_supervised,
)
from tsrep.training.deacon import DeaconOptimizer, OptimizerWithDeacon, with_deacon
from tsrep.training.optim import build_optimizer, resolve_optimizer
from tsrep.training.backbone_fit import FitHistory, evaluate, fit_classifier, predict_logits
from tsrep.training.callbacks import Callback, CSVLogger, MLflowLogger, OptunaPruning, TensorBoardLogger

__all__ = [
    "Callback",
    "CSVLogger",
    "MLflowLogger",
    "OptunaPruning",
    "TensorBoardLogger",
    "FitHistory",
    "evaluate",
    "fit_classifier",
    "predict_logits",
    "DeaconOptimizer",
    "OptimizerWithDeacon",
    "with_deacon",
    "History",
    "SeriesBatchData",
    "TrainConfig",
    "build_optimizer",
    "count_parameters",
    "predict_outputs",
    "resolve_optimizer",
    "train_supervised",
]
