"""Non-smooth contact dynamics (seed 003): the NSCD time-stepping scheme of
pdem.Simulation (scheme), its contact solve (solve, pyx/nscd.pyx), seed 003's course
API over it (problem.GrainProblem), and the hourglass scene (hourglass_geometry,
msh_segments)."""
from .problem import ConvergenceWarning, GrainProblem

__all__ = ["GrainProblem", "ConvergenceWarning"]
