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


def arch_flags():
    """-march=native by default (3-operand AVX encodings; the kernels are built on the
    machine that runs them). PDEM_MARCH=generic (or any -march value) overrides it.
    Bitwise reproducibility does not depend on it: contraction to FMA is disabled
    and no reassociation is allowed, so every operation rounds as written. Without FMA
    and AVX-512 instructions too: GCC 12's vectorizer forms fused multiply-subtract-add
    (vfmsubadd) from alternating add/sub lanes even with -ffp-contract=off (AVX-512
    brings its own FMA forms), which made a body's result depend on the batch it was in
    (the vector loop against its scalar remainder)."""
    march = os.environ.get("PDEM_MARCH", "native")
    return [] if march == "generic" else ["-march=" + march, "-mno-fma", "-mno-avx512f"]


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
extensions = [
    Extension(
        "pdem._kernels." + os.path.splitext(os.path.basename(pyx))[0],
        [pyx],
        include_dirs=[numpy.get_include(), "pyx"],
        # inline the L6Geom/law helpers (declared inline) into the contact loops
        extra_compile_args=["-O3", "-ffp-contract=off", "-fno-math-errno", "--param", "max-inline-insns-single=2000",
                            "--param", "large-function-growth=2000", "--param",
                            "inline-unit-growth=1000"] + arch_flags() + omp_compile,
        extra_link_args=omp_link,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for pyx in sorted(glob.glob("pyx/*.pyx"))
]

setup(
    ext_modules=cythonize(extensions, compiler_directives=directives,
                          include_path=["pyx"], quiet=True),
)
