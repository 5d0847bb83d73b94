"""Input conversion, padding masks and archive loaders."""

from tsrep.data.archive import UCR, DatasetNotFoundError, dataset_task, list_datasets, load_archive, read_tsv
from tsrep.data.convert import SCALINGS, ChannelStandardizer, as_case_list, fill_missing, pad_cases, symlog

__all__ = [
    "SCALINGS", "ChannelStandardizer", "symlog", "as_case_list", "fill_missing", "pad_cases",
    "UCR", "DatasetNotFoundError", "dataset_task", "list_datasets", "load_archive", "read_tsv",
]
