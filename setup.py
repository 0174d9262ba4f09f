"""Build script for the one part pyproject.toml cannot declare: the optional C extension.

`scopetool._speedups` runs the common path of `Contract.prepare` in C. It is optional: where it cannot
be compiled the install goes on and scopetool runs its pure-Python `prepare`, which admits and rejects
exactly the same requests (see docs/benchmarks.md). All other metadata is in pyproject.toml.
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "scopetool._speedups",
            sources=["scopetool/_speedups.c"],
            depends=["scopetool/_speedups_scan.h"],
            extra_compile_args=[] if sys.platform == "win32" else ["-O3"],
            optional=True,
        )
    ]
)
