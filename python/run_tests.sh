#!/bin/sh
# Runs the Python package's pytest suite: run_tests.sh PYTHON PACKAGE_DIR.
# Exit 77 (CTest's skip code) when PYTHON lacks numpy or pytest.
py="$1"; dir="$2"
if ! "$py" -c "import numpy, pytest" 2>/dev/null; then
  echo "skipped: $py has no numpy/pytest (apt-get install python3-numpy python3-pytest)"
  exit 77
fi
cd "$dir" && exec "$py" -m pytest -q -p no:cacheprovider tests
