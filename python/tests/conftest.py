"""Shared fixtures: the corpus (../shared/corpus, or MIL_SHARED_DIR) and the
mil CLI (MIL_CLI, set by CTest) for comparisons with the command line."""
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("MIL_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
MODELS = os.path.join(SHARED, "corpus", "models")
EXAMPLE = os.path.join(ROOT, "examples", "classifier.mil")


def corpus_models():
    if not os.path.isdir(MODELS):
        return []
    return sorted(d for d in os.listdir(MODELS) if os.path.isdir(os.path.join(MODELS, d)))


@pytest.fixture
def models_dir():
    if not os.path.isdir(MODELS):
        pytest.skip("corpus not found (%s)" % MODELS)
    return MODELS


@pytest.fixture
def mil_cli():
    cli = os.environ.get("MIL_CLI") or shutil.which("mil")
    if not cli or not os.path.exists(cli):
        cli = os.path.join(ROOT, "build", "mil")
    if not os.path.exists(cli):
        pytest.skip("mil CLI not built")
    return cli
