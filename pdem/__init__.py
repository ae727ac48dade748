"""pdem: MPI-parallel Discrete Element Method engine (Python + Cython/OpenMP kernels)."""
import os

# Started without mpirun, Open MPI's MPI_Init (at mpi4py's import) makes this process a
# singleton that first starts a helper daemon (orted): 0.1-2.4 s on the project's VM.
# pdem never spawns or connects to other MPI jobs, so it asks for an isolated singleton
# (no daemon); a user's setting is kept, and launchers (mpirun, srun) are not affected.
os.environ.setdefault("OMPI_MCA_ess_singleton_isolated", "1")

from .contact.mesh import Mesh
from .domain import Domain
from .errors import InputError, SimulationError, ThreadsWarning, TimeStepWarning
from .materials import Material
from .motion import Ramp, Servo, Sine, Table
from . import sizes
from .nscd.scheme import NSCD
from .dda.scheme import DDA, DDAWarning
from .packing import Packing, pack
from .regions import (Box, Cone, Cylinder, FunctionRegion, HalfSpace, MeshRegion, Region, Sphere,
                      Torus, relax, relax_step)
from .scheme import Explicit
from .simulation import CheckpointExit, Simulation
from .threads import openmp_available, thread_count

__version__ = "0.1.0"
__all__ = ["Domain", "Mesh", "Simulation", "Material", "Explicit", "NSCD", "DDA", "DDAWarning", "InputError", "SimulationError", "ThreadsWarning", "TimeStepWarning",
           "Sine", "Ramp", "Table", "Servo", "sizes",
           "CheckpointExit", "restart", "openmp_available", "thread_count",
           "pack", "Packing", "Region", "HalfSpace", "Sphere", "Box", "Cylinder", "Cone", "Torus",
           "FunctionRegion", "MeshRegion", "relax", "relax_step"]


def restart(path, comm=None, threads=None, dims=None):
    """Continue a run from the checkpoint `path` (Simulation.checkpoint) on the ranks
    of `comm` (default MPI.COMM_WORLD, any number), bit for bit (collective)."""
    from .io.checkpoint import read
    return read(path, Simulation, comm=comm, threads=threads, dims=dims)
