"""The enumerations libmil.target, libmil.precision and libmil.colorlayout,
with coremltools' member names and values (ct.target, ct.precision,
ct.colorlayout), limited to what libmil implements: ML Programs, so the
deployment targets from iOS15 (specification version 6) on."""
from enum import Enum, IntEnum


class target(IntEnum):
    """Minimum deployment targets (coremltools.target): the value is the
    Core ML specification version. libmil.convert(minimum_deployment_target=)
    takes a member or its iOS name ("iOS15" .. "iOS18")."""
    iOS15 = 6
    iOS16 = 7
    iOS17 = 8
    iOS18 = 9

    macOS12 = 6
    macOS13 = 7
    macOS14 = 8
    macOS15 = 9

    watchOS8 = 6
    watchOS9 = 7
    watchOS10 = 8
    watchOS11 = 9

    tvOS15 = 6
    tvOS16 = 7
    tvOS17 = 8
    tvOS18 = 9


class precision(Enum):
    """Compute precision of a conversion (coremltools.precision):
    FLOAT16 inserts fp16 casts (add_fp16_cast), FLOAT32 keeps fp32."""
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class colorlayout(Enum):
    """Color layout of an image feature (coremltools.colorlayout; the
    ImageFeatureType.ColorSpace of a model description, model.h's
    mil_color_space)."""
    RGB = "RGB"
    BGR = "BGR"
    GRAYSCALE = "G"
    GRAYSCALE_FLOAT16 = "G_FLOAT16"
