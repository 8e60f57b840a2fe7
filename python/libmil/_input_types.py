"""ct.convert's input and output types, with coremltools' names and signatures
(coremltools/converters/mil/input_types.py): TensorType, ImageType, Shape,
RangeDim, EnumeratedShapes, ClassifierConfig. libmil.convert takes them in
`inputs`, `outputs` and `classifier_config` and hands them to the C library's
model interface (mil/input_types.h)."""
import numpy as np

from ._enums import colorlayout

__all__ = ["TensorType", "ImageType", "Shape", "RangeDim", "EnumeratedShapes", "ClassifierConfig"]


class RangeDim:
    """A dim that takes any size in [lower_bound, upper_bound] (upper_bound -1:
    unbounded, which ML Programs refuse at conversion); `default` is the size
    the description shows (lower_bound when None). `symbol` names the dim."""

    def __init__(self, lower_bound=1, upper_bound=-1, default=None, symbol=None):
        if not isinstance(lower_bound, (int, np.integer)) or not isinstance(upper_bound, (int, np.integer)):
            raise TypeError("RangeDim bounds must be integers, got %r and %r" % (lower_bound, upper_bound))
        if lower_bound < 1:
            raise ValueError("RangeDim lower_bound must be >= 1, got %d" % lower_bound)
        if upper_bound != -1 and upper_bound < lower_bound:
            raise ValueError("RangeDim upper_bound (%d) must be >= lower_bound (%d) or -1" % (upper_bound, lower_bound))
        if default is None:
            default = lower_bound
        if default < lower_bound or (upper_bound != -1 and default > upper_bound):
            raise ValueError("RangeDim default %d is outside [%d, %d]" % (default, lower_bound, upper_bound))
        self.lower_bound, self.upper_bound, self.default, self.symbol = int(lower_bound), int(upper_bound), int(default), symbol

    def __repr__(self):
        return "RangeDim(lower_bound=%d, upper_bound=%d, default=%d)" % (self.lower_bound, self.upper_bound, self.default)


class Shape:
    """A shape whose dims are ints or RangeDims; `default` the default shape."""

    def __init__(self, shape, default=None):
        if isinstance(shape, Shape):
            shape = shape.shape
        if not isinstance(shape, (list, tuple)):
            raise TypeError("Shape takes a list or tuple of dims, got %r" % (shape,))
        dims = []
        for d in shape:
            if isinstance(d, RangeDim):
                dims.append(d)
            elif isinstance(d, (int, np.integer)) and d >= 0:
                dims.append(int(d))
            elif d is None or (isinstance(d, (int, np.integer)) and d == -1):
                dims.append(RangeDim())
            else:
                raise TypeError("a dim must be an int >= 0 or a RangeDim, got %r" % (d,))
        self.shape = tuple(dims)
        self.default = tuple(default) if default is not None else tuple(
            d.default if isinstance(d, RangeDim) else d for d in dims)

    @property
    def has_symbolic(self):
        return any(isinstance(d, RangeDim) for d in self.shape)

    def __repr__(self):
        return "Shape(%r)" % (self.shape,)


class EnumeratedShapes:
    """A list of fixed shapes the input takes; `default` is one of them (the
    first when None)."""

    def __init__(self, shapes, default=None):
        if not isinstance(shapes, (list, tuple)) or len(shapes) < 2:
            raise ValueError("EnumeratedShapes needs a list of at least two shapes")
        self.shapes = [s if isinstance(s, Shape) else Shape(s) for s in shapes]
        rank = len(self.shapes[0].shape)
        for s in self.shapes:
            if s.has_symbolic:
                raise ValueError("EnumeratedShapes takes fixed shapes only, got %r" % (s,))
            if len(s.shape) != rank:
                raise ValueError("every enumerated shape must have rank %d, got %r" % (rank, s.shape))
        self.default = tuple(default.shape if isinstance(default, Shape) else default) if default is not None \
            else self.shapes[0].shape
        if self.default not in [s.shape for s in self.shapes]:
            raise ValueError("the default shape %r is not one of the enumerated shapes" % (self.default,))
        self.symbolic_shape = tuple(
            d if all(s.shape[i] == d for s in self.shapes) else RangeDim() for i, d in enumerate(self.shapes[0].shape))

    def __repr__(self):
        return "EnumeratedShapes(%r, default=%r)" % ([s.shape for s in self.shapes], self.default)


def _as_shape(shape):
    if shape is None or isinstance(shape, (Shape, EnumeratedShapes)):
        return shape
    return Shape(shape)


_DTYPES = {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.int32): "int32"}


def _dtype_name(dtype, what):
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in ("fp16", "fp32", "int32"):
        return dtype
    try:
        return _DTYPES[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise TypeError("%s: dtype must be np.float16, np.float32 or np.int32, got %r" % (what, dtype)) from None


class InputType:
    def __init__(self, name=None, shape=None, dtype=None):
        if name is not None and not isinstance(name, str):
            raise TypeError("name must be a str, got %r" % (name,))
        self.name = name
        self.shape = _as_shape(shape)
        self.dtype = dtype


class TensorType(InputType):
    """An input (or, in `outputs`, an output) that is a tensor: its name, shape
    (ints, RangeDims, a Shape or EnumeratedShapes) and dtype (np.float16,
    np.float32, np.int32; None: the model's, or fp16 I/O for iOS16+ fp16
    conversions as ct.convert gives)."""

    def __init__(self, name=None, shape=None, dtype=None, default_value=None):
        super().__init__(name, shape, dtype)
        _dtype_name(dtype, "TensorType %s" % name)
        if default_value is not None:
            raise NotImplementedError("TensorType(default_value=...) (optional inputs) is not supported by libmil yet")
        self.default_value = default_value


class ImageType(InputType):
    """An image input: Core ML hands the model its pixels as (1, C, H, W) in
    `color_layout`'s channel order, and the model computes x * scale + bias
    first (bias: one value per channel, or one for grayscale)."""

    def __init__(self, name=None, shape=None, scale=1.0, bias=None, color_layout=colorlayout.RGB, channel_first=None,
                 grayscale_use_uint8=False):
        super().__init__(name, shape, None)
        if isinstance(color_layout, str):
            color_layout = colorlayout(color_layout)
        if not isinstance(color_layout, colorlayout):
            raise TypeError("color_layout must be a libmil.colorlayout member, got %r" % (color_layout,))
        gray = color_layout in (colorlayout.GRAYSCALE, colorlayout.GRAYSCALE_FLOAT16)
        if bias is None:
            bias = 0.0 if gray else [0.0, 0.0, 0.0]
        if gray and isinstance(bias, (list, tuple)):
            raise ValueError("a grayscale image's bias is one number, got %r" % (bias,))
        if not gray and (not isinstance(bias, (list, tuple)) or len(bias) != 3):
            raise ValueError("an RGB/BGR image's bias is a list of 3 numbers, got %r" % (bias,))
        if channel_first is False:
            raise NotImplementedError("ImageType(channel_first=False) is not supported by libmil yet")
        if grayscale_use_uint8:
            raise NotImplementedError("ImageType(grayscale_use_uint8=True) is not supported by libmil yet")
        self.scale = float(scale)
        self.bias = bias
        self.color_layout = color_layout
        self.channel_first = channel_first
        self.grayscale_use_uint8 = grayscale_use_uint8


class ClassifierConfig:
    """A classifier head: class_labels (a list of str or int, or the path of a
    file with one label per line); the label output's name; the var holding
    the probabilities (default: the last op's output)."""

    def __init__(self, class_labels, predicted_feature_name="classLabel", predicted_probabilities_output=None):
        if isinstance(class_labels, str):
            with open(class_labels, "r") as f:
                class_labels = f.read().splitlines()
        if not isinstance(class_labels, (list, tuple)) or not class_labels:
            raise ValueError("Class labels must be a list of integers / strings or a file path")
        if not all(isinstance(x, (int, np.integer, str)) for x in class_labels):
            raise ValueError("Class labels must be a list of integers / strings or a file path")
        self.class_labels = list(class_labels)
        self.predicted_feature_name = predicted_feature_name
        self.predicted_probabilities_output = predicted_probabilities_output
