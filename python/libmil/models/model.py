"""libmil.models.model.MLModel, as coremltools.models.MLModel: MLModel(path)
loads a .mlpackage, .mlmodel or .mil file (and converts a .onnx file, as
libmil.load does). It is the same class as libmil.Model."""
from .._model import Model as MLModel

__all__ = ["MLModel"]
