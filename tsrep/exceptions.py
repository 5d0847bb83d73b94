"""The exceptions and warnings of tsrep (scikit-learn's ``sklearn.exceptions`` as the model).

Each is also importable from the module that raises it (``tsrep.data.DatasetNotFoundError``,
``tsrep.benchmarks.ConfigError``, ...). Every one of them is a subclass of the built-in exception
a caller would catch anyway (ValueError, FileNotFoundError, ConnectionError, RuntimeError), so
``except ValueError`` keeps working. Anything else tsrep refuses is a plain ValueError or
TypeError naming the argument.
"""

__all__ = [
    "ConfigError",
    "DatasetNotFoundError",
    "InsufficientMemoryError",
    "MissingChannelWarning",
    "ModelFileError",
    "SchedulerError",
    "SearchSpaceError",
    "StorageError",
    "StoreError",
    "StudyMismatchError",
    "TsFormatError",
]


# Estimators and model files


class InsufficientMemoryError(ValueError, MemoryError):
    """Training would need more memory than the device has; both a ValueError (bad settings) and a MemoryError."""


class MissingChannelWarning(UserWarning):
    """A channel of the training data holds no observed value: it is read as a constant."""


class ModelFileError(ValueError):
    """A file that is not a tsrep model file this tsrep can read (wrong kind, newer format, corrupt)."""


# Data


class DatasetNotFoundError(FileNotFoundError):
    """A problem that is neither on disk nor downloadable (offline, or the download failed)."""


class TsFormatError(ValueError):
    """A .ts file that cannot be read as one: the message names the file and, where it can, the line."""


# Benchmarks and tuning


class ConfigError(ValueError):
    """A benchmark or tuning configuration that cannot be used (the message names the key)."""


class SchedulerError(ConnectionError):
    """The Dask scheduler cannot be reached, or Dask's distributed is not installed."""


class StoreError(RuntimeError):
    """The results store cannot be opened, read or written (damaged file, unreachable server)."""


class SearchSpaceError(ValueError):
    """A search space that cannot be used: unknown parameter, empty range, malformed spec."""


class StorageError(ConnectionError):
    """The study storage cannot be opened or reached."""


class StudyMismatchError(ValueError):
    """A study reused with data or fixed settings other than those its trials were scored with."""
