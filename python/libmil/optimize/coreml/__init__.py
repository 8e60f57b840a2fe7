"""libmil.optimize.coreml, as coremltools.optimize.coreml: compression
configs (OptimizationConfig, OpLinearQuantizerConfig, OpPalettizerConfig,
OpMagnitudePrunerConfig, OpThresholdPrunerConfig) and functions
(linear_quantize_weights, palettize_weights, prune_weights,
decompress_weights, linear_quantize_activations), each returning a new
model, on the same C library as `mil compress`."""
from . import experimental
from ._config import (OpCompressorConfig, OpLinearQuantizerConfig, OpMagnitudePrunerConfig, OpPalettizerConfig,
                      OpThresholdPrunerConfig, OptimizationConfig)
from ._post_training_quantization import (decompress_weights, get_weights_metadata, linear_quantize_activations,
                                          linear_quantize_weights, palettize_weights, prune_weights)

__all__ = ["experimental", "OpCompressorConfig", "OpLinearQuantizerConfig", "OpMagnitudePrunerConfig",
           "OpPalettizerConfig", "OpThresholdPrunerConfig", "OptimizationConfig", "decompress_weights",
           "get_weights_metadata", "linear_quantize_activations", "linear_quantize_weights", "palettize_weights",
           "prune_weights"]
