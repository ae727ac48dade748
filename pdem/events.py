"""Run-time events: callbacks at a time, every N steps, or when a condition holds,
checked after every step of `sim.step()` (so `sim.run`, `ResultFile.run` and the
command line all see them). A callback runs on every rank (SPMD) and may change the
scene (move a wall, add particles, change a velocity) or call `sim.stop()` to end the
current run after this step.

A condition is evaluated on every rank and the answers are combined (it holds when it
holds on any rank), so a condition on a rank's own particles is safe; a collective
condition (`sim.energy()`, ...) is fine too, as every rank evaluates it.

State across restarts: `at` and `every` events follow from the time and the step
count. A `when(..., once=True)` event that has fired is recorded by name in
checkpoints, and is not fired again after `pdem.restart` when registered under the
same name (default: the callback's name)."""
import sys
import time

from . import validate
from .errors import InputError


class Event:
    def __init__(self, name, callback, due, once):
        self.name, self.callback, self.due, self.once = name, callback, due, once


class Events:
    def __init__(self, sim):
        self.sim = sim
        self.pending = []
        self.fired = set()          # names of once-events that have fired (checkpointed)

    def __bool__(self):
        return bool(self.pending)

    @staticmethod
    def _name(name, callback):
        if not callable(callback):
            raise InputError("event: callback must be callable, got %r" % (callback,))
        name = name if name is not None else getattr(callback, "__name__", "event")
        if not isinstance(name, str) or not name:
            raise InputError("event: name must be a non-empty string, got %r" % (name,))
        return name

    def _add(self, name, callback, due, once):
        name = self._name(name, callback)
        if any(e.name == name for e in self.pending):
            raise InputError("event: name %r is already registered; give name=" % name)
        if once and name in self.fired:
            return name             # fired before the checkpoint this run restarted from
        self.pending.append(Event(name, callback, due, once))
        return name

    def at(self, time, callback, name=None):
        """Call callback(sim) once, after the first step whose time reaches time - dt/2
        (as run(until=time) ends). A time already reached when registered (a restart
        later than it) never fires."""
        t = validate.number("time", time)
        sim = self.sim

        def reached():
            return sim.time >= t - 0.5 * sim.dt
        if reached():
            return self._name(name, callback)
        return self._add(name, callback, reached, once=True)

    def every(self, steps, callback, name=None):
        """Call callback(sim) after every step whose step count is a multiple of steps."""
        steps = validate.integer("steps", steps)
        sim = self.sim
        return self._add(name, callback, lambda: sim.step_count % steps == 0, once=False)

    def when(self, condition, callback, name=None, once=True, check_every=1):
        """Call callback(sim) after a step (every check_every steps) where condition(sim)
        holds on any rank; once=True: the first time only (recorded in checkpoints)."""
        if not callable(condition):
            raise InputError("when: condition must be callable, got %r" % (condition,))
        check_every = validate.integer("check_every", check_every)
        sim = self.sim

        def due():
            if sim.step_count % check_every:
                return False
            return sim.collective.max(float(bool(condition(sim)))) > 0
        return self._add(name, callback, due, once)

    def cancel(self, name):
        """Remove the pending event `name` (on every rank)."""
        self.pending = [e for e in self.pending if e.name != name]

    def after_step(self):
        for e in list(self.pending):
            if e.due():
                if e.once:
                    self.pending.remove(e)
                    self.fired.add(e.name)
                e.callback(self.sim)


class Progress:
    """`sim.run`'s progress line on rank 0 (other ranks print nothing): step, time,
    percentage and time left, rewritten in place at most once a second."""

    def __init__(self, sim, steps):
        self.sim, self.steps, self.first = sim, max(1, steps), sim.step_count
        self.clock = self.last = time.perf_counter()
        self.shown = False

    def update(self):
        now = time.perf_counter()
        if now - self.last < 1.0 or self.sim.rank != 0:
            return
        self.last, self.shown = now, True
        done = self.sim.step_count - self.first
        left = (now - self.clock) * (self.steps - done) / max(done, 1)
        sys.stdout.write("\rstep %d (%3.0f %%), t = %.6g, %d s left   " % (
            self.sim.step_count, 100.0 * done / self.steps, self.sim.time, round(left)))
        sys.stdout.flush()

    def close(self):
        if self.shown:
            sys.stdout.write("\n")
            sys.stdout.flush()
