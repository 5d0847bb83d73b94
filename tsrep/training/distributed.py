"""Data-parallel training over torch.distributed: launch detection, process group, sharding, reductions.

Launch one process per device with torchrun; tsrep's training loops then split every minibatch over
the processes (gloo on CPU, nccl on CUDA):

    OMP_NUM_THREADS=1 torchrun --nproc_per_node=2 train.py

How a data-parallel step equals the one-process step (tests/test_distributed.py checks it):

- every rank draws the same shuffles (the same generator state, checked on entry) and takes a
  contiguous shard of each global minibatch (`shard_indices`); the shards together are exactly the
  one-process batch, their sizes differ by at most one;
- each rank's mean loss over its shard is weighted by world_size * n_shard / n_batch and
  DistributedDataParallel averages the gradients over the ranks, so the gradient is the sum over the
  batch's cases divided by n_batch: the one-process gradient of a mean loss, for any shard sizes;
- BatchNorm statistics (tsrep.nn.norm.MaskedBatchNorm1d) are summed over the ranks inside the
  autograd graph, as torch.nn.SyncBatchNorm does, so the normalisation, its gradient and the running
  statistics are those of the whole batch; the input moments of DEACON PCA layers likewise;
- validation outputs are gathered on every rank, so early stopping decides the same everywhere.

A trailing batch with fewer cases than ranks is left out (its cases come back in the next epoch), as
the one-process loop leaves out a trailing batch of one; with two ranks the two rules coincide.
Random layers (dropout, the input corruption of crossed attention) draw different numbers on each
rank (each rank's stream is seeded apart), so equality with one process is up to float rounding only
without them; with them the runs are statistically, not numerically, alike.

Without an initialised process group of more than one rank, everything here is a no-op and the
training loops run exactly as before.
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import inspect
import os

import torch
import torch.distributed as dist
from torch import nn

from tsrep._io import atomic_torch_save
from tsrep.nn.deacon import PCALayer
from tsrep.nn.norm import MaskedBatchNorm1d

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
RENDEZVOUS_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
#: Seconds init_process_group waits for every rank (and, as torch applies it to the whole process
#: group, for each collective operation), unless the environment variable below says otherwise.
TIMEOUT_VARIABLE = "TSREP_DIST_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
# DDP's switch for "sync buffers at construction, not before every forward": renamed in recent torch.
_NO_BUFFER_SYNC = (
    {"forward_sync_buffers": False}
    if "forward_sync_buffers" in inspect.signature(nn.parallel.DistributedDataParallel).parameters
    else {"broadcast_buffers": False}
)


# ----------------------------------------------------------------------------- launch and group
def launched_by_torchrun() -> bool:
    """True in a process started by torchrun (or any launcher that sets RANK, WORLD_SIZE, LOCAL_RANK)."""
    return all(name in os.environ for name in TORCHRUN_VARIABLES)


def backend_for(device) -> str:
    """nccl for CUDA devices, gloo for the CPU."""
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def distributed_timeout() -> datetime.timedelta:
    """How long forming the process group may take: $TSREP_DIST_TIMEOUT seconds, default 300.

    Torch applies the same limit to every collective operation of the group, so a run whose ranks
    legitimately drift apart for longer (one rank alone evaluating for many minutes) should raise it.
    """
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return datetime.timedelta(seconds=DEFAULT_TIMEOUT_S)
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"environment variable {TIMEOUT_VARIABLE} must be a positive number of seconds, got {text!r}")
    return datetime.timedelta(seconds=seconds)


def _launch_ranks() -> tuple[int, int]:
    """(RANK, WORLD_SIZE) of the launcher's environment, checked before any rendezvous.

    A rank outside [0, WORLD_SIZE) never meets the others: torch would wait for a process group that
    cannot form until its socket timeout (minutes) instead of failing at once, so such a launch, a
    WORLD_SIZE below 1 and values that are not integers (RANK, WORLD_SIZE, LOCAL_RANK) are a ValueError
    naming the variables and their values."""
    values = {}
    for name in TORCHRUN_VARIABLES:
        text = os.environ.get(name)
        if text is None:
            continue
        try:
            values[name] = int(text.strip())
        except ValueError:
            raise ValueError(
                f"environment variable {name} must be an integer, got {name}={text!r}; torchrun sets "
                f"{', '.join(TORCHRUN_VARIABLES)} for each process it starts"
            ) from None
    world_size, rank = values.get("WORLD_SIZE", 1), values.get("RANK", 0)
    if world_size < 1:
        raise ValueError(f"environment variable WORLD_SIZE must be a positive integer (the number of processes), "
                         f"got WORLD_SIZE={os.environ['WORLD_SIZE']!r}")
    if not 0 <= rank < world_size:
        raise ValueError(
            f"environment variable RANK must be in [0, WORLD_SIZE) = [0, {world_size}), got RANK={rank} with "
            f"WORLD_SIZE={world_size}: each of the WORLD_SIZE processes needs its own rank 0..{world_size - 1}, "
            "as torchrun sets them"
        )
    if values.get("LOCAL_RANK", 0) < 0:
        raise ValueError(f"environment variable LOCAL_RANK must be an integer >= 0, got "
                         f"LOCAL_RANK={os.environ['LOCAL_RANK']!r}")
    return rank, world_size


def _rendezvous_failure(exc: BaseException, timeout: datetime.timedelta) -> RuntimeError:
    shown = ", ".join(f"{name}={os.environ[name]}" for name in RENDEZVOUS_VARIABLES if name in os.environ)
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return RuntimeError(
        f"tsrep started data-parallel training because the environment holds {shown}, but the process "
        f"group of {os.environ.get('WORLD_SIZE', '?')} processes could not be formed (waited up to "
        f"{timeout.total_seconds():g} s; {type(exc).__name__}: {detail}). Every rank must call fit: start every process, e.g. with "
        "`torchrun --nproc_per_node=N script.py`, and let each of them call fit, not rank 0 alone. If this "
        "process is not one of several, these variables were left over from another launch: unset them "
        f"(`unset {' '.join(RENDEZVOUS_VARIABLES)}` in the shell, or os.environ.pop(name) for each before fit). "
        f"To wait longer for slow ranks, set {TIMEOUT_VARIABLE} (seconds)."
    )


def init_distributed(device="cpu", backend: str | None = None, timeout: datetime.timedelta | None = None) -> None:
    """Initialise the default process group from the launcher's environment (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT), with `backend` or the one suited to `device`. Nothing if it exists.

    timeout: how long to wait for the other ranks (default :func:`distributed_timeout`); a rank
    that waits longer, or cannot reach the others, raises RuntimeError naming the variables that
    started data parallelism instead of waiting forever."""
    if not dist.is_available():
        raise RuntimeError("this torch build has no torch.distributed; data-parallel training needs it")
    if dist.is_initialized():
        return
    missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"init_distributed reads the process group from the environment, but {', '.join(missing)} "
            "is not set; launch with `torchrun --nproc_per_node=N script.py`"
        )
    _launch_ranks()  # a rank that can never meet the others fails now, not after the timeout
    timeout = distributed_timeout() if timeout is None else timeout
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device_for_rank(device))  # nccl needs each rank on its own GPU first
    try:
        dist.init_process_group(backend=backend or backend_for(device), timeout=timeout)
    except Exception as exc:  # DistStoreError, DistNetworkError, ...: a rank missing or unreachable
        _destroy_if_initialized()
        raise _rendezvous_failure(exc, timeout) from exc
    # Destroying the group at exit spares the user torch's "process group was not destroyed" warning.
    atexit.register(_destroy_if_initialized)


def _destroy_if_initialized() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def setup_data_parallel(device) -> torch.device:
    """What an estimator's fit calls first: under torchrun with several processes, initialise the
    process group (if the user has not) and return this rank's device; otherwise `device` unchanged."""
    device = torch.device(device)
    if launched_by_torchrun() and _launch_ranks()[1] > 1:
        init_distributed(device)
    return device_for_rank(device) if is_distributed() else device


def is_distributed() -> bool:
    """An initialised default process group with more than one rank."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def get_rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def get_local_rank() -> int:
    """Rank within this machine (the GPU a rank uses), from the launcher's LOCAL_RANK."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def is_main_process() -> bool:
    return get_rank() == 0


def device_for_rank(device) -> torch.device:
    """A CUDA device without an index becomes cuda:LOCAL_RANK (one GPU per process); others unchanged."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None and launched_by_torchrun():
        return torch.device("cuda", get_local_rank())
    return device


# ----------------------------------------------------------------------------- sharding and reductions
def shard_indices(index: torch.Tensor, rank: int | None = None, world_size: int | None = None) -> torch.Tensor:
    """This rank's contiguous share of a global minibatch's case indices.

    The shards of ranks 0..world_size-1, concatenated in rank order, are `index`; their sizes differ
    by at most one. index: (n,) -> (n // world_size or one more,)
    """
    rank = get_rank() if rank is None else rank
    world_size = get_world_size() if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
    return index.tensor_split(world_size)[rank]


def shard_loss_weight(n_shard: int, n_batch: int, world_size: int) -> float:
    """Factor on a rank's mean loss over its n_shard cases such that the average over ranks of the
    weighted losses' gradients (what DDP computes) is the gradient of the mean loss over the n_batch
    cases: (1 / W) sum_r W n_r / n * mean_r = sum over the batch / n, whatever the shard sizes n_r."""
    return world_size * n_shard / n_batch


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """Sum of `tensor` over the ranks (a new tensor; autograd does not see it); `tensor` itself alone."""
    if not is_distributed():
        return tensor
    out = tensor.detach().clone()
    dist.all_reduce(out)
    return out


def all_gather_cat(tensor: torch.Tensor) -> torch.Tensor:
    """Every rank's `tensor` (first dimension may differ, may be empty) concatenated in rank order, on the CPU."""
    if not is_distributed():
        return tensor
    parts = [None] * get_world_size()
    dist.all_gather_object(parts, tensor.detach().cpu())
    parts = [p for p in parts if p.numel()]
    return torch.cat(parts) if parts else tensor.detach().cpu()


def broadcast_object(obj, src: int = 0):
    """Rank `src`'s `obj` on every rank (picklable objects); `obj` itself without a process group."""
    if not is_distributed():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def check_same_on_all_ranks(**named) -> None:
    """Raise on every rank, naming what differs, if any of the `named` values (picklable, comparable)
    differs between ranks. Example: check_same_on_all_ranks(n_cases=len(X), seed=seed)."""
    if not is_distributed():
        return
    gathered = [None] * get_world_size()
    dist.all_gather_object(gathered, named)
    differ = {name: [g[name] for g in gathered] for name in named if any(g[name] != named[name] for g in gathered)}
    if differ:
        shown = "; ".join(f"{name}: {values} in rank order" for name, values in differ.items())
        raise RuntimeError(
            f"data-parallel training needs the same {' and '.join(differ)} on every rank, got {shown}; "
            "give every process the same data and random_state"
        )


# ----------------------------------------------------------------------------- rank-0 output
def print_on_main(*args, **kwargs) -> None:
    """print on rank 0 only (every rank prints the same numbers; one copy is enough)."""
    if is_main_process():
        print(*args, **kwargs)


def save_on_main(obj, path) -> None:
    """torch.save from rank 0 only, atomically (tsrep._io.atomic_torch_save), then every rank waits
    until the file is written (so any rank may read it next). Ranks hold the same weights, so one
    copy is the model."""
    if is_main_process():
        atomic_torch_save(obj, path)
    if is_distributed():
        dist.barrier()


# ----------------------------------------------------------------------------- one model, data-parallel
def _fingerprint_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _fingerprint(tensor: torch.Tensor, n_values: int = 1_000_000) -> str:
    """Hash of (at most about n_values evenly spaced) values of `tensor`: cheap on any data size,
    exact (no float sums whose rounding could depend on the thread count)."""
    flat = tensor.detach().reshape(-1)
    sample = flat[:: max(1, flat.numel() // n_values)].cpu().contiguous()
    return "sha256:" + hashlib.sha256(sample.view(torch.uint8).numpy().tobytes()).hexdigest()[:12]  # any dtype


def _average_pca_moment(layer: PCALayer, args, kwargs, output) -> None:
    """Replace the layer's recorded input moment (mean of x x^T over this rank's valid rows) by the
    mean over the valid rows of the whole global batch: the moment the one-process step sees."""
    if not (layer.training and torch.is_grad_enabled()) or layer.input_moment is None:
        return
    x = args[0]
    valid = args[1] if len(args) > 1 else kwargs.get("valid")
    rows = x.shape[0] * x.shape[1] if valid is None else valid.sum()
    moment = layer.input_moment
    packed = torch.cat([(moment * rows).flatten(), torch.as_tensor(rows, dtype=moment.dtype, device=moment.device)[None]])
    dist.all_reduce(packed)
    layer.input_moment = packed[:-1].view_as(moment) / packed[-1].clamp_min(1)


class DataParallel:
    """A model trained data-parallel over the default process group, as a context manager.

    Inside the block, `model` is the network to call for training (a DistributedDataParallel wrapper
    of `module` when distributed; `module` itself otherwise), BatchNorm layers sum their statistics
    over the ranks and DEACON moments are averaged over the global batch. On exit `module` is left
    as it was, without process-group state (it pickles and deep-copies as before). Without a process
    group of several ranks, every method returns its input: the one-process loop is unchanged.

    Parameters
    ----------
    module : nn.Module
        Same architecture, and the same weights, on every rank (DDP broadcasts rank 0's on entry anyway).
    device : torch.device
        This rank's device.
    """

    def __init__(self, module: nn.Module, device):
        self.module = module
        self.device = torch.device(device)
        self.enabled = is_distributed()
        self.rank = get_rank() if self.enabled else 0
        self.world_size = get_world_size() if self.enabled else 1
        self.model: nn.Module = module
        self._hooks: list = []
        self._norms: list[MaskedBatchNorm1d] = []

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def min_batch_size(self) -> int:
        """Smallest global batch worth a step: every rank needs a case; BatchNorm needs two."""
        return max(2, self.world_size)

    def __enter__(self) -> DataParallel:  # noqa: PYI034 (typing.Self needs Python 3.11)
        if not self.enabled:
            return self
        unsynced = [
            name or type(self.module).__name__
            for name, m in self.module.named_modules()
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and not isinstance(m, (MaskedBatchNorm1d, nn.SyncBatchNorm))
        ]
        if unsynced:
            # Per-rank batch statistics would make every rank's model differ from the one-process model.
            raise ValueError(
                f"data-parallel training needs BatchNorm statistics over the whole batch, but {unsynced[:3]} "
                "normalise with their rank's shard only; use tsrep.nn.MaskedBatchNorm1d, or on GPUs "
                "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)"
            )
        # DDP compares the ranks' parameter shapes itself, but a mismatch can leave a rank waiting.
        shapes = [(name, tuple(p.shape)) for name, p in self.module.named_parameters()]
        check_same_on_all_ranks(network=_fingerprint_text(repr(shapes)))  # parameter names and shapes
        group = dist.group.WORLD
        self._norms = [m for m in self.module.modules() if isinstance(m, MaskedBatchNorm1d)]
        for norm in self._norms:
            norm.process_group = group
        self._hooks = [
            m.register_forward_hook(_average_pca_moment, with_kwargs=True)
            for m in self.module.modules()
            if isinstance(m, PCALayer)
        ]
        try:
            # Running statistics come from the same all-reduced numbers on every rank: no buffer
            # broadcast before each forward. find_unused_parameters: a parameter that a forward does not
            # use (a head or pooler left out, a branch switched off) keeps grad None as with one process
            # (AdamW then leaves it alone) instead of stopping DDP; it costs one graph walk per step.
            self.model = nn.parallel.DistributedDataParallel(
                self.module,
                device_ids=[self.device.index] if self.device.type == "cuda" and self.device.index is not None else None,
                find_unused_parameters=True,
                **_NO_BUFFER_SYNC,
            )
        except BaseException:
            self.__exit__()
            raise
        # Dropout and other random layers: an independent stream per rank, drawn from the shared one,
        # so that the shards of a batch do not get the same masks.
        torch.manual_seed(int(torch.randint(2**62, ())) + self.rank)
        return self

    def __exit__(self, *exc) -> None:
        for hook in self._hooks:
            hook.remove()
        for norm in self._norms:
            norm.process_group = None
        self._hooks, self._norms = [], []
        self.model = self.module

    # ------------------------------------------------------------------ per step
    def shard(self, index: torch.Tensor) -> torch.Tensor:
        """This rank's share of the global batch `index`."""
        return shard_indices(index, self.rank, self.world_size) if self.enabled else index

    def weight_loss(self, loss: torch.Tensor, n_shard: int, n_batch: int) -> torch.Tensor:
        """Weight this rank's mean loss over its n_shard cases so that DDP's gradient average is the
        gradient of the mean loss over the n_batch cases of the global batch."""
        return loss * shard_loss_weight(n_shard, n_batch, self.world_size) if self.enabled else loss

    def batch_loss(self, weighted_loss: torch.Tensor) -> torch.Tensor:
        """The global batch's mean loss from each rank's weighted loss (detached; the same on every
        rank, so a non-finite loss stops every rank alike). One process: the loss itself."""
        if not self.enabled:
            return weighted_loss
        return all_reduce_sum(weighted_loss.detach()) / self.world_size

    def check_inputs(self, data: torch.Tensor, generator: torch.Generator) -> None:
        """The same training data (n_cases, ...) and shuffling generator state on every rank, or an
        error on every rank (rather than ranks that train on different batches, or wait forever)."""
        if not self.enabled:
            return
        check_same_on_all_ranks(
            training_data_shape=tuple(data.shape),
            training_data=_fingerprint(data),
            shuffling_generator_state=_fingerprint(generator.get_state()),
        )
        if len(data) < self.world_size:
            raise ValueError(
                f"{len(data)} training cases cannot be split over {self.world_size} processes; "
                "use fewer processes or more data"
            )

    def check_batch_size(self, batch_size: int) -> None:
        if self.enabled and batch_size < self.world_size:
            raise ValueError(
                f"batch_size={batch_size} is smaller than the {self.world_size} processes it is split over; "
                f"use batch_size >= {self.world_size}"
            )

    def split_list(self, items: list) -> list:
        """This rank's contiguous block of `items` (for splitting evaluation batches)."""
        if not self.enabled:
            return items
        lo = len(items) * self.rank // self.world_size
        hi = len(items) * (self.rank + 1) // self.world_size
        return items[lo:hi]

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's rows of `tensor`, in rank order, on every rank."""
        return all_gather_cat(tensor) if self.enabled else tensor
