"""Helpers shared by the benchmarks that drive LAMMPS (bed_vs_lammps.py, strong_scaling.py,
chute_vs_lammps.py): find the binary, write a data file of spheres, run an input, and
read LAMMPS's log (loop time, timing breakdown, neighbor list builds, BENCH_* lines
written by the inputs' `print` commands)."""
import os
import re
import shutil
import subprocess
import time

SECTIONS = ("Pair", "Neigh", "Comm", "Output", "Modify", "Other")


def find_lammps():
    for name in ("lmp", "lmp_serial", "lmp_mpi", "lammps"):
        p = shutil.which(name)
        if p:
            return p
    return None


def parse_state(line):
    """{key: float} of a 'key=value key=value ...' line."""
    return {k: float(v) for k, v in re.findall(r"(\w+)=(\S+)", line)}


def write_spheres_data(path, title, pos, vel, angvel, diameter, density, lo, hi):
    """LAMMPS data file (atom_style sphere, one atom type, %.17g: the exact doubles) of
    spheres with the given positions, velocities and spins; lo, hi: box corners."""
    n = len(pos)
    f = "%.17g"
    with open(path, "w") as fh:
        fh.write("%s\n\n%d atoms\n1 atom types\n\n" % (title, n))
        fh.write(("%s %s xlo xhi\n%s %s ylo yhi\n%s %s zlo zhi\n\n" % ((f,) * 6))
                 % (lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]))
        fh.write("Atoms # sphere\n\n")
        for i in range(n):
            fh.write("%d 1 %.17g %.17g %.17g %.17g %.17g\n"
                     % (i + 1, diameter, density, pos[i, 0], pos[i, 1], pos[i, 2]))
        fh.write("\nVelocities\n\n")
        for i in range(n):
            fh.write("%d %.17g %.17g %.17g %.17g %.17g %.17g\n"
                     % (i + 1, vel[i, 0], vel[i, 1], vel[i, 2], angvel[i, 0], angvel[i, 1],
                        angvel[i, 2]))


def run_input(lmp, inp, log, launcher=(), must_contain="BENCH_END"):
    """Run `lmp -in inp` (after the command prefix `launcher`, e.g. mpirun -n 2) with one
    OpenMP thread; returns (log text, wall time of the whole process). Raises
    RuntimeError with the log's tail if LAMMPS fails or `must_contain` is not in the log."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = list(launcher) + [lmp, "-in", inp, "-log", log, "-screen", "none", "-nocite"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    total = time.perf_counter() - t0
    text = open(log).read() if os.path.exists(log) else ""
    if res.returncode != 0 or (must_contain and must_contain not in text):
        tail = "\n".join((text or res.stdout + res.stderr).splitlines()[-30:])
        raise RuntimeError("LAMMPS failed (%s, exit %d):\n%s" % (" ".join(cmd), res.returncode, tail))
    return text, total


def parse_run(text, index=-1):
    """Timing of one `run` in a LAMMPS log (index into the runs: -1 = the last): loop
    time, processes, steps, atoms, the timing breakdown {pair, neigh, comm, output,
    modify, other} in seconds, CPU time (loop time x '% CPU use'), neighbor list builds
    and dangerous builds."""
    starts = [m.start() for m in re.finditer(r"Loop time of", text)]
    sec = text[starts[index]:]
    if index != -1 and index + 1 < len(starts):
        sec = text[starts[index]:starts[index + 1]]
    m = re.match(r"Loop time of (\S+) on (\d+) procs for (\d+) steps with (\d+) atoms", sec)
    loop, procs, nsteps, natoms = float(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))
    breakdown = {}
    for s in SECTIONS:
        b = re.search(r"^%s\s*\|[^|]*\|\s*([-+.eE0-9]+)" % s, sec, re.M)
        if b:
            breakdown[s.lower()] = float(b.group(1))
    cpu_pct = re.search(r"([.0-9]+)% CPU use", sec)
    nb = re.search(r"Neighbor list builds = (\d+)", sec)
    dang = re.search(r"Dangerous builds = (\d+)", sec)
    return {"wall_s": loop, "procs": procs, "steps": nsteps, "particles": natoms,
            "cpu_s": loop * float(cpu_pct.group(1)) / 100.0 if cpu_pct else None,
            "timers_s": breakdown, "n_rebuilds": int(nb.group(1)) if nb else None,
            "dangerous_builds": int(dang.group(1)) if dang else None}


def bench_line(text, tag):
    """{key: value} of the log line 'TAG key=value ...' (printed by the input)."""
    return parse_state(re.search(r"^%s (.*)$" % tag, text, re.M).group(1))


def version(text):
    return (re.search(r"LAMMPS \((.*?)\)", text) or [None, "?"])[1]
