"""The model interface of libmil.convert: ct.convert's `inputs`, `outputs`
and `classifier_config` (libmil._input_types) as the C library's
mil_model_interface (input_types.h)."""
import numpy as np

from . import _capi as C
from ._input_types import ClassifierConfig, EnumeratedShapes, ImageType, InputType, RangeDim, Shape, TensorType

_DT = {"fp16": C.DT_FP16, "fp32": C.DT_FP32, "int32": C.DT_INT32}


def _dtype_code(dtype, what):
    if dtype is None:
        return 0
    if isinstance(dtype, str) and dtype in _DT:
        return _DT[dtype]
    try:
        return _DT[{np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32",
                    np.dtype(np.int32): "int32"}[np.dtype(dtype)]]
    except (TypeError, KeyError):
        raise TypeError("%s: dtype must be np.float16, np.float32 or np.int32, got %r" % (what, dtype)) from None


class _Interface:
    """Holds the ctypes structures (and everything they point to) alive."""

    def __init__(self, inputs, outputs, classifier_config):
        self._keep = []
        self.c = C.InterfaceC()
        ins = list(inputs or [])
        for it in ins:
            if not isinstance(it, InputType):
                raise TypeError("inputs must be a list of libmil.TensorType / libmil.ImageType, got %r" % (it,))
            if it.name is None:
                raise ValueError("libmil.convert needs the name of every input type (the ONNX input's name)")
        arr = (C.InputTypeC * max(len(ins), 1))()
        for i, it in enumerate(ins):
            arr[i] = self._input(it)
        self.c.n_inputs, self.c.inputs = len(ins), arr
        outs = list(outputs or [])
        oarr = (C.OutputTypeC * max(len(outs), 1))()
        for i, ot in enumerate(outs):
            if not isinstance(ot, TensorType):
                raise TypeError("outputs must be a list of libmil.TensorType, got %r" % (ot,))
            oarr[i] = C.OutputTypeC(self._s(ot.name), _dtype_code(ot.dtype, "output %s" % ot.name))
        self.c.n_outputs, self.c.outputs = len(outs), oarr
        self._keep += [arr, oarr]
        if classifier_config is not None:
            if not isinstance(classifier_config, ClassifierConfig):
                raise TypeError("classifier_config must be a libmil.ClassifierConfig, got %r" % (classifier_config,))
            self.c.classifier = C.POINTER(C.ClassifierC)(self._classifier(classifier_config))

    def _s(self, s):
        if s is None:
            return None
        b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        self._keep.append(b)
        return b

    def _ints(self, xs):
        a = (C.c_int64 * max(len(xs), 1))(*xs)
        self._keep.append(a)
        return a

    def _input(self, it):
        t = C.InputTypeC()
        t.name = self._s(it.name)
        t.is_image = isinstance(it, ImageType)
        t.scale = 1.0
        shape = it.shape
        if shape is not None:
            t.has_shape = True
            if isinstance(shape, EnumeratedShapes):
                rank = len(shape.shapes[0].shape)
                flat = [d for s in shape.shapes for d in s.shape]
                t.shape = C.ShapeSpec(rank, self._ints(list(shape.shapes[0].shape)), None, len(shape.shapes),
                                      self._ints(flat), self._ints(list(shape.default)))
            else:
                dims = shape.shape if isinstance(shape, Shape) else tuple(shape)
                ranges = (C.RangeDimC * max(len(dims), 1))()
                fixed, any_range = [], False
                for i, d in enumerate(dims):
                    if isinstance(d, RangeDim):
                        if d.upper_bound == -1:
                            raise ValueError("input %s: an unbounded RangeDim is not allowed for ML Programs; set "
                                             "upper_bound" % it.name)
                        ranges[i] = C.RangeDimC(d.lower_bound, d.upper_bound, d.default)
                        fixed.append(d.default)
                        any_range = True
                    else:
                        fixed.append(int(d))
                self._keep.append(ranges)
                t.shape = C.ShapeSpec(len(dims), self._ints(fixed), ranges if any_range else None, 0, None, None)
        if t.is_image:
            t.scale = it.scale
            b = it.bias if isinstance(it.bias, (list, tuple)) else [it.bias, it.bias, it.bias]
            t.bias = (C.c_float * 3)(*[float(x) for x in b])
            t.color_layout = C.COLOR_LAYOUTS[it.color_layout.value]
        else:
            t.dtype = _dtype_code(it.dtype, "input %s" % it.name)
        return t

    def _classifier(self, cc):
        labels = cc.class_labels
        ints = all(isinstance(x, (int, np.integer)) for x in labels)
        c = C.ClassifierC()
        c.n_labels = len(labels)
        strs = (C.c_char_p * len(labels))(*[self._s(str(x)) for x in labels])
        c.labels = strs
        if ints:
            c.int_labels = self._ints([int(x) for x in labels])
        c.predicted_feature_name = self._s(cc.predicted_feature_name)
        c.predicted_probabilities_output = self._s(cc.predicted_probabilities_output)
        self._keep += [strs, c]
        return c
