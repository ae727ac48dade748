"""pdem: MPI-parallel Discrete Element Method engine (Python + Cython/OpenMP kernels)."""
from .domain import Domain
from .errors import InputError, SimulationError
from .materials import Material
from .simulation import Simulation
from .threads import openmp_available, thread_count

__version__ = "0.1.0"
__all__ = ["Domain", "Simulation", "Material", "InputError", "SimulationError",
           "openmp_available", "thread_count"]
