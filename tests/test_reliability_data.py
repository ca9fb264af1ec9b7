"""Issue 17, data items: edited caches, bad inputs and broken downloads fail loudly.

Test names carry the issue item number (``test_item04_...``).
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import random
import shutil
import threading

import numpy as np
import pandas as pd
import pytest

from fedclust.data.download import fetch
from fedclust.data.mds import load_ipssm
from fedclust.data.registry import REGISTRY, Remote, remote
from fedclust.data.tcga import counts_from_log2, read_xena_counts
from fedclust.errors import DownloadError, InputDataError

# ---- item 4: pinned sha256 for every upstream file, checked where the files are read ----------


def test_item04_every_upstream_file_pins_sha256_or_is_locked():
    for dataset, files in REGISTRY.items():
        for r in files.values():
            # no published sha256 (Xena; md5-only glyph files): recorded in the lock file on
            # first download and checked from then on (pin_sha256)
            assert r.sha256 or dataset == "tcga" or (r.md5 and len(r.md5) == 32), r
            if r.sha256:
                assert len(r.sha256) == 64 and int(r.sha256, 16) >= 0


def test_item04_xena_sha256_recorded_on_first_download_and_change_fails(tmp_path):
    from fedclust.data.download import lock_path_for, read_lock, verify_downloads

    name = "TCGA-BRCA.clinical.tsv.gz"
    src = tmp_path / "up" / name
    src.parent.mkdir()
    src.write_bytes(gzip.compress(b"sample\tgender.demographic\nTCGA-AA-0001-01A\tmale\n"))
    dest = tmp_path / "dl" / "tcga" / name
    r = Remote("tcga", name, src.as_uri())
    fetch(r, dest, retries=1, lock=lock_path_for(dest))
    lock = tmp_path / "dl" / "sha256.lock"
    assert read_lock(lock) == {f"tcga/{name}": hashlib.sha256(src.read_bytes()).hexdigest()}
    verify_downloads([dest])  # unchanged: passes
    dest.unlink()
    fetch(r, dest, retries=1, lock=lock_path_for(dest))  # same bytes again: fine
    # upstream re-generates the file: the next download fails instead of mixing versions
    src.write_bytes(gzip.compress(b"sample\tgender.demographic\nTCGA-AA-0001-01A\tfemale\n"))
    dest.unlink()
    with pytest.raises(DownloadError, match="differs from the copy first downloaded"):
        fetch(r, dest, retries=1, lock=lock_path_for(dest))
    assert not dest.exists()


def test_item04_edited_xena_cache_fails_where_read(tmp_path):
    from fedclust.data.download import lock_path_for, verify_downloads

    name = "TCGA-BRCA.clinical.tsv.gz"
    dest = tmp_path / "dl" / "tcga" / name
    dest.parent.mkdir(parents=True)
    dest.write_bytes(gzip.compress(b"sample\tgender\nTCGA-AA-0001-01A\tmale\n"))
    with pytest.raises(DownloadError, match="no pinned sha256"):  # not fetched by the rule
        verify_downloads([dest])
    lock = lock_path_for(dest)
    lock.write_text(f"tcga/{name}\t{hashlib.sha256(dest.read_bytes()).hexdigest()}\n")
    verify_downloads([dest, tmp_path / "results" / "simulated.tsv.gz"])  # simulated: skipped
    dest.write_bytes(gzip.compress(b"sample\tgender\nTCGA-AA-0001-01A\tfemale\n"))
    with pytest.raises(DownloadError, match="modified after its download"):
        verify_downloads([dest])


def test_item04_flipped_ipssm_mutation_column_fails_where_read(tmp_path, mirror):
    """The issue's case: TP53 flipped in the cached df_mut.tsv gave 0.89 instead of 0.11."""
    if not (mirror / "ipssm" / "df_mut.tsv").is_file():
        pytest.skip("IPSS-M not in the mirror")
    dl = tmp_path / "dl" / "ipssm"
    paths = [
        fetch(remote("ipssm", f"df_{k}.tsv"), dl / f"df_{k}.tsv", mirror=mirror)
        for k in ("clinical", "mut", "cna")
    ]
    mut = pd.read_csv(paths[1], sep="\t", index_col=0)
    mut["TP53"] = 1 - mut["TP53"]
    mut.to_csv(paths[1], sep="\t")
    with pytest.raises(DownloadError, match="df_mut.tsv .*modified after its download"):
        load_ipssm(*paths)


# ---- items 5 and 6: IPSS-M columns, IDs, survival -------------------------------------------


def _ipssm(tmp_path, mutate=None):
    from fedclust.data.mds import CYTO_MAP, IPSSM_GENES

    ids = pd.Index([f"p{i}" for i in range(6)], name="ID")
    clin = pd.DataFrame(
        {
            "IPSSM": ["Low"] * 6,
            "OS_YEARS": [0.0, 1.0, 2.5, 3.0, np.nan, 4.0],
            "OS_STATUS": [1, 0, 1, 0, np.nan, 1],
            "LFS_YEARS": [0.5, 1.0, 2.0, 3.0, 1.0, 4.0],
            "LFS_STATUS": [1, 0, 0, 0, 1, 1],
        },
        index=ids,
    )
    mut = pd.DataFrame(0, index=ids, columns=IPSSM_GENES)
    cna = pd.DataFrame(0, index=ids, columns=sorted({c for v in CYTO_MAP.values() for c in v}))
    if mutate:
        clin, mut, cna = mutate(clin, mut, cna)
    paths = []
    for name, df in (("clinical", clin), ("mut", mut), ("cna", cna)):
        paths.append(tmp_path / f"df_{name}.tsv")
        df.to_csv(paths[-1], sep="\t")
    return paths


def test_item05_ipssm_fixture_is_valid(tmp_path):
    feats, obs, _ = load_ipssm(*_ipssm(tmp_path))
    assert feats.shape == (6, 49)


def test_item05_missing_gene_column_fails(tmp_path):
    paths = _ipssm(tmp_path, lambda c, m, k: (c, m.drop(columns=["TP53"]), k))
    with pytest.raises(InputDataError, match="missing column\\(s\\) TP53") as e:
        load_ipssm(*paths)
    assert "df_mut.tsv" in str(e.value)


def test_item05_mismatched_patient_ids_fail_naming_file_and_ids(tmp_path):
    def rename(c, m, k):
        return c, m.rename(index={"p4": "x4", "p5": "x5"}), k

    with pytest.raises(InputDataError, match="2 patient ID\\(s\\).*first: p4, p5") as e:
        load_ipssm(*_ipssm(tmp_path, rename))
    assert "df_mut.tsv" in str(e.value)
    with pytest.raises(InputDataError, match="first: p5"):
        load_ipssm(*_ipssm(tmp_path, lambda c, m, k: (c, m, k.drop(index="p5"))))
    # same patients in another order is fine (aligned to the clinical file)
    feats, obs, _ = load_ipssm(*_ipssm(tmp_path, lambda c, m, k: (c, m.iloc[::-1], k)))
    assert list(feats.index) == [f"p{i}" for i in range(6)]


@pytest.mark.parametrize(
    ("col", "value", "match"),
    [
        ("OS_YEARS", -1.0, "OS_YEARS.*\\[0, 100\\] years.*p2 = -1"),
        ("LFS_YEARS", 420.0, "LFS_YEARS.*p2"),
        ("OS_STATUS", 2, "OS_STATUS.*0 \\(censored\\) or 1"),
        ("LFS_STATUS", -1, "LFS_STATUS"),
    ],
)
def test_item06_bad_survival_values_rejected(tmp_path, col, value, match):
    def bad(c, m, k):
        c = c.copy()
        c.loc["p2", col] = value
        return c, m, k

    with pytest.raises(InputDataError, match=match):
        load_ipssm(*_ipssm(tmp_path, bad))


# ---- item 7: implausible Xena counts ----------------------------------------------------------


@pytest.mark.parametrize("stored", [63.0, 62.99, 40.0])
def test_item07_implausible_xena_counts_rejected_with_row_and_column(tmp_path, stored):
    df = pd.DataFrame(
        {"TCGA-AA-0001-01A": [1.0, 2.0], "TCGA-AA-0002-01A": [3.0, stored]},
        index=pd.Index(["ENSG1", "ENSG2"], name="Ensembl_ID"),
    )
    path = tmp_path / "c.tsv.gz"
    df.to_csv(path, sep="\t")
    with pytest.raises(InputDataError, match="implausible count") as e:
        read_xena_counts(str(path))
    assert "ENSG2" in str(e.value) and "TCGA-AA-0002-01A" in str(e.value)
    ok = counts_from_log2(np.log2(np.array([[0.0, 1e6, 2.0**31]]) + 1), where="x")
    assert ok.tolist() == [[0, 1_000_000, 2**31]]


# ---- items 9 and 10: short reads and stale partials ----------------------------------------


def _serve(payload, short_first=False, honour_416=True):
    seen: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            rng = self.headers.get("Range")
            seen.append(rng)
            start = int(rng.split("=")[1].rstrip("-")) if rng else 0
            if start >= len(payload) and honour_416:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(payload)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206 if rng else 200)
            if rng:
                self.send_header(
                    "Content-Range", f"bytes {start}-{len(payload) - 1}/{len(payload)}"
                )
            self.send_header("Content-Length", str(len(payload) - start))
            self.send_header("Connection", "close")
            self.end_headers()
            body = payload[start:]
            if short_first and len(seen) == 1:
                body = body[: len(body) // 2]  # the connection drops mid-stream
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def test_item09_short_read_detected_retried_and_resumed(tmp_path):
    payload = gzip.compress(random.Random(1).randbytes(20000))
    server, seen = _serve(payload, short_first=True)
    try:
        url = f"http://127.0.0.1:{server.server_port}/f.gz"
        r = Remote("toy", "f.gz", url, sha256=hashlib.sha256(payload).hexdigest())
        dest = fetch(r, tmp_path / "f.gz", retries=2, backoff=0)
    finally:
        server.shutdown()
    half = (len(payload)) // 2
    assert seen == [None, f"bytes={half}-"]  # the second attempt resumes
    assert dest.read_bytes() == payload


def test_item09_short_read_without_retries_says_short_read(tmp_path):
    payload = gzip.compress(random.Random(2).randbytes(20000))
    server, _ = _serve(payload, short_first=True)
    try:
        url = f"http://127.0.0.1:{server.server_port}/f.gz"
        r = Remote("toy", "f.gz", url, sha256=hashlib.sha256(payload).hexdigest())
        with pytest.raises(DownloadError, match="short read") as e:
            fetch(r, tmp_path / "f.gz", retries=1, backoff=0)
    finally:
        server.shutdown()
    assert "checksum mismatch" not in str(e.value)
    assert (tmp_path / "f.gz.partial").stat().st_size == len(payload) // 2  # kept: resumable


@pytest.mark.parametrize("extra", [0, 50])  # a complete partial (416), an oversized one
def test_item10_stale_partial_starts_again(tmp_path, extra):
    payload = gzip.compress(random.Random(3).randbytes(5000))
    server, seen = _serve(payload)
    try:
        (tmp_path / "f.gz.partial").write_bytes(payload + b"x" * extra)
        url = f"http://127.0.0.1:{server.server_port}/f.gz"
        r = Remote("toy", "f.gz", url, sha256=hashlib.sha256(payload).hexdigest())
        dest = fetch(r, tmp_path / "f.gz", retries=1, backoff=0)
    finally:
        server.shutdown()
    assert seen == [f"bytes={len(payload) + extra}-", None]
    assert dest.read_bytes() == payload and not (tmp_path / "f.gz.partial").exists()


def test_item04_mirror_copy_also_recorded(tmp_path):
    """A TCGA file copied from a mirror is locked too (mirror and network give one version)."""
    from fedclust.data.download import lock_path_for, read_lock

    name = "TCGA-READ.clinical.tsv.gz"
    mirror = tmp_path / "mirror"
    (mirror / "tcga").mkdir(parents=True)
    (mirror / "tcga" / name).write_bytes(gzip.compress(b"sample\n"))
    dest = tmp_path / "dl" / "tcga" / name
    fetch(remote("tcga", name), dest, mirror=mirror, lock=lock_path_for(dest))
    assert f"tcga/{name}" in read_lock(tmp_path / "dl" / "sha256.lock")
    shutil.rmtree(tmp_path / "dl" / "tcga")
