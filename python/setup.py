"""libmil's Python package. `make python` builds libmil.so and copies it into
libmil/_lib/ first; `pip install ./python` then installs the package with
that library inside it (no compiler, no network)."""
import glob
import os

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
libs = [os.path.relpath(p, os.path.join(here, "libmil")) for p in glob.glob(os.path.join(here, "libmil", "_lib", "libmil.so*"))]

setup(
    name="libmil",
    version="0.1.0",
    description="Load, validate, optimize, run and save Core ML ML Program models natively (bindings of libmil)",
    packages=["libmil", "libmil.models", "libmil.optimize", "libmil.optimize.coreml",
              "libmil.optimize.coreml.experimental"],
    package_data={"libmil": libs},
    python_requires=">=3.8",
    install_requires=["numpy"],
    zip_safe=False,
)
