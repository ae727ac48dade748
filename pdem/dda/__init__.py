"""Particle DDA (seed 002): the implicit, matrix-free DDA time-stepping scheme of
pdem.Simulation (scheme.DDA; kernels in pyx/dda.pyx)."""
from .scheme import DDA, DDAWarning

__all__ = ["DDA", "DDAWarning"]
