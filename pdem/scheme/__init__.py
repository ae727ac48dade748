"""Time-stepping schemes of pdem.Simulation: one registered class each (the explicit
force laws with leap-frog, pdem.NSCD, ...), restored from checkpoints by name."""
from .base import SCHEMES, Scheme, register, from_description
from .explicit import Explicit

__all__ = ["SCHEMES", "Scheme", "register", "from_description", "Explicit"]
