"""libmil.optimize.coreml, as coremltools.optimize.coreml: compression
configs and functions (OpLinearQuantizerConfig, linear_quantize_weights,
palettize_weights, prune_weights, ...) and the experimental API.

The Python package exposes no compression function yet: compress a model
with the CLI (`mil compress`, see `mil compress --help`), which drives the
same C library (include/mil/compress.h)."""
from . import experimental

__all__ = ["experimental"]
