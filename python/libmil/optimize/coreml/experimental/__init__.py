"""libmil.optimize.coreml.experimental, as coremltools.optimize.coreml.experimental
(activation quantization and other experimental compression). Empty for now."""

__all__ = []
