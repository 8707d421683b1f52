"""Checksummed downloads: stream to a temporary file, verify, rename atomically.

A file is only ever visible under its final name once its checksum has been verified, so a
killed or failed download never leaves a partial artefact that Snakemake (or the next run)
could mistake for a finished one. Checksums are constants next to each source, with the
place they were taken from.

Local files (``datasets.<name>.local``, docs/data.md "Local files"): instead of downloading,
each file is copied from a folder the user already has, through the same temporary-file,
verify, rename path; the source folder is only read. A gzip file whose own checksum differs
(re-compressed by a mirror, a package cache or an old disk) is accepted when the md5 of its
decompressed content is the standard one (``FileSpec.content_md5``); an uncompressed copy
with that md5 is accepted too and gzip-compressed on the way in.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import logging
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labelfree.data.base import DataError
from labelfree.joblog import progress

log = logging.getLogger(__name__)

CHUNK = 1 << 20


@dataclass(frozen=True)
class FileSpec:
    """One remote file: its local name, official URLs (mirrors in order) and checksum.

    Exactly one of ``md5`` / ``sha256`` is usually given (whichever the publisher lists);
    ``size`` (bytes) is checked when known. ``content_md5``: md5 of the decompressed content of
    a gzip file, which identifies the data whatever gzip settings wrote the archive.
    """

    name: str
    urls: tuple[str, ...]
    md5: str = ""
    sha256: str = ""
    size: int | None = None
    content_md5: str = ""

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


def gunzip_digest(path: str | os.PathLike[str], algorithm: str = "md5") -> str | None:
    """Hex digest of the decompressed content of a gzip file; None if it is not readable gzip."""
    h = hashlib.new(algorithm)
    try:
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        return None
    return h.hexdigest()


def verify_file(path: str | os.PathLike[str], entry: FileSpec) -> str:
    """Check ``path`` against ``entry``; return how it matched: ``"archive"`` or ``"content"``.

    The file's own checksum (and size, when known) is tried first; when it differs and the entry
    has ``content_md5``, the md5 of the decompressed gzip content is tried. Raises DataError
    naming ``path`` when the file is missing or neither matches.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found (expected {entry.name})")
    size = p.stat().st_size
    got = file_digest(p, entry.algorithm)
    size_ok = entry.size is None or size == entry.size
    if size_ok and got == entry.digest:
        return "archive"
    if entry.content_md5:
        content = gunzip_digest(p)
        if content == entry.content_md5.lower():
            return "content"
        inner = (
            "it is not a readable gzip file"
            if content is None
            else f"md5 of its decompressed content is {content}"
        )
        raise DataError(
            f"{p}: neither checksum matches {entry.name}: {entry.algorithm} of the file is {got} "
            f"(expected {entry.digest}) and {inner} (expected {entry.content_md5.lower()}); "
            "wrong, truncated or corrupt file"
        )
    if not size_ok:
        raise DataError(f"{p}: size {size} bytes, expected {entry.size} (truncated or wrong file)")
    raise DataError(f"{p}: {entry.algorithm} checksum {got} does not match expected {entry.digest}")


def candidate_urls(entry: FileSpec, base_url: str = "") -> list[str]:
    """The override mirror ``base_url`` + file name if given, else the entry's official URLs."""
    if base_url:
        return [base_url.rstrip("/") + "/" + entry.name]
    return list(entry.urls)


def _stream(url: str, entry: FileSpec, dest: Path, timeout: float) -> None:
    """Download ``url`` to ``dest`` atomically, verifying length and checksum on the fly."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.new(entry.algorithm)
        received = 0
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            expected = int(length) if length is not None else entry.size
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
        if entry.size is not None and received != entry.size:
            raise DataError(
                f"{dest.name}: download from {url} has {received} bytes, expected {entry.size}"
            )
        got = h.hexdigest()
        if got != entry.digest and entry.content_md5 and gunzip_digest(tmp) == entry.content_md5:
            log.info("%s: re-compressed copy, decompressed content md5 verified", url)
        elif got != entry.digest:
            raise DataError(
                f"{dest.name}: {entry.algorithm} checksum of the download from {url} is {got}, "
                f"expected {entry.digest} (corrupt mirror or truncated transfer)"
            )
        _publish(tmp, dest)
        log.info(
            "downloaded %s (%d bytes) from %s, %s verified", dest, received, url, entry.algorithm
        )
    finally:
        if tmp.exists():
            tmp.unlink()


def _publish(tmp: Path, dest: Path) -> None:
    """Give ``tmp`` the umask's permissions (mkstemp creates 0600) and rename it to ``dest``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, dest)


def _progress(total: int | None, name: str) -> Any:
    """A tqdm bar in bytes on stderr (the job log under Snakemake), updated every 10 s."""
    return progress(total=total, desc=name, unit="B", unit_scale=True, mininterval=10.0)


def _verify_present(dest: Path, entry: FileSpec, remedy: str) -> str:
    """Verify a file already in place (never silently replaced); return how it matched."""
    try:
        how = verify_file(dest, entry)
    except DataError as exc:
        raise DataError(f"{exc}; {remedy}") from None
    log.info("%s present, verified by its %s checksum", dest, how)
    return how


def fetch(
    entry: FileSpec, dest_dir: str | os.PathLike[str], base_url: str = "", timeout: float = 60.0
) -> Path:
    """Return the verified local path of ``entry`` under ``dest_dir``, downloading it if absent.

    An existing file is verified, never silently replaced: a mismatch is an error that names
    the file (delete it to download again). Mirrors are tried in order; if all fail, the error
    lists each URL with its reason. Nothing is left under the final name unless verified.
    """
    dest_dir = Path(dest_dir)
    dest = dest_dir / entry.name
    if dest.exists():
        _verify_present(dest, entry, "delete the file to download it again")
        return dest
    dest_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in candidate_urls(entry, base_url):
        try:
            _stream(url, entry, dest, timeout)
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
        f"{dest}: could not download {entry.name}; tried "
        + "; ".join(errors)
        + f". Without network, place the verified file at {dest} yourself."
    )


def copy_local(
    entry: FileSpec, local_dir: str | os.PathLike[str], dest_dir: str | os.PathLike[str]
) -> tuple[Path, str]:
    """Copy ``entry`` from the user's folder ``local_dir`` into ``dest_dir``, verified.

    Looks for ``{local_dir}/{entry.name}``, else (gzip entries with ``content_md5``) for the
    uncompressed ``{local_dir}/{name without .gz}``, which is gzip-compressed on the way in.
    The copy goes to a temporary file beside the target, is verified (own checksum, else the
    decompressed content's md5), then renamed; ``local_dir`` is only read. An existing target
    is verified and kept. Returns ``(path, how)`` with ``how`` in archive / content.
    """
    local_dir, dest_dir = Path(local_dir), Path(dest_dir)
    dest = dest_dir / entry.name
    if dest.exists():
        return dest, _verify_present(dest, entry, f"delete the file to copy it again from {local_dir}")
    src = local_dir / entry.name
    raw = local_dir / entry.name.removesuffix(".gz")
    compress = False
    if not src.is_file():
        if entry.content_md5 and entry.name.endswith(".gz") and raw.is_file():
            got = file_digest(raw, "md5")
            if got != entry.content_md5.lower():
                raise DataError(
                    f"{raw}: md5 {got} does not match the standard content of {entry.name} "
                    f"({entry.content_md5.lower()}); wrong, truncated or corrupt file"
                )
            src, compress = raw, True
        else:
            also = f" (or the uncompressed {raw.name})" if entry.content_md5 else ""
            raise DataError(
                f"{src}: file not found; datasets.<name>.local names {local_dir}, which must "
                f"hold {entry.name}{also}"
            )
    dest_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as fh:
            if compress:
                with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
                    shutil.copyfileobj(fh, gz, CHUNK)
            else:
                shutil.copyfileobj(fh, out, CHUNK)
        try:
            how = verify_file(tmp, entry)
        except DataError as exc:
            raise DataError(str(exc).replace(str(tmp), str(src), 1)) from None
        _publish(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    log.info("copied %s to %s, verified by its %s checksum", src, dest, how)
    return dest, how


def fetch_all(
    entries: Iterable[FileSpec],
    dest_dir: str | os.PathLike[str],
    base_url: str = "",
    local: str | os.PathLike[str] = "",
) -> dict[str, Path]:
    """Fetch every entry (or copy it from the folder ``local``); return ``{name: path}``."""
    if local:
        return {s.name: copy_local(s, local, dest_dir)[0] for s in entries}
    return {s.name: fetch(s, dest_dir, base_url) for s in entries}
