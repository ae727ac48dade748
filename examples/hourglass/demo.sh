#!/usr/bin/env bash
# Hourglass demo (seed 003, non-smooth contact dynamics): build the geometry with
# Gmsh, fill the upper bulb with polydisperse disks, discharge on 2 MPI ranks
# (PDEM_RANKS=N for another count; 1 rank when pdem.nscd.parallel is missing),
# then draw the animation, chosen frames and the flow-rate plot. Extra arguments go
# to run.py (e.g. --grains 600). Writes results/hourglass/ and lists the files.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
OUT="${PDEM_HOURGLASS_OUT:-results/hourglass}"
mkdir -p "$OUT"
RANKS="${PDEM_RANKS:-2}"
if [ "$RANKS" -gt 1 ] && ! python -c "import pdem.nscd.parallel" 2>/dev/null; then
    echo "[hourglass] pdem.nscd.parallel is not available: running on 1 rank"
    RANKS=1
fi
python examples/hourglass/geometry.py -o "$OUT/hourglass.msh"
mpirun -n "$RANKS" python -m mpi4py examples/hourglass/run.py \
    --msh "$OUT/hourglass.msh" -o "$OUT/hourglass.h5" "$@"
python examples/hourglass/animate.py "$OUT/hourglass.h5"
echo "[hourglass] files in $(cd "$OUT" && pwd):"
ls -l "$OUT"
