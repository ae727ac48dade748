"""Build pdem's Cython kernels: pyx/<name>.pyx -> pdem._kernels.<name>.

OpenMP is probed once by compiling a tiny program with -fopenmp; without it
the kernels still build (prange runs serially) and the build says so.
Set PDEM_DEBUG=1 for a bounds-checked build (used by a CI job to catch
out-of-range indexing in kernels).
"""
import os
import glob
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup


def openmp_flags():
    """Return (compile, link) flags if the C compiler accepts -fopenmp, else ([], [])."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()[0]
    src = "#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.c")
        with open(path, "w") as fh:
            fh.write(src)
        try:
            ok = subprocess.run([cc, "-fopenmp", path, "-o", os.path.join(tmp, "probe")],
                                capture_output=True).returncode == 0
        except OSError:
            ok = False
    if ok:
        return ["-fopenmp"], ["-fopenmp"]
    print("pdem build: OpenMP NOT available with %s; kernels will run single-threaded" % cc,
          file=sys.stderr)
    return [], []


# Kernels in which GCC 12 forms fused multiply-subtract-add (vfmsubadd) from alternating
# add/sub lanes even with -ffp-contract=off: AVX-512 brings its own FMA forms, so
# -mno-fma alone does not stop it, and a body's result then depends on whether it falls
# in the vector loop or its scalar remainder (the batch it is in). These are built
# without AVX-512; tests/unit/test_build.py checks that no kernel holds an FMA.
NO_AVX512 = {"ellipsoid", "integrate", "rigid_body"}

# The pair kernel's vector blocks (contacts.pyx block_loop) hold the law's selects: with
# the default -ftrapping-math GCC sinks an operation used by one side of a select into a
# branch and will not if-convert it back (the loop then does not vectorize), and its
# 14 specialized copies of the loop exceed GCC's default growth limits for inlining.
# Neither option changes a result: no operation is reassociated, contracted or removed.
EXTRA_FLAGS = {"contacts": ["-fno-trapping-math", "--param", "large-function-growth=10000",
                            "--param", "large-stack-frame-growth=10000"]}


def arch_flags(name):
    """-march=native by default (the kernels are built on the machine that runs them;
    the vector blocks of the contact kernels use AVX-512 where it exists).
    PDEM_MARCH=generic (or any -march value) overrides it. Bitwise reproducibility does
    not depend on it: contraction to FMA is disabled and no reassociation is allowed,
    so every operation rounds as written."""
    march = os.environ.get("PDEM_MARCH", "native")
    if march == "generic":
        return []
    return ["-march=" + march, "-mno-fma"] + (["-mno-avx512f"] if name in NO_AVX512 else [])


debug = os.environ.get("PDEM_DEBUG", "0") == "1"
omp_compile, omp_link = openmp_flags()
directives = {
    "language_level": 3,
    "boundscheck": debug,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": debug,
    "nonecheck": False,
}


def extension(pyx):
    """pyx/<name>.pyx -> pdem._kernels.<name>, with the flags of that kernel."""
    name = os.path.splitext(os.path.basename(pyx))[0]
    return Extension(
        "pdem._kernels." + name,
        [pyx],
        include_dirs=[numpy.get_include(), "pyx"],
        # inline the L6Geom/law helpers (declared inline) into the contact loops; debug
        # info only in the PDEM_DEBUG build (Python's CFLAGS ask for it; it changes no
        # instruction and took a quarter of the build's time)
        extra_compile_args=["-O3", "-g" if debug else "-g0", "-ffp-contract=off",
                            "-fno-math-errno",
                            "--param", "max-inline-insns-single=2000",
                            "--param", "large-function-growth=2000",
                            "--param", "inline-unit-growth=1000"]
        + arch_flags(name) + EXTRA_FLAGS.get(name, []) + omp_compile,
        extra_link_args=omp_link,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    # Cython on every core this process may use (build_ext -j N compiles the C in parallel)
    ext_modules=cythonize([extension(pyx) for pyx in sorted(glob.glob("pyx/*.pyx"))],
                          compiler_directives=directives, include_path=["pyx"], quiet=True,
                          nthreads=len(os.sched_getaffinity(0))),
)
