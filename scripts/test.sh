#!/usr/bin/env bash
# Run pdem's whole test suite (installs what is missing first; idempotent).
#   bash scripts/test.sh            all tests, validations included
#   bash scripts/test.sh -k hertz   extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
python -m pytest -q -p no:cacheprovider tests "$@"
