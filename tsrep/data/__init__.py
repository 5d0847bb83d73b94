"""Input conversion, padding masks and (later) archive loaders."""

from tsrep.data.convert import ChannelStandardizer, as_case_list, fill_missing, pad_cases

__all__ = ["ChannelStandardizer", "as_case_list", "fill_missing", "pad_cases"]
