"""The training harness every tsrep estimator shares: the EA-DC-Transformer and the baselines alike.

``DeepSeriesEstimator`` owns what does not depend on the network: input checks and preparation
(standardisation, padding masks), the training recipe (validation rule, step budget, augmentation,
loss weights, seed ensembles), the training run itself (tsrep.training.train_supervised), prediction,
saving and pickling. A subclass stores its parameters in ``__init__`` (scikit-learn's rule) and
gives:

    _parameter_constraints       its parameters' constraints, declared (tsrep.estimators._parameters)
    _check_combinations()        the rules between its parameters (calling the harness's own first)
    _build_model(n_outputs)      the network (a tsrep.backbones.SeriesModel) for the fitted data

and, when its network has more to it than one token per step and random initial weights, the
hooks below (each a no-op here): ``_fit_front_end`` (tokens, checkpoint preprocessing),
``_check_training_data`` (warnings about the data), ``_check_memory`` and ``_pretrain``.
The task (classes and cross-entropy, or standardised targets and MSE) comes from
tsrep.estimators._tasks; the aeon base class comes last.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings

import numpy as np
import torch
from aeon.utils.validation import check_n_jobs
from aeon.utils.validation.collection import get_n_channels

from tsrep.backbones import SeriesModel
from tsrep.data import ChannelStandardizer, as_case_list
from tsrep.data.convert import masked_as_missing
from tsrep.estimators._checks import (
    check_enough_cases,
    check_finite_outputs,
    check_not_empty,
    check_optimizer,
    check_sample_weight,
    check_values,
    prepare_series,
    resolve_device,
    seed_from,
)
from tsrep.estimators._parameters import LONG_RUNS, PREPROCESSING, TRAINING, check_declared, constraints_of
from tsrep.estimators._ensemble import clone_member, fit_members, members_train_together
from tsrep.estimators._saving import load_estimator, save_estimator
from tsrep.estimators._tasks import (
    resolve_blend_minirocket, resolve_max_epochs, resolve_min_steps, resolve_mixup, resolve_patience,
    resolve_precise_bn, resolve_validation_fraction,
)
from tsrep.exceptions import InsufficientMemoryError
from tsrep.nn.augmentation import resolve_augmentation, validate_augmentation
from tsrep.training import SeriesBatchData, TrainConfig, count_parameters, predict_outputs, train_supervised
from tsrep.training.callbacks import check_callbacks
from tsrep.training.distributed import broadcast_object, device_for_rank, setup_data_parallel
from tsrep.training.loop import History, cpu_state_dict, stratified_split
from tsrep.training.members import DeferredTraining
from tsrep.training.precise_bn import recompute_batchnorm_statistics
from tsrep.training.resume import PRETRAIN_STATE_FILE, TrainCheckpoint, stored_seed

AEON_TAGS = {
    "X_inner_type": ["np-list", "numpy3D"],
    "capability:multivariate": True,
    "capability:unequal_length": True,
    "capability:missing_values": True,
    "capability:multithreading": True,  # n_jobs: ensemble members fitted in parallel
    "algorithm_type": "deeplearning",
    "python_dependencies": "torch",
}


#: Parameters a warm start may change: how the network is trained, where and how loudly, not the
#: network itself. Every other parameter must keep its value of the previous fit.
RECIPE_PARAMS = frozenset({
    "lr", "batch_size", "max_epochs", "min_steps", "validation_fraction", "patience", "optimizer",
    "optimizer_kwargs", "weight_decay", "lr_schedule", "label_smoothing", "mixup", "class_weight", "grad_clip", "n_jobs",
    "train_members_together",
    "device", "random_state", "verbose", "callbacks", "checkpoint_dir", "warm_start", "pretrain_epochs",
    "mask_ratio", "mask_mean_length", "masking", "pretrained_encoder",
})
#: Parameters that do not change the result of a fit: a resumed fit may differ in them.
NOT_RESUME_SETTINGS = ("verbose", "device", "n_jobs", "callbacks", "checkpoint_dir", "warm_start")

_FITTED_PREPROCESSING = ("standardizer_", "max_len_", "n_channels_", "patch_len_", "patch_stride_", "max_tokens_",
                         "conv_stem_", "encoder_config_")


class DeepSeriesEstimator:
    """Base of every tsrep estimator: training, prediction and saving around an abstract network.

    Fitted attributes it sets: standardizer_, max_len_, n_channels_, patch_len_ and patch_stride_
    (None: one token per step), encoder_config_ (None unless a pretrained checkpoint supplied the
    encoder), validation_fraction_, max_epochs_, min_steps_, patience_, augmentation_, history_, best_epoch_,
    n_epochs_, pretrain_history_, module_, n_outputs_, n_parameters_, estimators_.
    """

    _tags = dict(AEON_TAGS)
    _task: str  # "classification" or "regression", set by the task mixin

    #: The harness's parameters; a subclass declares them with those of its network
    #: (tsrep.estimators._parameters.keyword_parameters), which sets this.
    _parameter_constraints: dict = constraints_of(PREPROCESSING, TRAINING, LONG_RUNS)

    # ----------------------------------------------------------------- checks
    def _validate_params(self):
        """Check every parameter before any work: the declared constraints (scikit-learn's
        ``_parameter_constraints``), then the rules between parameters. Raises ValueError naming the
        parameter."""
        check_declared(self)
        self._check_combinations()

    def _check_combinations(self) -> None:
        """What the declared constraints cannot say: values checked against registries, optimiser
        keyword arguments, devices, and rules between parameters; subclasses add their network's."""
        check_optimizer(self.optimizer, self.optimizer_kwargs, self.lr)
        resolve_device(self.device)
        validate_augmentation(self.augmentation)
        check_callbacks(self.callbacks, "callbacks")
        if self._task == "regression":
            for name, allowed in (
                ("label_smoothing", ("auto", 0.0)), ("class_weight", (None,))
            ):
                if getattr(self, name) not in allowed:
                    raise ValueError(
                        f"{name} applies to classification only; a regressor takes {name}={allowed[0]!r}"
                    )

    # ----------------------------------------------------------------- what a subclass gives
    def _build_model(self, n_outputs: int) -> SeriesModel:
        """The network for the fitted preprocessing (n_channels_, max_len_, patch_len_, ...)."""
        raise NotImplementedError

    def _fit_front_end(self, cases: list) -> None:
        """Fit the preprocessing on the training cases: the channel standardisation and lengths; the
        token front end is one token per step and no checkpoint supplies the encoder."""
        self.encoder_config_ = None
        self.standardizer_ = ChannelStandardizer(self.scaling).fit(cases)
        self.max_len_ = int(max(c.shape[1] for c in cases))
        self.n_channels_ = int(cases[0].shape[0])
        self.patch_len_, self.patch_stride_ = None, None
        self.conv_stem_ = None

    def _check_training_data(self, data: SeriesBatchData) -> None:
        """Warn about settings that do not suit the prepared training data (nothing to say here)."""

    def _check_memory(self, n_cases: int, concurrent: int) -> None:
        """Refuse, before any weight is built, a fit that cannot fit in memory (no estimate here)."""

    def _pretrain(self, model, data, device, generator, checkpoint_path, settings) -> list:
        """Prepare the new network's weights before supervised training; returns the pretraining history."""
        return []

    # ----------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None):
        """Fit to the collection X and targets y; sample_weight (n_cases,) scales each case's loss.

        Weights are scaled to mean 1 over the training cases (together with class_weight), so
        they change the balance between cases, not the size of the optimiser's steps.
        """
        # aeon's fit takes (X, y) and resets every attribute without "__" in its name: the weights
        # travel to _fit under a mangled (double-underscore) name and are gone after fit.
        self.__sample_weight = sample_weight
        # warm_start: the previous fit's network and preprocessing, kept through aeon's reset.
        self.__warm = self._warm_state() if self.warm_start is True and getattr(self, "is_fitted", False) else None
        before = dict(self.__dict__) if self.__warm is not None else None
        try:
            return super().fit(X, y)
        except BaseException:
            if before is not None:  # a refused warm fit leaves the previous fit in place
                self.__dict__.clear()
                self.__dict__.update(before)
            raise
        finally:
            del self.__sample_weight, self.__warm

    def _fit_as_member(self, X, y, sample_weight, index: int, deferred: list | None = None):
        """fit as member `index` of a seed ensemble (callbacks are told which member they follow).

        deferred: a list that the fit appends its network's training to (tsrep.training.members.DeferredTraining)
        instead of training it; the ensemble trains the members together and calls :meth:`_finish_training`."""
        self.__member = index
        self.__deferred = deferred
        try:
            return self.fit(X, y, sample_weight=sample_weight)
        finally:
            del self.__member, self.__deferred

    def _member_params(self, index: int | None) -> dict:
        """Parameters of ensemble member `index` beside its seed (index None: of the member that needs the
        most memory); members differ in nothing else here."""
        return {}

    def _warm(self) -> dict | None:
        return self.__dict__.get("_DeepSeriesEstimator__warm")

    def _fit_setup_recipe(self, X, y) -> tuple[bool, np.ndarray | None]:
        """Validate everything before any work; fit the seed ensemble when n_estimators > 1.

        Returns (fitted_as_ensemble, checked sample weights)."""
        self._validate_params()
        self._n_jobs = check_n_jobs(self.n_jobs)  # aeon's convention: -1 -> all cores
        check_enough_cases(len(y))
        weights = check_sample_weight(self.__dict__.get("_DeepSeriesEstimator__sample_weight"), len(y))
        warm = self._warm()
        if warm is not None:
            self._check_warm_start(warm)
        if self.n_estimators > 1:
            previous = None if warm is None else warm["estimators_"]
            together = members_train_together(self, previous, warn=True)
            try:
                self._check_members_memory(X, self.n_estimators if together else min(self._n_jobs, self.n_estimators))
            except InsufficientMemoryError:
                if not together or self.train_members_together is True:
                    raise
                together = False  # "auto": members that do not fit together train one after another (or n_jobs)
                self._check_members_memory(X, min(self._n_jobs, self.n_estimators))
            self.estimators_ = fit_members(self, X, y, weights, previous=previous, together=together)
            self.n_parameters_ = int(sum(m.n_parameters_ for m in self.estimators_))
            return True, weights
        self.estimators_ = None
        return False, weights

    def _check_members_memory(self, X, concurrent: int) -> None:
        """Refuse here, not in a worker, members that cannot train `concurrent` at a time in memory."""
        if concurrent > 1:
            probe = clone_member(self, n_estimators=1, n_jobs=1, warm_start=False, **self._member_params(None))
            probe._concurrent_fits = concurrent
            with warnings.catch_warnings():  # the members warn of the data themselves
                warnings.simplefilter("ignore")
                probe._prepare_X(X, fit=True)

    # ----------------------------------------------------------------- data
    def _check_shape(self, X):
        # aeon's check prints its message as a tuple; the same check, worded as tsrep's others.
        if self.metadata_:
            fitted, given = self.metadata_["n_channels"], get_n_channels(X)
            if given != fitted:
                raise ValueError(
                    f"X has {given} channel(s) but the model was fitted on {fitted}; give the channels it was "
                    "trained on, in the same order"
                )

    def _preprocess_collection(self, X, store_metadata=True):
        X = masked_as_missing(X)  # before aeon's checks, which would drop a masked array's mask
        check_not_empty(X)
        with warnings.catch_warnings():  # numpy's overflow and all-NaN notes from aeon's checks: check_values says more
            warnings.simplefilter("ignore", RuntimeWarning)
            X = super()._preprocess_collection(X, store_metadata)
        check_values(X, fitting=store_metadata)  # aeon's fit stores metadata, predict and score do not
        return X

    def _prepare_X(self, X, fit: bool) -> SeriesBatchData:
        cases = as_case_list(X, trailing_nan_is_padding=True)  # a NaN-padded 3-D array: series of their own length
        warm = self._warm() if fit else None
        if warm is not None:  # the previous fit's standardisation and front end: its network was trained on them
            self._restore_preprocessing(warm, int(cases[0].shape[0]))
        elif fit:
            self._fit_front_end(cases)
        else:
            longest = max(c.shape[1] for c in cases)
            if longest > self.max_len_ and self.pooling == "flatten":
                raise ValueError(
                    f"X has a series of {longest} steps, longer than the longest training series "
                    f"({self.max_len_}); pooling='flatten' needs series no longer than that "
                    "(use pooling='mean' or 'max' for series of any length)"
                )
        if fit:  # before any weight is built: refuse what cannot fit in memory, with what would help
            self._check_memory(len(cases), self.__dict__.get("_concurrent_fits", 1))
        return prepare_series(cases, self.standardizer_)

    # ----------------------------------------------------------------- model
    def _augmentation_used(self):
        # Resolved from ``augmentation`` on the training data in ``_train``; not yet when the memory check
        # builds the network on the meta device before that (its size does not depend on it).
        return getattr(self, "augmentation_", None)

    def _train(self, X, targets: torch.Tensor, n_outputs: int, loss_fn, score_fn, stratify_on=None, weights=None):
        """Fit one network. loss_fn(outputs, targets, weights); weights: per-case loss weights or None."""
        # Parameters were checked by _fit_setup_recipe before any work (ensembles included).
        # Under torchrun: join the process group and take this rank's device (tsrep.training.distributed).
        device = setup_data_parallel(resolve_device(self.device))
        seed = self._training_seed()
        data = self._prepare_X(X, fit=True)
        data.targets = targets
        self._check_training_data(data)
        data.weights = weights
        train_data, val_data = self._resolve_recipe_and_split(data, n_outputs, stratify_on, seed)
        config = self._train_config()
        warm = self._warm()
        member = self.__dict__.get("_DeepSeriesEstimator__member")
        checkpoint, settings = None, self._resume_settings(seed)
        if self.checkpoint_dir is not None:
            checkpoint = TrainCheckpoint(self.checkpoint_dir, settings)
        fork_devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=fork_devices):
            # Seeded locally so that fit is reproducible without touching the user's global RNG.
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed)
            if warm is not None:  # continue the previous fit's network
                model = warm["module_"].to(device)
                self.pretrain_history_ = []
            else:
                model = self._build_model(n_outputs).to(device)
                # Pretrained weights and/or masked-reconstruction pretraining, then optional freezing.
                pretrain_checkpoint = None if checkpoint is None else checkpoint.directory / PRETRAIN_STATE_FILE
                self.pretrain_history_ = self._pretrain(model, data, device, generator, pretrain_checkpoint, settings)
            fit_info = {
                "params": self.get_params(deep=False), "member": member, "phase": "train", "estimator": self,
                "make_scorer": self._scorer_maker(model, score_fn, device),
            }
            deferred = self.__dict__.get("_DeepSeriesEstimator__deferred")
            if deferred is not None:  # an ensemble member whose network trains with the others' (_ensemble)
                run = DeferredTraining(model, train_data, val_data, loss_fn, score_fn, config, device, generator,
                                       all_data=data)
                if device.type == "cuda":
                    run.cuda_rng_state = torch.cuda.get_rng_state(device)
                deferred.append(run)
                self.history_ = History()  # set by _finish_training once the members have trained
            else:
                self.history_ = train_supervised(
                    model, train_data, val_data, loss_fn, score_fn, config, device, generator,
                    callbacks=self.callbacks, checkpoint=checkpoint, fit_info=fit_info,
                )
                self._precise_bn(model, data, device, seed)
        self._set_fitted_network(model, n_outputs)
        return self

    def _precise_bn(self, model, data, device, seed: int) -> None:
        if self.precise_bn_:
            # All of TRAIN (a validation part too: no labels are used), batches drawn by a generator of this
            # fit's seed, so that a refit or a resumed fit gives the same statistics.
            recompute_batchnorm_statistics(model, data, self.batch_size, device, torch.Generator().manual_seed(seed))

    def _finish_training(self, run, history: History) -> None:
        """After a deferred training `run` (an ensemble member's, tsrep.training.members.DeferredTraining): its
        history and what follows training in a fit."""
        self.history_ = history
        self._precise_bn(run.model, run.all_data, run.device, self._training_seed())
        self.best_epoch_ = history.best_epoch
        self.n_epochs_ = len(history.train_loss)

    def _training_seed(self) -> int:
        """The seed of this fit, the same on every rank of a data-parallel run."""
        seed = seed_from(self.random_state)
        if self.checkpoint_dir is not None and not isinstance(self.random_state, numbers.Integral):
            seed = stored_seed(self.checkpoint_dir, seed)  # a drawn seed: resume with the one the state used
        return broadcast_object(seed)  # random_state=None: rank 0's draw on every rank

    def _resolve_recipe_and_split(self, data, n_outputs: int, stratify_on, seed: int):
        """Fix the "auto" settings of the recipe on the training data (validation_fraction_, max_epochs_,
        min_steps_, augmentation_) and split it: (training part, validation part or None)."""
        rng = np.random.default_rng(seed)
        labels = stratify_on if stratify_on is not None else np.zeros(len(data))
        self.validation_fraction_ = resolve_validation_fraction(self.validation_fraction, len(data), self._task)
        # A network whose answer a MiniRocket shares trains an eighth of the "auto" epochs and step floor, still
        # every step a class (an ensemble that blends hands its members that budget: _ensemble.member_budget).
        blended = resolve_blend_minirocket(self.blend_minirocket, self._task)
        self.max_epochs_ = resolve_max_epochs(self.max_epochs, blended)
        self.min_steps_ = resolve_min_steps(
            self.min_steps, n_outputs if self._task == "classification" else None, blended, self.max_epochs
        )
        self.mixup_ = resolve_mixup(self.mixup, self._task)
        self.precise_bn_ = resolve_precise_bn(self.precise_bn, self._task)
        self.patience_ = resolve_patience(self.patience, self.lr_schedule, self._task)
        self.augmentation_ = resolve_augmentation(
            self.augmentation, len(data), int(data.valid.sum(1).min()), self.conv_stem_
        )
        train_idx, val_idx = stratified_split(labels, self.validation_fraction_, rng, stratify_on is not None)
        if self.validation_fraction_ > 0 and not len(val_idx):
            raise ValueError(
                f"validation_fraction={self.validation_fraction!r} would hold out {math.ceil(self.validation_fraction_ * len(data))} "
                f"of the {len(data)} training cases and leave fewer than 2 to train on; use a smaller fraction, "
                "or 0 for no validation split"
            )
        return data.subset(train_idx), (data.subset(val_idx) if len(val_idx) else None)

    def _train_config(self) -> TrainConfig:
        """The supervised loop's settings (tsrep.training.TrainConfig): the parameters, "auto" resolved."""
        return TrainConfig.from_params(
            self.get_params(deep=False), max_epochs=self.max_epochs_, min_steps=self.min_steps_, mixup=self.mixup_,
            patience=self.patience_,
        )

    def _scorer_maker(self, model, score_fn, device):
        """make_scorer(X_score, y_score) of the callbacks' fit_info (a tuner scores its validation fold with it)."""

        def make_scorer(X_score, y_score):
            """A function of no argument: score_fn of the network as it stands on (X_score, y_score)."""
            report = self._report_data(X_score, y_score)
            if not len(report):
                return lambda: float("nan")
            return lambda: float(score_fn(predict_outputs(model, report, self.batch_size, device), report.targets))

        return make_scorer

    def _set_fitted_network(self, model, n_outputs: int) -> None:
        self.module_ = model
        # The parameters the network was built from: set_params after fit must not change how a
        # pickled model is rebuilt (its weights only fit the architecture they were trained in).
        self._fitted_params = self.get_params(deep=False)
        self.n_outputs_ = n_outputs
        self.n_parameters_ = count_parameters(model)
        self.best_epoch_ = self.history_.best_epoch
        self.n_epochs_ = len(self.history_.train_loss)

    def _report_data(self, X, y) -> SeriesBatchData:
        """A tuner's validation fold as model-ready tensors (cases of classes unseen in training left out)."""
        keep, targets = self._encode_targets(np.asarray(y))
        X = [x for x, k in zip(as_case_list(X, trailing_nan_is_padding=True), keep) if k]
        data = self._prepare_X(X, fit=False) if X else SeriesBatchData(torch.empty(0, 1, 1), torch.empty(0, 1))
        data.targets = targets
        return data

    def _outputs(self, X) -> torch.Tensor:
        device = device_for_rank(resolve_device(self.device))  # under torchrun: this rank's GPU
        data = self._prepare_X(X, fit=False)
        self.module_.to(device)
        return check_finite_outputs(predict_outputs(self.module_, data, self.batch_size, device))

    # ----------------------------------------------------------------- saving
    def save(self, path):
        """Write the fitted estimator to `path`: one safetensors file with the weights and, in its
        metadata, JSON of the parameters and fitted state (tsrep._serialization; no pickle). Written
        atomically: a failed save leaves an existing file as it was. ``callbacks`` are not saved.
        Returns the path."""
        return save_estimator(self, path)

    @classmethod
    def load(cls, path, **params):
        """The fitted estimator saved at `path` by ``save``; `params` override saved parameters (e.g.
        device="cpu"; a model saved with a CUDA device loads on the CPU when CUDA is missing).
        Nothing in the file can run code; a file of another kind, of a newer format version, or
        truncated is a ValueError (tsrep._serialization.ModelFileError)."""
        return load_estimator(path, expected=cls, **params)

    # torch refuses to pickle weight-norm parametrized modules, and a GPU tensor would not unpickle on
    # a CPU-only machine: the network travels as a CPU state_dict and is rebuilt on unpickling.
    def __getstate__(self):
        state = dict(super().__getstate__())
        module = state.pop("module_", None)
        if module is not None:
            state["_module_state"] = (cpu_state_dict(module), module.training)
        return state

    def __setstate__(self, state):
        state = dict(state)
        module_state = state.pop("_module_state", None)
        super().__setstate__(state)
        if module_state is not None:
            weights, training = module_state
            builder = copy.copy(self)
            builder.__dict__.update(state.get("_fitted_params", {}))
            with torch.random.fork_rng(devices=[]):  # building initialises weights; leave the user's RNG alone
                module = builder._build_model(self.n_outputs_)
            module.load_state_dict(weights)
            self.module_ = module.train(training)

    # ----------------------------------------------------------------- warm starts and resumable fits
    def _warm_state(self) -> dict:
        """What a warm start takes from this fitted estimator (before aeon's reset removes it)."""
        names = ("module_", "classes_", "y_mean_", "y_std_", "estimators_", "_fitted_params", *_FITTED_PREPROCESSING)
        return {name: getattr(self, name, None) for name in names}

    def _check_warm_start(self, warm: dict) -> None:
        """ValueError unless this estimator (parameters set, classes_ of the new y known) can continue `warm`."""
        fitted = warm["_fitted_params"] or {}
        changed = [
            f"{name} (fitted {fitted[name]!r}, now {value!r})"
            for name, value in self.get_params(deep=False).items()
            if name not in RECIPE_PARAMS and name in fitted and not _same(fitted[name], value)
        ]
        if changed:
            raise ValueError(
                "warm_start=True continues the network of the previous fit, but these parameters change the network: "
                + "; ".join(changed) + ". Set them back, or fit with warm_start=False to start from new weights"
            )
        n_before = 1 if warm["estimators_"] is None else len(warm["estimators_"])
        if n_before != self.n_estimators:
            raise ValueError(
                f"warm_start=True continues the {n_before} network(s) of the previous fit, but n_estimators="
                f"{self.n_estimators}; set it back, or fit with warm_start=False"
            )
        if warm["classes_"] is not None:
            old, new = np.asarray(warm["classes_"]), np.asarray(self.classes_)
            if old.shape != new.shape or not np.array_equal(old, new):
                raise ValueError(
                    f"warm_start=True needs y with the classes of the previous fit {old.tolist()}, got {new.tolist()}: "
                    "the output head has one unit per class. Fit with warm_start=False to train a new network"
                )
        if warm["estimators_"] is None and warm["module_"] is None:
            raise ValueError("warm_start=True: the previous fit left no network to continue")

    def _restore_preprocessing(self, warm: dict, n_channels: int) -> None:
        """The previous fit's standardisation, lengths and token front end, for a warm start on X."""
        if warm["n_channels_"] is not None and int(warm["n_channels_"]) != n_channels:
            raise ValueError(
                f"warm_start=True: X has {n_channels} channel(s), the previous fit had {warm['n_channels_']}; "
                "fit with warm_start=False"
            )
        for name in _FITTED_PREPROCESSING:
            setattr(self, name, warm[name])

    def _resume_settings(self, seed: int) -> dict:
        """The settings a training checkpoint is keyed to: the estimator's class, every parameter that
        changes the result, and the seed actually used (random_state may be None or a RandomState)."""
        settings = {k: v for k, v in self.get_params(deep=False).items() if k not in NOT_RESUME_SETTINGS}
        if not (settings.get("random_state") is None or isinstance(settings["random_state"], numbers.Integral)):
            settings["random_state"] = "RandomState"
        settings["estimator"] = type(self)
        settings["seed"] = int(seed)
        return settings


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return a is b
