"""Names the packages of the wheel; everything else about the build is in pyproject.toml.

The repository root is the package `kgprobe` (``package-dir = {kgprobe = "."}``), which
``[tool.setuptools.packages.find]`` cannot express: it would name the sub-packages ``cli``,
``kg``, ... instead of ``kgprobe.cli``, ``kgprobe.kg``. So the sub-packages are found here,
every folder with an ``__init__.py``, and a new study is in the wheel without a hand-kept
list (tests/test_packaging.py builds the wheel and checks).
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

NOT_THE_PACKAGE = ["tests", "tests.*", "bench", "bench.*", "crosscheck", "crosscheck.*",
                   "docs", "docs.*", "build", "build.*", "dist", "dist.*", "out", "out.*"]


class BuildPy(build_py):
    """build_py without this file: being in the package's folder, it would ship as
    ``kgprobe.setup``."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        """The package's modules, less ``kgprobe.setup``."""
        found = super().find_package_modules(package, package_dir)
        return [m for m in found if (m[0], m[1]) != ("kgprobe", "setup")]


setup(packages=["kgprobe"] + [f"kgprobe.{name}"
                              for name in find_packages(where=".", exclude=NOT_THE_PACKAGE)],
      cmdclass={"build_py": BuildPy})
