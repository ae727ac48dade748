#!/usr/bin/env bash
# Idempotent set-up for pdem on Debian 12 (root or sudo): system MPI + parallel
# HDF5, a virtual environment in .venv with h5py built against parallel HDF5,
# and pdem's Cython kernels built in place. Each part is skipped when done.
# Sourced by scripts/demo.sh and scripts/test.sh; runnable on its own.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
log() { echo "[pdem setup] $*"; }

# 1. Debian packages (Open MPI, parallel HDF5, a compiler, venv support, and the
#    shared libraries the PyPI gmsh wheel links against: hourglass geometry).
DEB_PKGS="openmpi-bin libopenmpi-dev libhdf5-openmpi-dev pkg-config gcc g++ python3-dev python3-venv
          libglu1-mesa libgl1 libopengl0 libxrender1 libxcursor1 libxinerama1 libxft2"
missing=""
for p in $DEB_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    log "installing Debian packages:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

# 2. Virtual environment with the Python dependencies.
if [ ! -x "$PY" ]; then
    log "creating virtual environment $VENV"
    python3 -m venv "$VENV"
fi
if ! "$PY" -c "import numpy, scipy, Cython, mpi4py, pytest, pytest_mpi, pytest_timeout, xdist, matplotlib, gmsh, trimesh, fcl" 2>/dev/null; then
    log "installing Python packages"
    "$PY" -m pip install -q --upgrade pip setuptools wheel
    # scipy: convex hulls of polyhedra, and test references
    "$PY" -m pip install -q "numpy>=1.24" scipy "cython>=3.0" mpi4py pytest pytest-mpi pytest-timeout pytest-xdist matplotlib gmsh
    # tests only (independent references for polyhedra, docs/polyhedra.md)
    "$PY" -m pip install -q trimesh python-fcl
fi
# h5py against parallel HDF5 (about a minute, once; cached in .venv). CFLAGS=-g0: no
# debug info, which took two thirds of its compile time.
if ! "$PY" -c "import h5py, sys; sys.exit(0 if h5py.get_config().mpi else 1)" 2>/dev/null; then
    log "building h5py against parallel HDF5 (about a minute, once)"
    "$PY" -m pip install -q pkgconfig
    CFLAGS=-g0 CC=mpicc HDF5_MPI=ON HDF5_DIR=/usr/lib/x86_64-linux-gnu/hdf5/openmpi \
        "$PY" -m pip install -q --no-binary=h5py --no-build-isolation --force-reinstall --no-deps h5py
fi

# 3. pdem's kernels, built in place (incremental, one compiler per core), and pdem
#    importable from the venv.
log "building pdem kernels"
(cd "$ROOT" && "$PY" setup.py -q build_ext --inplace -j "$(nproc)" 2>&1 | grep -vE "^(running|copying|creating)" || true)
"$PY" -c "import pdem._kernels.cells" || { log "pdem build failed"; exit 1; }
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT" > "$SITE/pdem-inplace.pth"

# Open MPI refuses root unless told; oversubscription lets tests use 4 ranks on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export PATH="$VENV/bin:$PATH"
log "ready: $("$PY" -c 'import h5py, mpi4py, numpy; print("numpy", numpy.__version__, "mpi4py", mpi4py.__version__, "h5py", h5py.__version__, "mpi", h5py.get_config().mpi)')"
