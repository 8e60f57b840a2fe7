"""libmil.optimize, laid out like coremltools.optimize: the Core ML model
compression API lives in libmil.optimize.coreml."""
from . import coreml

__all__ = ["coreml"]
