#!/usr/bin/env bash
# Run pdem's demo (installs what is missing first; idempotent): 10,000+ spheres
# poured into a box, on 2 MPI ranks (PDEM_RANKS=N for another count). Writes
# results/demo/summary.txt and results/demo/final_state.png.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
mpirun -n "${PDEM_RANKS:-2}" python -m mpi4py examples/pour_box.py --out results/demo "$@"
