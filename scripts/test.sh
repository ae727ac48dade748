#!/usr/bin/env bash
# Run pdem's whole test suite (installs what is missing first; idempotent):
# the serial tests, one pytest-xdist worker per core (each test file on one
# worker, so that a module's shared set-up runs once), then the MPI tests on 1,
# 2, 3 and 4 ranks (oversubscribed on small machines), each under a time limit.
#   bash scripts/test.sh            everything, validations included
#   bash scripts/test.sh -k hertz   extra arguments go to every pytest run
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/slurm.sh"    # a single-node Slurm for tests/slurm (jobs/*.slurm)
cd "$ROOT"
# more ranks (and test workers) than cores: let idle ranks and OpenMP threads yield
export OMPI_MCA_mpi_yield_when_idle=1 OMP_WAIT_POLICY=passive
python -m pytest -q -p no:cacheprovider -n "$(nproc)" --dist loadfile tests "$@"
for n in 1 2 3 4; do
    echo "== MPI tests on $n rank(s)"
    timeout 1500 mpirun -n "$n" python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi "$@"
done
