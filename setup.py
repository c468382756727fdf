"""Build the Cython kernels in kernels/ as abc_crawler.kernels.<name>, and the compiled parts of
the crawl's per-page path in abc_crawler/web/ and abc_crawler/store/ as abc_crawler.web.<name> and
abc_crawler.store.<name>.

Every ``kernels/_*.pyx``, ``abc_crawler/web/_*.pyx`` and ``abc_crawler/store/_*.pyx`` becomes an
extension module; adding one needs no edit here. (The per-page ones are not in the kernels package:
importing it loads the graph kernels, which only rank 0 needs.)
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
] + [
    Extension(f"abc_crawler.{package}.{pyx.stem}", [str(pyx.relative_to(HERE))], extra_compile_args=["-O3"])
    for package in ("web", "store")
    for pyx in sorted((HERE / "abc_crawler" / package).glob("_*.pyx"))
]

setup(ext_modules=cythonize(extensions, language_level=3, compiler_directives={"boundscheck": False, "wraparound": False}))
