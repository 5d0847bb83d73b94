"""Input conversion, padding masks and (later) archive loaders."""

from tsrep.data.convert import SCALINGS, ChannelStandardizer, as_case_list, fill_missing, pad_cases, symlog

__all__ = ["SCALINGS", "ChannelStandardizer", "symlog", "as_case_list", "fill_missing", "pad_cases"]
