"""Checkpoint on a signal: what Slurm sends before the time limit with --signal; and
Ctrl-C at the end of a step.

The handlers only record the signal; Simulation.step tells every rank in its one
per-step reduction, and all ranks checkpoint at the end of the same step and raise
CheckpointExit (a SystemExit with code 0), or end the run there with
KeyboardInterrupt."""
import signal
import sys
import threading

# signal's C module: getsignal and signal without the enum wrapping that makes signal's
# cost ~4 us a call (each run() sets SIGINT's handler twice)
import _signal


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


class DeferredInterrupt:
    """Ctrl-C (SIGINT) during Simulation.run ends the run at the end of the step it
    lands in, on every rank alike (through the step's reduction): Python would raise
    KeyboardInterrupt wherever it is, e.g. between a step's drift and its kick or inside
    a rebuild, and a run continued from there would silently leave its trajectory. A
    second Ctrl-C before that interrupts at once. Only where Python's own handler is in
    place, in the main thread (else nothing changes)."""

    def __init__(self):
        self.pending = False
        self._saved = None

    def __enter__(self):
        if (threading.current_thread() is threading.main_thread()
                and _signal.getsignal(signal.SIGINT) is _signal.default_int_handler):
            self._saved = _signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, exc_type, *exc):
        if self._saved is not None:
            _signal.signal(signal.SIGINT, self._saved)
            self._saved = None
        pending, self.pending = self.pending, False
        if pending and exc_type is None:     # came after the last step's reduction
            raise KeyboardInterrupt("pdem: interrupted after the run's last step, which is "
                                    "complete")

    def _on_sigint(self, signum, frame):
        if self.pending:
            raise KeyboardInterrupt
        self.pending = True
