"""Errors pdem raises for user mistakes and for runs that go numerically wrong."""


class InputError(ValueError):
    """Bad user input: the message names the parameter and the offending value."""


class SimulationError(RuntimeError):
    """The run cannot continue (non-finite state, exploding overlap, lost particle):
    the message names the step and the particle id."""


class TimeStepWarning(RuntimeWarning):
    """dt is accepted (below the critical step) but too large for accurate contacts:
    too few steps per contact duration."""


class ThreadsWarning(RuntimeWarning):
    """More OpenMP threads per rank than cores the process may run on: they take turns
    (mpirun binds each rank to one core unless told otherwise)."""
