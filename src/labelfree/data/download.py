"""Checksummed downloads: stream to a temporary file, verify, rename atomically.

A file is only ever visible under its final name once its checksum has been verified, so a
killed or failed download never leaves a partial artefact that Snakemake (or the next run)
could mistake for a finished one. Checksums are constants next to each source, with the
place they were taken from.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labelfree.data.base import DataError

log = logging.getLogger(__name__)

CHUNK = 1 << 20


@dataclass(frozen=True)
class FileSpec:
    """One remote file: its local name, official URLs (mirrors in order) and checksum.

    Exactly one of ``md5`` / ``sha256`` is usually given (whichever the publisher lists);
    ``size`` (bytes) is checked when known.
    """

    name: str
    urls: tuple[str, ...]
    md5: str = ""
    sha256: str = ""
    size: int | None = None

    def __post_init__(self) -> None:
        if not (self.md5 or self.sha256):
            raise DataError(f"{self.name}: a download needs an md5 or sha256 checksum")

    @property
    def algorithm(self) -> str:
        return "sha256" if self.sha256 else "md5"

    @property
    def digest(self) -> str:
        return (self.sha256 or self.md5).lower()


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: str | os.PathLike[str], spec: FileSpec) -> None:
    """Raise DataError naming ``path`` if it is missing, of the wrong size or checksum."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found (expected {spec.name})")
    if spec.size is not None and p.stat().st_size != spec.size:
        raise DataError(
            f"{p}: size {p.stat().st_size} bytes, expected {spec.size} (truncated or wrong file)"
        )
    got = file_digest(p, spec.algorithm)
    if got != spec.digest:
        raise DataError(
            f"{p}: {spec.algorithm} checksum {got} does not match expected {spec.digest}"
        )


def candidate_urls(spec: FileSpec, base_url: str = "") -> list[str]:
    """The override mirror ``base_url`` + file name if given, else the spec's official URLs."""
    if base_url:
        return [base_url.rstrip("/") + "/" + spec.name]
    return list(spec.urls)


def _stream(url: str, spec: FileSpec, dest: Path, timeout: float) -> None:
    """Download ``url`` to ``dest`` atomically, verifying length and checksum on the fly."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.new(spec.algorithm)
        received = 0
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            expected = int(length) if length is not None else spec.size
            with _progress(expected, dest.name) as bar:
                while chunk := resp.read(CHUNK):
                    out.write(chunk)
                    h.update(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
        if expected is not None and received != expected:
            raise DataError(
                f"{dest.name}: download from {url} truncated: got {received} of {expected} bytes"
            )
        if spec.size is not None and received != spec.size:
            raise DataError(
                f"{dest.name}: download from {url} has {received} bytes, expected {spec.size}"
            )
        got = h.hexdigest()
        if got != spec.digest:
            raise DataError(
                f"{dest.name}: {spec.algorithm} checksum of the download from {url} is {got}, "
                f"expected {spec.digest} (corrupt mirror or truncated transfer)"
            )
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a shared cache wants the umask's
        os.replace(tmp, dest)
        log.info(
            "downloaded %s (%d bytes) from %s, %s verified", dest, received, url, spec.algorithm
        )
    finally:
        if tmp.exists():
            tmp.unlink()


def _progress(total: int | None, name: str) -> Any:
    """A tqdm bar in bytes on stderr (the job log under Snakemake), updated every 10 s."""
    from tqdm import tqdm

    return tqdm(total=total, desc=name, unit="B", unit_scale=True, mininterval=10.0, disable=False)


def fetch(
    spec: FileSpec, dest_dir: str | os.PathLike[str], base_url: str = "", timeout: float = 60.0
) -> Path:
    """Return the verified local path of ``spec`` under ``dest_dir``, downloading it if absent.

    An existing file is verified, never silently replaced: a mismatch is an error that names
    the file (delete it to download again). Mirrors are tried in order; if all fail, the error
    lists each URL with its reason. Nothing is left under the final name unless verified.
    """
    dest_dir = Path(dest_dir)
    dest = dest_dir / spec.name
    if dest.exists():
        try:
            verify_file(dest, spec)
        except DataError as exc:
            raise DataError(f"{exc}; delete the file to download it again") from None
        log.info("%s present, %s verified", dest, spec.algorithm)
        return dest
    dest_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in candidate_urls(spec, base_url):
        try:
            _stream(url, spec, dest, timeout)
            return dest
        except http.client.IncompleteRead as exc:
            errors.append(
                f"{url}: truncated transfer ({len(exc.partial)} bytes read, more expected)"
            )
            log.warning("download of %s truncated", url)
        except (urllib.error.URLError, OSError, DataError, http.client.HTTPException) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                reason = f"HTTP {exc.code} {exc.reason}"
            elif isinstance(exc, urllib.error.URLError):
                reason = exc.reason
            else:
                reason = exc
            errors.append(f"{url}: {reason}")
            log.warning("download of %s failed: %s", url, reason)
    raise DataError(
        f"{dest}: could not download {spec.name}; tried "
        + "; ".join(errors)
        + f". Without network, place the verified file at {dest} yourself."
    )


def fetch_all(
    specs: Iterable[FileSpec], dest_dir: str | os.PathLike[str], base_url: str = ""
) -> dict[str, Path]:
    """Fetch every spec; return ``{name: path}``."""
    return {s.name: fetch(s, dest_dir, base_url) for s in specs}
