"""libmil.optimize.coreml.experimental, as coremltools.optimize.coreml.experimental:
linear_quantize_activations (calibrated with libmil's interpreter, so on any OS)."""
from .._post_training_quantization import linear_quantize_activations
from .._config import OpLinearQuantizerConfig as OpActivationLinearQuantizerConfig

__all__ = ["linear_quantize_activations", "OpActivationLinearQuantizerConfig"]
