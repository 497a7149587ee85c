"""`pip install .`: builds the Python package onnxllm with CMake (target `python`) and installs it.

Works offline with Debian's packages only (setuptools, pybind11-dev, the engine's build
dependencies): there is no pyproject.toml, so pip uses the installed setuptools instead of
downloading one into an isolated environment. CMAKE_BUILD_PARALLEL_LEVEL sets the build jobs;
ccache is used when installed.
"""

import os
import pathlib
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version():
    for line in (ROOT / "CMakeLists.txt").read_text().splitlines():
        if line.startswith("project(onnxllm VERSION"):
            return line.split()[2]
    raise RuntimeError("CMakeLists.txt names no project version")


class CMakeBuild(build_ext):
    """Builds onnxllm._onnxllm and libonnxllm.so with CMake and puts both into the package."""

    def build_extension(self, ext):
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DONNXLLM_BUILD_TESTS=OFF", f"-DPython3_EXECUTABLE={os.sys.executable}"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "python", "-j", jobs], check=True)

        package = build_dir / "python" / "onnxllm"
        target = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        for f in package.iterdir():
            if f.name.startswith("_onnxllm"):
                shutil.copy2(f, target)
            elif f.name.startswith("libonnxllm"):
                shutil.copy2(f, target.parent / f.name)


setup(
    name="onnxllm",
    version=project_version(),
    description="Run onnxruntime-genai model folders with onnxllm's own engine (onnxruntime_genai's Python API)",
    license="MIT",
    python_requires=">=3.9",
    install_requires=["numpy"],
    packages=["onnxllm"],
    package_dir={"": "src/python"},
    ext_modules=[Extension("onnxllm._onnxllm", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Not ./build: that is the CMake build folder of `make`.
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
