"""Build the Cython kernels in kernels/ as abc_crawler.kernels.<name>.

Every ``kernels/_*.pyx`` becomes an extension module; adding a kernel needs no
edit here.
"""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
extensions = [
    Extension(
        f"abc_crawler.kernels.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    )
    for pyx in sorted((HERE / "kernels").glob("_*.pyx"))
]

setup(ext_modules=cythonize(extensions, language_level=3, compiler_directives={"boundscheck": False, "wraparound": False}))
