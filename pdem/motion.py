"""Motion laws for walls (planes and mesh walls): prescribed displacements of time
and a servo on the wall load (issue 21 part 3; LIGGGHTS `fix move/mesh` and
`fix mesh/surface/stress/servo`, PFC's wall servo).

Each step t -> t + dt a law gives the wall's translational velocity over the step;
the wall then moves as before (planes: point += v dt; mesh walls: RigidMotion with
compensated sums). A displacement law d(s), s = t - start, gives v = (d(s + dt) -
d(s)) / dt, so the wall is at start position + d(s) after every step (to round-off).

- `Sine(amplitude, frequency, phase=0)`: d = A (sin(2 pi f s + phase) - sin(phase)).
- `Ramp(velocity, duration)`: the velocity grows linearly from 0 to `velocity` over
  `duration`, then stays: d = v s^2 / (2 T) for s < T, v (s - T/2) after.
- `Table(times, displacements)`: piecewise-linear d through the points (s, d); it
  holds the first value before the first time and the last after the last.
- `Servo(load, gain, max_speed, axis=None)`: P-control of the load on the wall along
  `axis` (the direction the wall advances into the particles; planes: the normal):
  v = axis clip(gain (load - measured), -max_speed, max_speed), measured = minus the
  force on the wall along axis (from the contacts at t; one reduction over ranks per
  step). Stable when gain (k dt + c) < 1, k and c the stiffness and the damping
  coefficient the wall meets (sums over its contacts): the damping force answers the
  wall's velocity at once; else it chatters at max_speed.

Laws are data (JSON in checkpoints): a restarted run goes on with them."""
import numpy as np

from . import validate
from .errors import InputError


class Law:
    start = 0.0

    def describe(self):
        return {"law": type(self).__name__, **self.params(), "start": self.start}


class Displacement(Law):
    def velocity(self, sim, wall, t, dt):
        s = t - self.start
        return (self.d(s + dt) - self.d(s)) / dt


class Sine(Displacement):
    def __init__(self, amplitude, frequency, phase=0.0):
        self.amplitude = validate.vector("Sine: amplitude", amplitude)
        self.frequency = validate.positive("Sine: frequency", frequency)
        self.phase = validate.number("Sine: phase", phase)

    def params(self):
        return {"amplitude": self.amplitude.tolist(), "frequency": self.frequency,
                "phase": self.phase}

    def d(self, s):
        w = 2.0 * np.pi * self.frequency
        return self.amplitude * (np.sin(w * s + self.phase) - np.sin(self.phase))


class Ramp(Displacement):
    def __init__(self, velocity, duration):
        self.v = validate.vector("Ramp: velocity", velocity)
        self.duration = validate.positive("Ramp: duration", duration)

    def params(self):
        return {"velocity": self.v.tolist(), "duration": self.duration}

    def d(self, s):
        T = self.duration
        s = max(s, 0.0)
        return self.v * (s * s / (2.0 * T) if s < T else s - 0.5 * T)


class Table(Displacement):
    def __init__(self, times, displacements):
        try:
            self.times = np.asarray(times, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError("Table: times must be numbers, got %r" % (times,)) from None
        self.values = validate.vectors("Table: displacements", displacements, 3, len(self.times))
        if len(self.times) < 2 or not np.all(np.isfinite(self.times)) or \
                np.any(np.diff(self.times) <= 0):
            raise InputError("Table: times must be 2 or more finite increasing numbers, got %r"
                             % (self.times.tolist(),))

    def params(self):
        return {"times": self.times.tolist(), "displacements": self.values.tolist()}

    def d(self, s):
        return np.array([np.interp(s, self.times, self.values[:, k]) for k in range(3)])


class Servo(Law):
    def __init__(self, load, gain, max_speed, axis=None):
        self.load = validate.number("Servo: load", load)
        self.gain = validate.positive("Servo: gain", gain)
        self.max_speed = validate.positive("Servo: max_speed", max_speed)
        self.axis = None if axis is None else _unit(validate.vector("Servo: axis", axis))

    def params(self):
        return {"load": self.load, "gain": self.gain, "max_speed": self.max_speed,
                "axis": None if self.axis is None else self.axis.tolist()}

    def velocity(self, sim, wall, t, dt):
        kind, i = wall
        axis = sim.planes.normal[i] if self.axis is None else self.axis
        force = sim.plane_forces()[i] if kind == "plane" else sim.mesh_wall_forces()["force"][i]
        measured = -float(force @ axis)
        return axis * float(np.clip(self.gain * (self.load - measured), -self.max_speed,
                                    self.max_speed))


def _unit(v):
    n = float(np.linalg.norm(v))
    if not n > 0:
        raise InputError("Servo: axis must be a non-zero vector, got %r" % (v.tolist(),))
    return v / n


LAWS = {cls.__name__: cls for cls in (Sine, Ramp, Table, Servo)}


def from_description(d):
    d = dict(d)
    cls, start = LAWS[d.pop("law")], d.pop("start")
    law = cls(**d)
    law.start = start
    return law


class WallMotions:
    """The laws attached to walls: {("plane", k) or ("mesh", i): law}."""

    def __init__(self):
        self.laws = {}

    def __bool__(self):
        return bool(self.laws)

    @staticmethod
    def check(law):
        """law's description (None for None), or the one-line error."""
        if law is not None and not isinstance(law, Law):
            raise InputError("motion law must be pdem.Sine, Ramp, Table or Servo (or None), "
                             "got %r" % (law,))
        return law and law.describe()

    def set(self, sim, wall, law):
        if isinstance(law, Servo) and wall[0] == "mesh" and law.axis is None:
            raise InputError("Servo on mesh wall %d: give axis= (the direction the wall "
                             "advances into the particles)" % wall[1])
        if law is None:
            self.laws.pop(wall, None)
            return
        law.start = sim.time
        self.laws[wall] = law

    def apply(self, sim):
        """Set every driven wall's velocity for the step t -> t + dt (collective with a
        servo)."""
        for wall, law in sorted(self.laws.items()):
            v = law.velocity(sim, wall, sim.time, sim.dt)
            if wall[0] == "plane":
                sim.planes.set_velocity(wall[1], v)
            else:
                sim.mesh_walls[wall[1]].motion.set_velocity(velocity=v)

    def loads(self, sim):
        """{"plane<k>" or "mesh<i>": the load on each driven wall}: minus its force along
        the law's axis (planes: the normal; a mesh wall without axis: the force's
        magnitude). Collective."""
        if not self.laws:
            return {}
        planes, mesh = sim.plane_forces(), sim.mesh_wall_forces()["force"]
        out = {}
        for (kind, i), law in sorted(self.laws.items()):
            f = planes[i] if kind == "plane" else mesh[i]
            axis = getattr(law, "axis", None)
            if axis is None and kind == "plane":
                axis = sim.planes.normal[i]
            out["%s%d" % (kind, i)] = float(np.linalg.norm(f)) if axis is None else -float(f @ axis)
        return out

    def describe(self):
        return [{"wall": list(w), **law.describe()} for w, law in sorted(self.laws.items())]

    def restore(self, items):
        for d in items:
            d = dict(d)
            kind, i = d.pop("wall")
            self.laws[(kind, int(i))] = from_description(d)
