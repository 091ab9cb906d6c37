"""BehaviorTree.CPP 4.8 itself, for the conformance tests: ``loader.cpp`` compiled against the
library inside the ``behaviortreepy`` wheel (installed with the dev extras), with the headers
of the same version's sdist (fetched with pip). The build is cached under
``~/.cache/harness-bt/btcpp`` (``$XDG_CACHE_HOME``), keyed by the loader's source, the
library's version and the Python it links, so it runs once per machine.

What cannot be had (no compiler, no wheel, no shared libpython, no network for the sdist)
fails the test with what is missing and how to get it: never a silent skip."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "loader.cpp"
CORPUS = HERE / "btcpp_corpus"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness-bt" / "btcpp"


def _run(cmd: list[str], what: str, fix: str, timeout: float = 600) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"{what}: {exc}; {fix}")
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
                    f"{(done.stdout + done.stderr)[-3000:]}\n{fix}")


def _library() -> tuple[str, Path]:
    try:
        version = metadata.version("behaviortreepy")
        import behaviortreepy
    except (metadata.PackageNotFoundError, ImportError) as exc:
        pytest.fail(f"the BehaviorTree.CPP conformance test needs the behaviortreepy wheel "
                    f"({exc}); install the dev extras: pip install -e '.[dev]' (or make setup)")
    package = Path(behaviortreepy.__file__).parent
    found = sorted(package.glob("_behaviortreepy*.so"))
    if not found:
        pytest.fail(f"no _behaviortreepy*.so in {package}: the wheel holds BehaviorTree.CPP "
                    "there; reinstall behaviortreepy from a binary wheel")
    return version, found[0]


def _headers(version: str, cache: Path) -> Path:
    """BehaviorTree.CPP's include directory from the sdist of ``version``."""
    src = cache / f"behaviortreepy-{version}"
    include = src / "BehaviorTree.CPP" / "include"
    if include.is_dir():
        return src / "BehaviorTree.CPP"
    dist = cache / "sdist"
    dist.mkdir(parents=True, exist_ok=True)
    archive = dist / f"behaviortreepy-{version}.tar.gz"
    if not archive.exists():
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
              "--no-binary", "behaviortreepy", f"behaviortreepy=={version}", "-d", str(dist)],
             "fetching the behaviortreepy sdist (BehaviorTree.CPP's headers)",
             "check the network or put the sdist in " + str(dist))
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    if not include.is_dir():
        pytest.fail(f"the sdist {archive} has no BehaviorTree.CPP/include")
    return src / "BehaviorTree.CPP"


def build_loader() -> Path:
    """The compiled loader (built once, then taken from the cache)."""
    version, library = _library()
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ldlibrary = sysconfig.get_config_var("LDLIBRARY") or ""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not ldlibrary.endswith(".so"):
        pytest.fail(f"the loader links the wheel's library, which needs libpython as a shared "
                    f"library; this Python ({sys.executable}) has {ldlibrary or 'none'}: use "
                    "a Python built with --enable-shared")
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        pytest.fail("the BehaviorTree.CPP conformance test compiles a loader and finds no C++ "
                    "compiler (g++, or $CXX): apt-get install g++")
    key = hashlib.sha256(b"\0".join([SOURCE.read_bytes(), version.encode(),
                                     str(library).encode(), sys.version.encode()]))
    cache = cache_root()
    binary = cache / f"loader-{key.hexdigest()[:16]}"
    if binary.exists():
        return binary
    root = _headers(version, cache)
    tmp = binary.with_suffix(f".{os.getpid()}.tmp")
    _run([cxx, "-std=c++17", "-O1", "-D_GLIBCXX_USE_CXX11_ABI=0",  # the wheel's ABI
          f"-I{root / 'include'}", f"-I{root / '3rdparty' / 'tinyxml2'}", str(SOURCE),
          str(library), f"-L{libdir}", f"-l{ldlibrary[3:-3]}", "-Wl,--allow-shlib-undefined",
          f"-Wl,-rpath,{library.parent}", f"-Wl,-rpath,{libdir}", "-o", str(tmp)],
         "compiling the BehaviorTree.CPP loader", "install g++ (apt-get install g++)")
    tmp.replace(binary)
    for stale in cache.glob("loader-*"):  # builds of an older loader or library
        if stale != binary and not stale.name.endswith(".tmp"):
            stale.unlink(missing_ok=True)
    return binary


@dataclass(frozen=True)
class Run:
    """What the loader printed: the node count, the final status, or BT.CPP's error."""

    code: int
    output: str

    @property
    def status(self) -> str | None:
        lines = [ln for ln in self.output.splitlines() if ln.startswith("status ")]
        return lines[-1].split()[1] if lines else None


def run(loader: Path, xml: Path, *args: str) -> Run:
    done = subprocess.run([str(loader), str(xml), *args], capture_output=True, text=True,
                          timeout=120, check=False)
    return Run(done.returncode, done.stdout + done.stderr)
