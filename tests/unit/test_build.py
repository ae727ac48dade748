"""The compiled kernels round every operation as written: no fused multiply-add in any
of them (setup.py: -ffp-contract=off, -mno-fma, and no AVX-512 for the kernels listed in
NO_AVX512, where GCC 12 forms vfmsubadd anyway). A fused operation in a vector loop but
not in its scalar remainder makes a particle's result depend on the batch it is in, so
on the rank count: a kernel found here belongs in NO_AVX512."""
import glob
import os
import shutil
import subprocess

import pytest

import pdem._kernels

FMA = ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub")


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_no_kernel_holds_a_fused_multiply_add():
    folder = os.path.dirname(pdem._kernels.__file__)
    kernels = sorted(glob.glob(os.path.join(folder, "*.so")))
    assert kernels
    fused = {}
    for path in kernels:
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                              capture_output=True, text=True, check=True).stdout
        count = sum(text.count(op) for op in FMA)
        if count:
            fused[os.path.basename(path).split(".")[0]] = count
    assert not fused, "fused multiply-adds in kernels %s: add them to NO_AVX512" % fused
