"""libmil.models.utils: model utilities, as coremltools.models.utils
(merge functions, rename features, ...). Nothing is implemented here yet."""

__all__ = []
