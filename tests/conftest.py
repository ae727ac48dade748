"""Settings of the whole test suite.

OpenMP threads that wait actively (libgomp's default spins before sleeping) are slow
when the cores are shared: on this project's 2-core machine with one core busy, the
1-vs-2-thread bitwise tests took 5x (alone) to 50x (beside another test run) longer.
Passive waiting changes no result, only who gets the CPU; scripts/test.sh already
sets it for the MPI runs. It must be set before the first kernel loads libgomp, which
this file (imported before any test module) does; a value already set wins.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
