"""Downloads: file:// URLs, mirror, checksums, truncated gzip, offline message, atomicity."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from fedclust.data.download import fetch
from fedclust.data.registry import Remote, remote, xena_files
from fedclust.errors import ConfigError, DownloadError


def _gz(tmp_path, name="f.tsv.gz", text="a\tb\n1\t2\n" * 200):
    path = tmp_path / "src" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_file_url_good_checksum(tmp_path):
    src = _gz(tmp_path)
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    dest = tmp_path / "cache" / "f.tsv.gz"
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "f.tsv.gz.partial").write_bytes(b"stale garbage from an old attempt")
    fetch(Remote("toy", "f.tsv.gz", src.as_uri(), sha256=sha), dest, retries=1)
    assert dest.read_bytes() == src.read_bytes()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["f.tsv.gz"]  # no partial/temp left


def test_file_url_bad_checksum(tmp_path):
    src = _gz(tmp_path)
    dest = tmp_path / "cache" / "f.tsv.gz"
    with pytest.raises(DownloadError, match="checksum mismatch for f.tsv.gz of dataset 'toy'"):
        fetch(Remote("toy", "f.tsv.gz", src.as_uri(), sha256="0" * 64), dest, retries=1)
    assert not dest.exists() and not list(dest.parent.glob("*.partial"))


def test_md5_checksum_mismatch(tmp_path):
    src = _gz(tmp_path)
    with pytest.raises(DownloadError, match="md5"):
        fetch(Remote("toy", "f.tsv.gz", src.as_uri(), md5="0" * 32), tmp_path / "d.gz", retries=1)


def test_truncated_gzip(tmp_path):
    src = _gz(tmp_path)
    src.write_bytes(src.read_bytes()[: len(src.read_bytes()) // 2])
    dest = tmp_path / "cache" / "f.tsv.gz"
    with pytest.raises(DownloadError, match="truncated or not valid gzip"):
        fetch(Remote("toy", "f.tsv.gz", src.as_uri()), dest, retries=1)
    assert not dest.exists()


def test_corrupt_gzip(tmp_path):
    src = tmp_path / "x.gz"
    src.write_bytes(b"this is not gzip at all")
    with pytest.raises(DownloadError, match="not valid gzip"):
        fetch(Remote("toy", "x.gz", src.as_uri()), tmp_path / "out.gz", retries=1)


def test_mirror_good_and_missing(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "t.tsv").write_text("x\n1\n")
    sha = hashlib.sha256(b"x\n1\n").hexdigest()
    r = Remote("toy", "t.tsv", "https://example.invalid/t.tsv", sha256=sha)
    out = fetch(r, tmp_path / "dl" / "toy" / "t.tsv", mirror=mirror)
    assert out.read_text() == "x\n1\n"
    with pytest.raises(DownloadError, match="the data mirror has no copy of u.tsv"):
        fetch(
            Remote("toy", "u.tsv", "https://example.invalid/u.tsv"), tmp_path / "u", mirror=mirror
        )


def test_offline_without_mirror_names_dataset_url_and_ways_out(tmp_path):
    url = "http://127.0.0.1:9/TCGA-BRCA.star_counts.tsv.gz"  # discard port: refused at once
    r = Remote("tcga", "TCGA-BRCA.star_counts.tsv.gz", url)
    with pytest.raises(DownloadError) as err:
        fetch(r, tmp_path / "x.gz", retries=2, backoff=0.0, timeout=2)
    msg = str(err.value)
    assert "dataset 'tcga'" in msg and url in msg and "after 2 attempts" in msg
    assert "FEDCLUST_DATA_MIRROR" in msg and "data.mirror" in msg
    assert "config/config.yaml" in msg
    assert not (tmp_path / "x.gz").exists()


def test_registry_unknown_dataset_and_file():
    with pytest.raises(ConfigError, match="unknown dataset 'euromds'"):
        remote("euromds", "x.csv")
    with pytest.raises(ConfigError, match="has no upstream file 'nope.tsv'"):
        remote("ipssm", "nope.tsv")
    counts, clin = xena_files("BRCA")
    assert counts.url == (
        "https://gdc-hub.s3.us-east-1.amazonaws.com/download/TCGA-BRCA.star_counts.tsv.gz"
    )
    assert clin.mirror_path == "tcga/TCGA-BRCA.clinical.tsv.gz"


def test_ipssm_from_mirror_verifies_sha256(tmp_path, mirror):
    if not (mirror / "ipssm" / "df_clinical.tsv").is_file():
        pytest.skip("IPSS-M not in the mirror")
    out = fetch(remote("ipssm", "df_clinical.tsv"), tmp_path / "df_clinical.tsv", mirror=mirror)
    assert sum(1 for _ in out.open()) == 2958  # header + 2957 patients


def test_http_resume_with_range(tmp_path):
    """A partial download is resumed with an HTTP Range request (206), then verified."""
    import http.server
    import random
    import threading

    payload = gzip.compress(random.Random(0).randbytes(5000))
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            rng = self.headers.get("Range")
            seen.append(rng)
            start = int(rng.split("=")[1].rstrip("-")) if rng else 0
            self.send_response(206 if rng else 200)
            self.send_header("Content-Length", str(len(payload) - start))
            self.end_headers()
            self.wfile.write(payload[start:])

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dest = tmp_path / "f.gz"
        (tmp_path / "f.gz.partial").write_bytes(payload[:100])
        url = f"http://127.0.0.1:{server.server_port}/f.gz"
        sha = hashlib.sha256(payload).hexdigest()
        fetch(Remote("toy", "f.gz", url, sha256=sha), dest, retries=1)
    finally:
        server.shutdown()
    assert seen == ["bytes=100-"] and dest.read_bytes() == payload
