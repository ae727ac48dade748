#!/usr/bin/env bash
# pdem's demo (installs what is missing first; idempotent): the hourglass of seed 003
# with non-smooth contact dynamics. Builds the geometry with Gmsh, fills the upper
# bulb with polydisperse glass disks (Coulomb friction 0.5, as sand: a constant flow
# rate), discharges on 2 MPI ranks (PDEM_RANKS=N for another
# count), then renders the animation, chosen frames and the flow-rate plot from the
# HDF5 output. Extra arguments go to examples/hourglass/run.py (e.g. --grains 600).
# Writes results/hourglass/ (PDEM_HOURGLASS_OUT for another folder) and lists it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
OUT="${PDEM_HOURGLASS_OUT:-results/hourglass}"
mkdir -p "$OUT"
python examples/hourglass/geometry.py -o "$OUT/hourglass.msh"
mpirun -n "${PDEM_RANKS:-2}" python -m mpi4py examples/hourglass/run.py \
    --msh "$OUT/hourglass.msh" -o "$OUT/hourglass.h5" --friction 0.5 "$@"
python examples/hourglass/animate.py "$OUT/hourglass.h5"
echo "[pdem demo] files in $(cd "$OUT" && pwd):"
ls -l "$OUT"
