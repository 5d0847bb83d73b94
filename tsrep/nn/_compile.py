"""Whether the code runs under torch.compile's tracing: the hand-fused steps then give way to stock ops.

The evolving attention saves memory in eager mode with custom autograd Functions that overwrite their own
outputs (the Q K^T map, the convolution-and-blend, softmax-dropout-values). torch.compile cannot trace an in-place
update of such an output, and it plans the graph's memory and fuses element-wise work itself; under it the same
equations run as plain torch ops (the Functions' stock references).
"""

from __future__ import annotations

import torch


# torch.compiler.is_compiling from torch 2.3; torch._dynamo's before. Looked up once: compiling() runs in every layer.
_is_compiling = getattr(torch.compiler, "is_compiling", None) or torch._dynamo.is_compiling


def compiling() -> bool:
    """True while torch.compile traces the calling code."""
    return bool(_is_compiling())
