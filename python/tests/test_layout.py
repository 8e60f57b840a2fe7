"""The package laid out like coremltools: libmil.models.MLModel(path) loads
(as coremltools.models.MLModel(path) does), the target / precision /
colorlayout enumerations carry coremltools' names and values, and the
subpackages import."""
import os

import pytest

import libmil
from conftest import EXAMPLE, SHARED


def test_mlmodel_path_loads_like_load():
    a = libmil.models.MLModel(EXAMPLE)
    b = libmil.load(EXAMPLE)
    assert isinstance(a, libmil.Model) and libmil.MLModel is libmil.models.MLModel
    assert a.path == EXAMPLE
    assert a.functions == b.functions and a.spec_version == b.spec_version
    assert list(a.input_description) == list(b.input_description)
    assert a.to_mil_text() == b.to_mil_text()


def test_model_path_loads():
    m = libmil.Model(EXAMPLE)
    assert m.functions == ["main"]
    with pytest.raises(libmil.MILIOError):
        libmil.models.MLModel(os.path.join(os.path.dirname(EXAMPLE), "no_such_model.mlpackage"))


def test_enumerations_have_coremltools_values():
    # coremltools: ct.target.iOS15 == 6 (the specification version) .. iOS18 == 9
    assert [int(libmil.target.iOS15), int(libmil.target.iOS18), int(libmil.target.macOS13)] == [6, 9, 7]
    assert libmil.precision.FLOAT16.value == "float16" and libmil.precision.FLOAT32.value == "float32"
    assert [c.value for c in libmil.colorlayout] == ["RGB", "BGR", "G", "G_FLOAT16"]


def test_subpackages_import():
    import libmil.models.utils
    import libmil.optimize.coreml.experimental  # noqa: F401
    assert libmil.utils is libmil.models.utils
    assert libmil.optimize.coreml is not None


def test_convert_takes_target_and_precision_members():
    path = os.path.join(SHARED, "corpus", "onnx", "squeezenet1_1", "opset13_external", "model.onnx")
    if not os.path.exists(path) or libmil._capi.onnx_import is None:
        pytest.skip("ONNX corpus or importer absent")
    a = libmil.convert(path, minimum_deployment_target=libmil.target.iOS16, compute_precision=libmil.precision.FLOAT32,
                       pass_pipeline=None)
    b = libmil.convert(path, minimum_deployment_target="iOS16", compute_precision="fp32", pass_pipeline=None)
    assert a.spec_version == 7  # iOS16's specification version
    assert a.to_mil_text() == b.to_mil_text()
