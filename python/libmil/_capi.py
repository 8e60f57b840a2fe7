"""ctypes bindings of libmil's public C API (include/mil/*.h).

Only this module touches ctypes. It finds the shared library in this order:

1. the path in the environment variable ``LIBMIL_LIBRARY``;
2. ``libmil/_lib/libmil.so*`` inside the installed package (``make python``
   copies the library there before ``pip install ./python``);
3. ``build/libmil.so`` of the source tree this package sits in (running
   from a checkout after ``make``);
4. the system's library path (``ctypes.util.find_library("mil")``).

Nothing is compiled at import time.
"""
import ctypes
import ctypes.util
import glob
import os

c_int, c_int32, c_int64, c_uint64 = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
c_size_t, c_double, c_bool, c_char_p, c_void_p = (
    ctypes.c_size_t, ctypes.c_double, ctypes.c_bool, ctypes.c_char_p, ctypes.c_void_p)
POINTER, Structure, byref = ctypes.POINTER, ctypes.Structure, ctypes.byref
string_at, memmove = ctypes.string_at, ctypes.memmove
c_float = ctypes.c_float
cast = ctypes.cast


def _candidates():
    env = os.environ.get("LIBMIL_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for p in sorted(glob.glob(os.path.join(here, "_lib", "libmil.so*")), key=len):
        yield p
    root = os.path.dirname(os.path.dirname(here))
    for p in sorted(glob.glob(os.path.join(root, "build", "libmil.so*")), key=len):
        yield p
    found = ctypes.util.find_library("mil")
    if found:
        yield found


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "libmil: cannot load the libmil shared library; tried: %s. Build it with `make python` "
        "or point LIBMIL_LIBRARY at libmil.so" % (", ".join(tried) or "nothing found"))


lib, library_path = _load()

# ---------------------------------------------------------------- structs


class Diag(Structure):  # mil_diag (status.h)
    pass


class DiagMsg(Structure):  # mil_diag_msg
    _fields_ = [("severity", c_int), ("text", c_char_p)]


Diag._fields_ = [("msgs", POINTER(DiagMsg)), ("count", c_size_t), ("cap", c_size_t),
                 ("n_errors", c_size_t), ("n_warnings", c_size_t), ("max_msgs", c_size_t)]


class ProgramHead(Structure):  # the leading public fields of struct mil_program (ir.h)
    _fields_ = [("version", c_int64), ("doc_string", c_char_p), ("n_functions", c_int32),
                ("functions", POINTER(POINTER(c_char_p)))]  # mil_function* whose first field is the name


class Dim(Structure):  # mil_dim (types.h)
    _fields_ = [("size", c_int64), ("sym", c_char_p), ("variadic", c_bool)]


class Type(Structure):  # mil_type (types.h)
    pass


Type._fields_ = [("kind", c_int), ("dtype", c_int), ("rank", c_int32), ("is_scalar", c_bool),
                 ("dims", POINTER(Dim)), ("elem", POINTER(Type)), ("value", POINTER(Type)),
                 ("length", Dim), ("n_elems", c_int32), ("elems", POINTER(POINTER(Type)))]


class Tensor(Structure):  # mil_tensor (interp.h)
    _fields_ = [("dtype", c_int), ("rank", c_int32), ("shape", POINTER(c_int64)), ("data", c_void_p),
                ("nbytes", c_size_t), ("numel", c_int64)]


class Shape(Structure):  # mil_shape (model.h)
    _fields_ = [("rank", c_int32), ("dims", POINTER(c_int64))]


class SizeRange(Structure):  # mil_size_range
    _fields_ = [("lower", c_uint64), ("upper", c_int64)]


class Feature(Structure):  # mil_feature (model.h)
    _fields_ = [("name", c_char_p), ("short_description", c_char_p), ("kind", c_int), ("is_optional", c_bool),
                ("array_dtype", c_int), ("shape", Shape), ("n_enumerated", c_int32),
                ("enumerated", POINTER(Shape)), ("n_ranges", c_int32), ("ranges", POINTER(SizeRange)),
                ("width", c_int64), ("height", c_int64), ("color_space", c_int), ("n_image_sizes", c_int32),
                ("image_sizes", POINTER(c_uint64)), ("has_image_range", c_bool), ("width_range", SizeRange),
                ("height_range", SizeRange), ("dict_key", c_int)]


class FunctionDesc(Structure):  # mil_function_desc
    _fields_ = [("name", c_char_p), ("n_inputs", c_int32), ("n_outputs", c_int32), ("n_states", c_int32),
                ("inputs", POINTER(Feature)), ("outputs", POINTER(Feature)), ("states", POINTER(Feature)),
                ("predicted_feature_name", c_char_p), ("predicted_probabilities_name", c_char_p)]


class ModelDesc(Structure):  # mil_model_desc
    _fields_ = [("multi_function", c_bool), ("default_function_name", c_char_p), ("n_functions", c_int32),
                ("functions", POINTER(FunctionDesc)), ("short_description", c_char_p),
                ("version_string", c_char_p), ("author", c_char_p), ("license", c_char_p),
                ("n_user_defined", c_int32), ("user_keys", POINTER(c_char_p)), ("user_values", POINTER(c_char_p))]


class PassOptionDef(Structure):  # mil_pass_option_def (passes.h)
    _fields_ = [("name", c_char_p), ("type", c_int), ("default_value", c_char_p), ("has_min", c_bool),
                ("has_max", c_bool), ("min", c_double), ("max", c_double), ("doc", c_char_p)]


class PassDef(Structure):  # mil_pass_def
    _fields_ = [("name", c_char_p), ("doc", c_char_p), ("options", POINTER(PassOptionDef)),
                ("n_options", c_int32), ("run", c_void_p), ("anchors", POINTER(c_char_p))]


class PassRecord(Structure):  # mil_pass_record
    _fields_ = [("pass_", c_char_p), ("index", c_int32), ("seconds", c_double), ("changes", c_int64),
                ("ops_before", c_int64), ("ops_after", c_int64), ("skipped", c_bool)]


class PipelineReport(Structure):  # mil_pipeline_report
    _fields_ = [("n_records", c_int32), ("records", POINTER(PassRecord)), ("seconds", c_double),
                ("verify_seconds", c_double), ("ops_before", c_int64), ("ops_after", c_int64),
                ("n_changed", c_int32)]


class PrintOptions(Structure):  # mil_print_options (text.h)
    _fields_ = [("form", c_int), ("blob_refs", c_bool)]


class ParseOptions(Structure):  # mil_parse_options
    _fields_ = [("filename", c_char_p), ("base_dir", c_char_p)]


class Buf(Structure):  # mil_buf
    _fields_ = [("data", c_void_p), ("len", c_size_t), ("cap", c_size_t), ("oom", c_bool)]


class EquivOptions(Structure):  # mil_equiv_options (equiv.h)
    _fields_ = [("rel_tol", c_double), ("fp16_ulps", c_int), ("identical", c_bool), ("name_a", c_char_p),
                ("name_b", c_char_p)]


class EquivResult(Structure):  # mil_equiv_result
    _fields_ = [("equivalent", c_bool), ("identical", c_bool), ("diff", ctypes.c_char * 1024),
                ("identical_diff", ctypes.c_char * 1024)]


# ---------------------------------------------------------------- functions

P = c_void_p  # opaque handles: mil_model*, mil_program*, mil_interp*, ...


def _fn(name, restype, *argtypes, optional=False):
    f = getattr(lib, name, None)
    if f is None:
        if optional:
            return None
        raise ImportError("libmil: %s lacks %s (built from another version?)" % (library_path, name))
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


pDiag = POINTER(Diag)
status_str = _fn("mil_status_str", c_char_p, c_int)
diag_init = _fn("mil_diag_init", None, pDiag)
diag_clear = _fn("mil_diag_clear", None, pDiag)
dtype_name = _fn("mil_dtype_name", c_char_p, c_int)

model_load = _fn("mil_model_load", c_int, c_char_p, POINTER(P), pDiag)
model_save = _fn("mil_model_save", c_int, P, c_char_p, pDiag)
model_free = _fn("mil_model_free", None, P)
model_program = _fn("mil_model_program", P, P)
model_from_program = _fn("mil_model_from_program", c_int, P, c_int, POINTER(P), pDiag)
model_spec_version = _fn("mil_model_spec_version", c_int, P)
model_description = _fn("mil_model_description", POINTER(ModelDesc), P)
model_sync_description = _fn("mil_model_sync_description", c_int, P, pDiag)
model_check_weights = _fn("mil_model_check_weights", c_int, P, pDiag)

program_validate = _fn("mil_program_validate", c_int, P, pDiag)
program_count_ops = _fn("mil_program_count_ops", c_int64, P)
program_free = _fn("mil_program_free", None, P)
print_program = _fn("mil_print_program", None, P, POINTER(PrintOptions), POINTER(Buf))
buf_free = _fn("mil_buf_free", None, POINTER(Buf))
parse_program = _fn("mil_parse_program", c_int, c_char_p, c_size_t, POINTER(ParseOptions), POINTER(P), pDiag)
program_compare = _fn("mil_program_compare", c_int, P, P, POINTER(EquivOptions), POINTER(EquivResult), pDiag)

interp_new = _fn("mil_interp_new", c_int, P, c_char_p, POINTER(P), pDiag)
interp_free = _fn("mil_interp_free", None, P)
interp_fork = _fn("mil_interp_fork", c_int, P, POINTER(P), pDiag)
interp_clear_inputs = _fn("mil_interp_clear_inputs", None, P)
interp_n_inputs = _fn("mil_interp_n_inputs", c_int32, P)
interp_input_name = _fn("mil_interp_input_name", c_char_p, P, c_int32)
interp_input_type = _fn("mil_interp_input_type", POINTER(Type), P, c_int32)
interp_n_outputs = _fn("mil_interp_n_outputs", c_int32, P)
interp_output_name = _fn("mil_interp_output_name", c_char_p, P, c_int32)
interp_output_at = _fn("mil_interp_output_at", POINTER(Tensor), P, c_int32)
interp_set_input = _fn("mil_interp_set_input", c_int, P, c_char_p, POINTER(Tensor), pDiag)
interp_set_seed = _fn("mil_interp_set_seed", None, P, c_uint64)
interp_run = _fn("mil_interp_run", c_int, P, P, pDiag)
interp_state_new = _fn("mil_interp_state_new", c_int, P, POINTER(P), pDiag)
interp_state_free = _fn("mil_interp_state_free", None, P)

pass_known_count = _fn("mil_pass_known_count", c_size_t)
pass_known_at = _fn("mil_pass_known_at", POINTER(PassDef), c_size_t)
pass_is_implemented = _fn("mil_pass_is_implemented", c_bool, c_char_p)
pass_opt_type_name = _fn("mil_pass_opt_type_name", c_char_p, c_int)
pipeline_name_count = _fn("mil_pipeline_name_count", c_size_t)
pipeline_name_at = _fn("mil_pipeline_name_at", c_char_p, c_size_t)
pipeline_new = _fn("mil_pipeline_new", c_int, c_char_p, POINTER(P), pDiag)
pipeline_new_from_list = _fn("mil_pipeline_new_from_list", c_int, c_char_p, c_int32, POINTER(c_char_p), POINTER(P),
                             pDiag)
pipeline_free = _fn("mil_pipeline_free", None, P)
pipeline_n_passes = _fn("mil_pipeline_n_passes", c_int32, P)
pipeline_pass_at = _fn("mil_pipeline_pass_at", c_char_p, P, c_int32)
pipeline_remove_pass = _fn("mil_pipeline_remove_pass", c_int32, P, c_char_p)
pipeline_set_options_json = _fn("mil_pipeline_set_options_json", c_int, P, c_char_p, c_char_p, pDiag)
pipeline_run = _fn("mil_pipeline_run", c_int, P, P, c_void_p, POINTER(PipelineReport), pDiag)
pipeline_report_free = _fn("mil_pipeline_report_free", None, POINTER(PipelineReport))



class OnnxInputShape(Structure):  # mil_onnx_input_shape (onnx.h)
    _fields_ = [("name", c_char_p), ("rank", c_int32), ("dims", POINTER(c_int64))]


class OnnxInputValue(Structure):  # mil_onnx_input_value (onnx.h)
    _fields_ = [("name", c_char_p), ("value", Tensor)]


class OnnxOptions(Structure):  # mil_onnx_options (onnx.h)
    _fields_ = [("target", c_int), ("n_input_shapes", c_int32), ("input_shapes", POINTER(OnnxInputShape)),
                ("n_input_values", c_int32), ("input_values", POINTER(OnnxInputValue)), ("nms_max_boxes", c_int64),
                ("fp16_range_check", c_bool)]


class ConvertOptions(Structure):  # mil_convert_options (convert.h)
    _fields_ = [("target", c_int), ("spec_version", c_int), ("fp32", c_bool), ("pipeline", c_char_p),
                ("no_pipeline", c_bool), ("n_input_shapes", c_int32), ("input_shapes", POINTER(OnnxInputShape)),
                ("interface", c_void_p), ("nms_max_boxes", c_int64), ("output_path", c_char_p),
                ("inline_weights", c_bool), ("n_input_values", c_int32),
                ("input_values", POINTER(OnnxInputValue)), ("n_samples", c_int32),
                ("samples", POINTER(OnnxInputValue)), ("sample_tolerance", c_double)]


# The model interface (input_types.h): ct.convert's inputs, outputs, classifier_config.
class RangeDimC(Structure):  # mil_range_dim
    _fields_ = [("lower_bound", c_int64), ("upper_bound", c_int64), ("default_value", c_int64)]


class ShapeSpec(Structure):  # mil_shape_spec
    _fields_ = [("rank", c_int32), ("dims", POINTER(c_int64)), ("ranges", POINTER(RangeDimC)),
                ("n_enumerated", c_int32), ("enumerated", POINTER(c_int64)), ("default_shape", POINTER(c_int64))]


class InputTypeC(Structure):  # mil_input_type
    _fields_ = [("name", c_char_p), ("is_image", c_bool), ("has_shape", c_bool), ("shape", ShapeSpec),
                ("dtype", c_int), ("scale", c_float), ("bias", c_float * 3), ("color_layout", c_int)]


class OutputTypeC(Structure):  # mil_output_type
    _fields_ = [("name", c_char_p), ("dtype", c_int)]


class ClassifierC(Structure):  # mil_classifier_config
    _fields_ = [("n_labels", c_int32), ("labels", POINTER(c_char_p)), ("int_labels", POINTER(c_int64)),
                ("predicted_feature_name", c_char_p), ("predicted_probabilities_output", c_char_p)]


class InterfaceC(Structure):  # mil_model_interface
    _fields_ = [("n_inputs", c_int32), ("inputs", POINTER(InputTypeC)), ("n_outputs", c_int32),
                ("outputs", POINTER(OutputTypeC)), ("classifier", POINTER(ClassifierC)),
                ("author", c_char_p), ("license", c_char_p), ("short_description", c_char_p), ("version", c_char_p),
                ("n_user_defined", c_int32), ("user_keys", POINTER(c_char_p)), ("user_values", POINTER(c_char_p)),
                ("n_descriptions", c_int32), ("description_names", POINTER(c_char_p)),
                ("description_texts", POINTER(c_char_p))]


DT_FP16, DT_FP32, DT_INT32 = 10, 11, 23  # mil_dtype
COLOR_LAYOUTS = {"RGB": 0, "BGR": 1, "G": 2, "G_FLOAT16": 3}  # mil_color_layout


class InterpDict(Structure):  # mil_interp_dict (interp.h): a classifier's probabilities
    _fields_ = [("key_dtype", c_int), ("n", c_int64), ("str_keys", POINTER(c_char_p)),
                ("int_keys", POINTER(c_int64)), ("values", POINTER(c_double))]


interp_output_dict = _fn("mil_interp_output_dict", POINTER(InterpDict), P, c_int32)
interp_output_is_label = _fn("mil_interp_output_is_label", c_bool, P, c_int32)

# Metadata fields and image inputs (model.h, image.h).
model_set_info = _fn("mil_model_set_info", c_int, P, c_char_p, c_char_p, pDiag)
model_image_channels = _fn("mil_model_image_channels", c_int, P, c_char_p, c_char_p)
model_image_planes = _fn("mil_model_image_planes", c_int, P, c_char_p, c_char_p, c_void_p, c_int64, c_int64, c_int,
                         c_void_p, pDiag)

# The ONNX importer (None in a library built without it).
onnx_import = _fn("mil_onnx_import", c_int, c_char_p, POINTER(OnnxOptions), POINTER(P), pDiag, optional=True)
# Conversion (convert.h): import -> model interface -> pipeline -> save.
convert = _fn("mil_convert", c_int, c_char_p, POINTER(ConvertOptions), POINTER(P), pDiag, optional=True)
convert_onnx_buffer = _fn("mil_convert_onnx_buffer", c_int, c_char_p, c_size_t, c_char_p, c_char_p,
                          POINTER(ConvertOptions), POINTER(P), pDiag, optional=True)
# opset versions of the deployment targets (ops.h MIL_IOS15..)
TARGETS = {"iOS15": 6, "iOS16": 7, "iOS17": 8, "iOS18": 9}


# ---------------------------------------------------------------- model utilities (mil/utils.h)

class MergeFunction(Structure):  # mil_merge_function (utils.h)
    _fields_ = [("model_path", c_char_p), ("src_function", c_char_p), ("target_function", c_char_p)]


utils_save_multifunction = _fn("mil_utils_save_multifunction", c_int, POINTER(MergeFunction), c_int32, c_char_p,
                               c_char_p, pDiag)
utils_rename_feature = _fn("mil_utils_rename_feature", c_int, P, c_char_p, c_char_p, c_bool, c_bool, pDiag)
utils_change_io_type = _fn("mil_utils_change_io_type", c_int, P, c_int, c_int, POINTER(c_char_p), c_int32,
                           POINTER(c_char_p), c_int32, POINTER(c_char_p), c_int32, pDiag)
utils_set_feature_description = _fn("mil_utils_set_feature_description", c_int, P, c_char_p, c_char_p, c_char_p,
                                    pDiag)
utils_set_model_metadata = _fn("mil_utils_set_model_metadata", c_int, P, c_char_p, c_char_p, pDiag)
utils_materialize = _fn("mil_utils_materialize", c_int, P, c_char_p, c_char_p, c_char_p, pDiag)


def str_array(items):
    """(array, count) of c_char_p for a list of str, or (None, 0) for None."""
    if items is None:
        return None, 0
    arr = (c_char_p * max(1, len(items)))(*[s.encode() for s in items])
    return arr, len(items)


class BisectInfo(Structure):  # mil_utils_bisect_info (utils.h)
    _fields_ = [("op_index", c_int32), ("op_name", c_char_p), ("op_type", c_char_p),
                ("first_chunk_weight_bytes", c_int64), ("total_weight_bytes", c_int64), ("n_boundary", c_int32)]


utils_bisect = _fn("mil_utils_bisect", c_int, P, c_char_p, c_char_p, POINTER(BisectInfo), pDiag)
utils_make_pipeline = _fn("mil_utils_make_pipeline", c_int, POINTER(c_char_p), c_int32, c_char_p, pDiag)
utils_is_pipeline = _fn("mil_utils_is_pipeline", c_bool, c_char_p)
utils_pipeline_load = _fn("mil_utils_pipeline_load", c_int, c_char_p, POINTER(POINTER(P)), POINTER(c_int32), pDiag)
utils_pipeline_free = _fn("mil_utils_pipeline_free", None, POINTER(P), c_int32)
utils_randomize_weights = _fn("mil_utils_randomize_weights", c_int, P, c_uint64, POINTER(c_int64), pDiag)
# Compression (compress.h): configs, activation calibration, model spec version.
P_ = c_void_p
compress_config_from_json = _fn("mil_compress_config_from_json", c_int, c_char_p, c_size_t, c_char_p, c_int,
                                POINTER(P_), pDiag)
compress_config_from_yaml = _fn("mil_compress_config_from_yaml", c_int, c_char_p, c_size_t, c_char_p, c_int,
                                POINTER(P_), pDiag)
compress_config_to_json = _fn("mil_compress_config_to_json", c_void_p, P_)
compress_config_free = _fn("mil_compress_config_free", None, P_)
import ctypes as _ct
_libc = _ct.CDLL(None)
libc_free = _libc.free  # the malloc'ed strings of mil_compress_config_to_json / mil_calibrator_stats_json
libc_free.restype = None
libc_free.argtypes = [c_void_p]


def bytes_at(ptr, n):
    """A copy of n bytes at address ptr."""
    return _ct.string_at(ptr, n)


def take_string(ptr):
    """The text of a malloc'ed C string, which is freed."""
    if not ptr:
        return None
    try:
        return _ct.string_at(ptr).decode("utf-8")
    finally:
        libc_free(ptr)
calibrator_new = _fn("mil_calibrator_new", c_int, P_, POINTER(P_), pDiag)
calibrator_free = _fn("mil_calibrator_free", None, P_)
calibrator_add_sample = _fn("mil_calibrator_add_sample", c_int, P_, c_int32, POINTER(c_char_p), POINTER(Tensor), pDiag)
calibrator_stats_json = _fn("mil_calibrator_stats_json", c_void_p, P_)
pipeline_insert = _fn("mil_pipeline_insert", c_int, P_, c_int32, c_char_p, pDiag)
model_set_spec_version = _fn("mil_model_set_spec_version", c_int, P_, c_int, pDiag)


# Weights metadata (compress.h mil_weights_metadata) and the few IR fields
# get_weights_metadata reads (ir.h: mil_op, mil_input, mil_arg, mil_use,
# mil_var; the leading fields only, in declaration order).
class Var(Structure):
    pass


class Op(Structure):
    pass


class Use(Structure):
    _fields_ = [("var", POINTER(Var)), ("prev_use", c_void_p), ("next_use", c_void_p), ("op", POINTER(Op)),
                ("block", c_void_p)]


class Arg(Structure):
    _fields_ = [("use", Use), ("value", c_void_p)]


class Input(Structure):
    _fields_ = [("name", c_char_p), ("n_args", c_int32), ("args", POINTER(Arg)), ("is_tuple", c_bool)]


Var._fields_ = [("name", c_char_p), ("type", POINTER(Type)), ("op", POINTER(Op)), ("out_index", c_int32),
                ("input_of", c_void_p), ("func_input_of", c_void_p), ("uses", c_void_p), ("n_uses", c_int32),
                ("val", c_void_p)]
Op._fields_ = [("type", c_char_p), ("next", c_void_p), ("prev", c_void_p), ("block", c_void_p),
               ("n_blocks", c_int32), ("n_outputs", c_int32), ("blocks", c_void_p), ("outputs", POINTER(POINTER(Var))),
               ("name", c_char_p), ("n_inputs", c_int32), ("cap_inputs", c_int32), ("inputs", POINTER(Input))]


class WeightMeta(Structure):  # mil_weight_meta (compress.h)
    _fields_ = [("name", c_char_p), ("type", POINTER(Type)), ("size", c_int64), ("sparsity", c_double),
                ("unique_values", c_int64), ("n_children", c_int32), ("children", POINTER(POINTER(Op)))]


weights_metadata = _fn("mil_weights_metadata", c_int, P, c_int64, c_void_p, POINTER(POINTER(WeightMeta)),
                       POINTER(c_int32), pDiag)
weight_meta_free = _fn("mil_weight_meta_free", None, POINTER(WeightMeta), c_int32)
value_data = _fn("mil_value_data", c_void_p, c_void_p)
