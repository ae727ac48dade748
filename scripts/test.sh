#!/usr/bin/env bash
# Run pdem's whole test suite (installs what is missing first; idempotent):
# the serial tests, then the MPI tests on 1, 2, 3 and 4 ranks (oversubscribed
# on small machines), each MPI run under a time limit.
#   bash scripts/test.sh            everything, validations included
#   bash scripts/test.sh -k hertz   extra arguments go to every pytest run
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/slurm.sh"    # a single-node Slurm for tests/slurm (jobs/*.slurm)
cd "$ROOT"
python -m pytest -q -p no:cacheprovider tests "$@"
# more ranks than cores: let idle ranks and OpenMP threads yield the CPU
export OMPI_MCA_mpi_yield_when_idle=1 OMP_WAIT_POLICY=passive
for n in 1 2 3 4; do
    echo "== MPI tests on $n rank(s)"
    timeout 1500 mpirun -n "$n" python -m pytest -q -p no:cacheprovider --with-mpi tests/mpi "$@"
done
