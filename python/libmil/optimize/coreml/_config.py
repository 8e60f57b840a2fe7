"""coremltools.optimize.coreml's configs (_config.py): OpLinearQuantizerConfig,
OpPalettizerConfig, OpMagnitudePrunerConfig, OpThresholdPrunerConfig and
OptimizationConfig, with coremltools' fields and defaults. Validation is the
C library's config reader (include/mil/compress.h), which mirrors
coremltools' attrs validators; a bad config raises libmil.MILInvalidError
(coremltools raises ValueError / TypeError) naming the key."""
import json

from ... import _capi as C
from ..._errors import Diag, MILInvalidError, MILUnsupportedError

__all__ = ["OpCompressorConfig", "OpLinearQuantizerConfig", "OpPalettizerConfig", "OpMagnitudePrunerConfig",
           "OpThresholdPrunerConfig", "OptimizationConfig"]


class OpCompressorConfig:
    """Base of the op configs: fields with coremltools' defaults."""
    _FIELDS = ()

    def __init__(self, **kwargs):
        for name, default in self._FIELDS:
            setattr(self, name, kwargs.pop(name, default))
        if kwargs:
            raise TypeError("%s got unexpected arguments: %s" % (type(self).__name__, ", ".join(sorted(kwargs))))
        _validate({"config_type": type(self).__name__, "global_config": self._to_dict()})

    def _to_dict(self):
        d = {"config_type": type(self).__name__}
        for name, _ in self._FIELDS:
            v = getattr(self, name)
            if name == "lut_function":
                if v is not None:
                    raise MILUnsupportedError("lut_function (a Python callable) cannot be given to libmil")
                continue
            if v is None:
                continue
            if isinstance(v, tuple):
                v = list(v)
            if not isinstance(v, (str, int, float, bool, list)):
                v = getattr(v, "__name__", str(v))  # numpy dtypes: np.int8 -> "int8"
            d[name] = v
        return d

    @classmethod
    def _from_dict(cls, d):
        d = {k: v for k, v in d.items() if k != "config_type"}
        return cls(**d)

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n, _ in self._FIELDS)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % (n, getattr(self, n)) for n, _ in self._FIELDS))


class OpLinearQuantizerConfig(OpCompressorConfig):
    """Linear quantization of weights (and, with linear_quantize_activations,
    of activations): mode "linear_symmetric" | "linear", dtype int8 | uint8
    | int4 | uint4, granularity per_channel | per_tensor | per_block."""
    _FIELDS = (("mode", "linear_symmetric"), ("dtype", "int8"), ("granularity", "per_channel"), ("block_size", 32),
               ("weight_threshold", 2048))

    def __init__(self, mode="linear_symmetric", dtype="int8", granularity="per_channel", block_size=32,
                 weight_threshold=2048):
        super().__init__(mode=mode, dtype=dtype, granularity=granularity, block_size=block_size,
                         weight_threshold=weight_threshold)


class OpPalettizerConfig(OpCompressorConfig):
    """Palettization: mode kmeans | uniform | unique (custom needs a Python
    lut_function, which libmil cannot run), nbits, granularity, ..."""
    _FIELDS = (("mode", "kmeans"), ("nbits", None), ("lut_function", None), ("granularity", "per_tensor"),
               ("group_size", 32), ("channel_axis", None), ("cluster_dim", 1), ("enable_per_channel_scale", False),
               ("num_kmeans_workers", 1), ("weight_threshold", 2048))

    def __init__(self, mode="kmeans", nbits=None, lut_function=None, granularity="per_tensor", group_size=32,
                 channel_axis=None, cluster_dim=1, enable_per_channel_scale=False, num_kmeans_workers=1,
                 weight_threshold=2048):
        super().__init__(mode=mode, nbits=nbits, lut_function=lut_function, granularity=granularity,
                         group_size=group_size, channel_axis=channel_axis, cluster_dim=cluster_dim,
                         enable_per_channel_scale=enable_per_channel_scale, num_kmeans_workers=num_kmeans_workers,
                         weight_threshold=weight_threshold)


class OpThresholdPrunerConfig(OpCompressorConfig):
    """Pruning of the weights whose magnitude is at most threshold."""
    _FIELDS = (("threshold", 1e-12), ("minimum_sparsity_percentile", 0.5), ("weight_threshold", 2048))

    def __init__(self, threshold=1e-12, minimum_sparsity_percentile=0.5, weight_threshold=2048):
        super().__init__(threshold=threshold, minimum_sparsity_percentile=minimum_sparsity_percentile,
                         weight_threshold=weight_threshold)


class OpMagnitudePrunerConfig(OpCompressorConfig):
    """Magnitude pruning: target_sparsity (optionally block_size, dim) or n_m_ratio."""
    _FIELDS = (("target_sparsity", None), ("block_size", None), ("n_m_ratio", None), ("dim", None),
               ("weight_threshold", 2048))

    def __init__(self, target_sparsity=None, block_size=None, n_m_ratio=None, dim=None, weight_threshold=2048):
        super().__init__(target_sparsity=target_sparsity, block_size=block_size, n_m_ratio=n_m_ratio, dim=dim,
                         weight_threshold=weight_threshold)


_CLASSES = {c.__name__: c for c in (OpLinearQuantizerConfig, OpPalettizerConfig, OpMagnitudePrunerConfig,
                                    OpThresholdPrunerConfig)}


def _read(text, yaml):
    """The C reader's normalized dictionary of an OptimizationConfig text."""
    cfg = C.c_void_p()
    with Diag() as d:
        f = C.compress_config_from_yaml if yaml else C.compress_config_from_json
        raw = text.encode("utf-8")
        d.raise_for(f(raw, len(raw), b"config", 0, C.byref(cfg), d.ref))
    try:
        return json.loads(C.take_string(C.compress_config_to_json(cfg)))
    finally:
        C.compress_config_free(cfg)


def _validate(d):
    return _read(json.dumps(d), False)


def _op_config(d):
    if d is None:
        return None
    return _CLASSES[d["config_type"]]._from_dict(d)


class OptimizationConfig:
    """coremltools.optimize.coreml.OptimizationConfig: a global op config and
    op configs by op type and by op name (None: that op is not compressed)."""

    def __init__(self, global_config=None, op_type_configs=None, op_name_configs=None):
        for c in [global_config] + list((op_type_configs or {}).values()) + list((op_name_configs or {}).values()):
            if c is not None and not isinstance(c, OpCompressorConfig):
                raise MILInvalidError("config must be an Op*Config or None, got %s" % type(c).__name__)
        self.global_config = global_config
        self.op_type_configs = dict(op_type_configs or {})
        self.op_name_configs = dict(op_name_configs or {})
        self._json()  # validates the whole config

    def _dict(self):
        def one(c):
            return None if c is None else c._to_dict()
        d = {"op_type_configs": {k: one(v) for k, v in self.op_type_configs.items()},
             "op_name_configs": {k: one(v) for k, v in self.op_name_configs.items()}}
        types = {type(c).__name__ for c in [self.global_config] + list(self.op_type_configs.values()) +
                 list(self.op_name_configs.values()) if c is not None}
        d["config_type"] = next(iter(types)) if len(types) == 1 else "OpLinearQuantizerConfig"
        if self.global_config is not None:
            d["global_config"] = one(self.global_config)
        return d

    def _json(self):
        return json.dumps(_validate(self._dict()))

    def set_global(self, op_config):
        self.global_config = op_config
        self._json()

    def set_op_type(self, op_type, op_config):
        self.op_type_configs[op_type] = op_config
        self._json()

    def set_op_name(self, op_name, op_config):
        self.op_name_configs[op_name] = op_config
        self._json()

    @classmethod
    def _from_normalized(cls, d):
        return cls(global_config=_op_config(d.get("global_config")),
                   op_type_configs={k: _op_config(v) for k, v in (d.get("op_type_configs") or {}).items()},
                   op_name_configs={k: _op_config(v) for k, v in (d.get("op_name_configs") or {}).items()})

    @classmethod
    def from_dict(cls, config_dict):
        """From coremltools' dictionary form: config_type, global_config,
        op_type_configs, op_name_configs."""
        if not isinstance(config_dict, dict):
            raise MILInvalidError("config_dict must be a dict, got %s" % type(config_dict).__name__)
        return cls._from_normalized(_read(json.dumps(config_dict), False))

    @classmethod
    def from_yaml(cls, yml):
        """From a YAML file path or stream (coremltools' from_yaml)."""
        if hasattr(yml, "read"):
            text = yml.read()
        else:
            with open(yml, "r", encoding="utf-8") as f:
                text = f.read()
        return cls._from_normalized(_read(text, True))

    def __eq__(self, other):
        return isinstance(other, OptimizationConfig) and self._json() == other._json()

    def __repr__(self):
        return "OptimizationConfig(global_config=%r, op_type_configs=%r, op_name_configs=%r)" % (
            self.global_config, self.op_type_configs, self.op_name_configs)
