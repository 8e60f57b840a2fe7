"""libmil.models, laid out like coremltools.models: MLModel (a loaded ML
Program: MLModel(path) loads it) and utils (model utilities)."""
from . import utils
from .model import MLModel

__all__ = ["MLModel", "utils"]
