"""Errors pdem raises for user mistakes and for runs that go numerically wrong."""


class InputError(ValueError):
    """Bad user input: the message names the parameter and the offending value."""


class SimulationError(RuntimeError):
    """The run cannot continue (non-finite state, exploding overlap, lost particle):
    the message names the step and the particle id."""
