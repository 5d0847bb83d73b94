"""Training loops and optimisers."""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): the command lines' --help and argument checks do not pay for torch.
__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(["History", "SeriesBatchData", "count_parameters", "predict_outputs", "train_supervised"],
                    "tsrep.training.loop"),
    "TrainConfig": "tsrep.training.config",
    "recompute_batchnorm_statistics": "tsrep.training.precise_bn",
    **dict.fromkeys(["DeaconOptimizer", "OptimizerWithDeacon", "with_deacon"], "tsrep.training.deacon"),
    **dict.fromkeys(["build_optimizer", "resolve_optimizer"], "tsrep.training.optim"),
    **dict.fromkeys(["evaluate", "fit_classifier", "predict_logits"], "tsrep.training.tensor_fit"),
    **dict.fromkeys(["Callback", "CSVLogger", "MLflowLogger", "OptunaPruning", "TensorBoardLogger"],
                    "tsrep.training.callbacks"),
})

__all__ = [
    "Callback",
    "CSVLogger",
    "MLflowLogger",
    "OptunaPruning",
    "TensorBoardLogger",
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
    "recompute_batchnorm_statistics",
    "resolve_optimizer",
    "train_supervised",
]
