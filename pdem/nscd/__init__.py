"""Non-smooth contact dynamics (seed 003): grains with potential contacts solved by
non-linear Gauss-Seidel or Jacobi iterations (pdem.nscd.problem), boundary segments
and disks, and the hourglass scene (hourglass_geometry, msh_segments)."""
from .problem import ConvergenceWarning, GrainProblem

__all__ = ["GrainProblem", "ConvergenceWarning"]
