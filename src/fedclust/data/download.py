"""Fetch upstream files into the download cache: mirror or network, retries, resume, checksums.

Order of sources: the offline mirror (``data.mirror`` / ``FEDCLUST_DATA_MIRROR``; a folder laid
out like ``../shared/data``) when set, else the URL (``http(s)://`` or ``file://``). The bytes go
to ``<dest>.partial`` (kept between attempts so an HTTP download can resume with a Range request),
are verified (sha256/md5 when registered, full gzip decode for ``.gz``) and only then renamed into
place with :func:`fedclust.io.atomic_path` — an interrupted download never looks complete.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from ..errors import DownloadError
from ..io import atomic_path
from .registry import Remote

log = logging.getLogger(__name__)
CHUNK = 1 << 20


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, read in chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def check_gzip(path: str | os.PathLike, where: str) -> None:
    """Decode a whole gzip file; a truncated or corrupt one raises :class:`DownloadError`."""
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(CHUNK):
                pass
    except (EOFError, OSError, zlib.error) as err:
        raise DownloadError(
            f"the downloaded file is truncated or not valid gzip ({err})",
            where=where,
            fix="delete it and run the download again (or refresh the mirror copy)",
        ) from None


def verify(path: Path, remote: Remote, where: str) -> None:
    """Checksum (when registered) and gzip integrity of a fetched file."""
    for algo, expected in (("sha256", remote.sha256), ("md5", remote.md5)):
        if expected:
            got = file_digest(path, algo)
            if got != expected:
                raise DownloadError(
                    f"checksum mismatch for {remote.name} of dataset '{remote.dataset}': "
                    f"{algo} {got}, expected {expected}",
                    where=where,
                    fix="the file is corrupt or a different version: delete it and fetch it "
                    "again from the upstream URL or a correct mirror copy",
                )
    if remote.name.endswith(".gz"):
        check_gzip(path, where)


def _ways_out(remote: Remote) -> str:
    return (
        f"either set config data.mirror (or env FEDCLUST_DATA_MIRROR) to a folder holding "
        f"'{remote.mirror_path}', or run the default offline config (config/config.yaml), "
        f"which needs no download"
    )


def _stream(url: str, partial: Path, timeout: float) -> None:
    """Stream ``url`` into ``partial``, resuming with an HTTP Range request if it exists."""
    start = partial.stat().st_size if partial.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "fedclust"})
    if start and url.startswith("http"):
        req.add_header("Range", f"bytes={start}-")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        resumed = start and getattr(resp, "status", 200) == 206
        with open(partial, "ab" if resumed else "wb") as out:
            shutil.copyfileobj(resp, out, CHUNK)


def fetch(
    remote: Remote,
    dest: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 2.0,
) -> Path:
    """Fetch ``remote`` to ``dest`` (from ``mirror`` if given, else its URL) and verify it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    if mirror is not None:
        src = Path(mirror) / remote.mirror_path
        if not src.is_file():
            raise DownloadError(
                f"the data mirror has no copy of {remote.name} (dataset '{remote.dataset}')",
                where=str(src),
                fix=f"put the upstream file {remote.url} there, or unset data.mirror/"
                "FEDCLUST_DATA_MIRROR to download it, or use the default config",
            )
        log.info("copying %s from the mirror %s", remote.name, src)
        shutil.copyfile(src, partial)
        where = str(src)
    else:
        where = remote.url
        last: Exception | None = None
        for attempt in range(1, retries + 1):
            try:
                log.info("downloading %s (attempt %d/%d)", remote.url, attempt, retries)
                _stream(remote.url, partial, timeout)
                last = None
                break
            except (urllib.error.URLError, OSError, TimeoutError) as err:
                last = err
                log.warning("download of %s failed: %s", remote.url, err)
                if attempt < retries:
                    time.sleep(backoff * 2 ** (attempt - 1))
        if last is not None:
            raise DownloadError(
                f"could not download dataset '{remote.dataset}' file {remote.name} after "
                f"{retries} attempts ({last})",
                where=remote.url,
                fix=_ways_out(remote),
            )
    try:
        verify(partial, remote, where)
    except DownloadError:
        partial.unlink(missing_ok=True)
        raise
    with atomic_path(dest) as tmp:
        os.replace(partial, tmp)
    log.info("fetched %s -> %s", remote.name, dest)
    return dest
