"""Files from Debian packages without installing them: `apt-get download` + selective extraction.

    cache/debs/<package>_<version>_<arch>.deb          fetched once with `apt-get download`
    cache/debs/<package>_<version>_<arch>/usr/...      only the members a build asked for

A file that exists at its installed path (the package is installed) is read from there; otherwise it
is extracted from the cached .deb (`dpkg-deb --fsys-tarfile | tar -x`, members named exactly), which
is downloaded first if it is missing. Extraction goes through a temporary directory and a rename, so
an interrupted run never leaves half a file behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from construction.core.errors import WorkbenchError


class PackageUnavailable(WorkbenchError):
    """The package is neither installed nor downloadable (no apt, no network, unknown name)."""


@dataclass
class DownloadLog:
    """What a build fetched (package -> (bytes, seconds)); empty when everything was cached."""

    fetched: dict[str, tuple[int, float]] = field(default_factory=dict)


def find_deb(package: str, debs: Path) -> Path | None:
    """The newest cached .deb of `package` (by modification time), or None."""
    found = [p for p in debs.glob(f"{package}_*.deb") if p.name.split("_", 1)[0] == package]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def download_deb(package: str, debs: Path, log: DownloadLog | None = None) -> Path:
    """`apt-get download PACKAGE` into `debs` (no root needed, no install, nothing configured)."""
    if not shutil.which("apt-get"):
        raise PackageUnavailable(f"{package} is not installed and apt-get is not available to download it")
    debs.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=debs, prefix=".download-") as tmp:
        proc = subprocess.run(["apt-get", "download", "-q", package], cwd=tmp, capture_output=True, text=True)
        got = sorted(Path(tmp).glob(f"{package}_*.deb"))
        if proc.returncode or not got:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise PackageUnavailable(f"`apt-get download {package}` failed ({last}); run `apt-get update` "
                                     f"or put the .deb into {debs} by hand")
        target = debs / got[0].name
        os.replace(got[0], target)
    if log is not None:
        log.fetched[package] = (target.stat().st_size, time.perf_counter() - started)
    return target


class DebPackage:
    """Installed paths of one Debian package, served from / or from its cached .deb."""

    def __init__(self, package: str, cache: Path, *, download: bool = True, log: DownloadLog | None = None):
        self.package, self.debs, self.download, self.log = package, Path(cache) / "debs", download, log
        self._deb: Path | None = None

    @property
    def deb(self) -> Path:
        if self._deb is None:
            self._deb = find_deb(self.package, self.debs)
            if self._deb is None:
                if not self.download:
                    raise PackageUnavailable(f"{self.package} is not installed and no {self.package}_*.deb "
                                             f"is in {self.debs}")
                self._deb = download_deb(self.package, self.debs, self.log)
        return self._deb

    @property
    def version(self) -> str:
        """The package version: from the cached .deb's name, or dpkg's record if installed."""
        found = find_deb(self.package, self.debs)
        if found:
            return found.stem.split("_")[1]
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", self.package], capture_output=True,
                              text=True) if shutil.which("dpkg-query") else None
        return proc.stdout.strip() if proc and proc.returncode == 0 else "unknown"

    @property
    def root(self) -> Path:
        return self.debs / self.deb.stem

    def installed(self, path: str) -> bool:
        return Path(path).exists()

    def paths(self, wanted: list[str]) -> dict[str, Path]:
        """Absolute installed path -> a readable local path, extracting what is missing in one pass."""
        out: dict[str, Path] = {}
        missing: list[str] = []
        for path in wanted:
            if not path.startswith("/"):
                raise WorkbenchError(f"{self.package}: '{path}' is not an absolute installed path")
            if self.installed(path):
                out[path] = Path(path)
                continue
            local = self.root / path.lstrip("/")
            if local.exists():
                out[path] = local
            else:
                missing.append(path)
        if missing:
            self._extract(missing)
            for path in missing:
                out[path] = self.root / path.lstrip("/")
        return out

    def path(self, wanted: str) -> Path:
        return self.paths([wanted])[wanted]

    def _extract(self, members: list[str]) -> None:
        for tool in ("dpkg-deb", "tar"):
            if not shutil.which(tool):
                raise PackageUnavailable(f"cannot unpack {self.deb.name}: {tool} is not installed")
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.root.parent, prefix=f".{self.root.name}-") as tmp:
            names = ["./" + m.lstrip("/") for m in sorted(set(members))]
            list_file = Path(tmp) / ".members"
            list_file.write_text("\n".join(names) + "\n", encoding="utf-8")
            out_dir = Path(tmp) / "x"
            out_dir.mkdir()
            deb = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(self.deb)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            tar = subprocess.run(["tar", "-x", "-C", str(out_dir), "--no-recursion", "-T", str(list_file)],
                                 stdin=deb.stdout, capture_output=True, text=True)
            assert deb.stdout is not None
            deb.stdout.close()
            deb_err = deb.stderr.read().decode(errors="replace") if deb.stderr else ""
            deb.wait()
            if deb.returncode or tar.returncode:
                detail = (tar.stderr.strip() or deb_err.strip()).splitlines()
                raise WorkbenchError(f"cannot extract {len(names)} file(s) from {self.deb.name}: "
                                     + "; ".join(detail[:4]))
            for name in names:
                src = out_dir / name[2:]
                dst = self.root / name[2:]
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
