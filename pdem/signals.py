"""Checkpoint on a signal: what Slurm sends before the time limit with --signal.

The handler only records the signal; Simulation.step tells every rank in its one
per-step reduction, and all ranks checkpoint at the end of the same step and raise
CheckpointExit (a SystemExit with code 0)."""
import signal
import sys


class CheckpointExit(SystemExit):
    """Raised on every rank after a signal-triggered checkpoint (exit code 0)."""

    def __init__(self, message):
        super().__init__(0)
        self.message = message

    def __str__(self):
        return self.message


class SignalCheckpoint:
    def __init__(self):
        self.received = 0           # signal number received, 0: none
        self.path = None

    def install(self, path, signals=(signal.SIGTERM, signal.SIGUSR1)):
        self.path = path
        for sig in signals:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, frame):
        self.received = signum

    def checkpoint_and_exit(self, sim, signum):
        sim.checkpoint(self.path)
        message = ("pdem: %s received: checkpoint of step %d (t = %.9g) written to %s; "
                   "continue with pdem.restart(%r)" % (signal.Signals(signum).name,
                                                       sim.step_count, sim.time, self.path,
                                                       self.path))
        if sim.rank == 0:
            print(message, file=sys.stderr, flush=True)
        raise CheckpointExit(message)
