"""Input conversion, padding masks and archive loaders."""

from __future__ import annotations

from tsrep._lazy import lazy_attributes

# Loaded on first use (PEP 562): the command lines' --help and argument checks do not pay for aeon and pandas.
__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(["UCR", "DatasetNotFoundError", "dataset_task", "list_datasets", "load_archive", "read_tsv"],
                    "tsrep.data.archive"),
    **dict.fromkeys(["SCALINGS", "ChannelStandardizer", "as_case_list", "fill_missing", "pad_cases", "symlog"],
                    "tsrep.data.convert"),
})

__all__ = [
    "SCALINGS", "ChannelStandardizer", "symlog", "as_case_list", "fill_missing", "pad_cases",
    "UCR", "DatasetNotFoundError", "dataset_task", "list_datasets", "load_archive", "read_tsv",
]
