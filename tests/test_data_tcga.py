"""TCGA Xena parsing: log2 inversion, integer checks, sample filter, TSS → region."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from fedclust.config import load_yaml
from fedclust.data.simulate import simulate_rnaseq, write_simulated_site_table
from fedclust.data.tcga import (
    REGIONS,
    counts_from_log2,
    load_xena_cohort,
    read_xena_clinical,
    read_xena_counts,
    select_primary,
    tss_table,
)
from fedclust.errors import InputDataError

# The TSS → region tables (real and simulated) are tested in tests/test_data_sites.py.


@pytest.fixture
def sites(tmp_path, repo) -> str:
    """The default config's simulated site table, written as the rule simulate_tss_sites does."""
    path = str(tmp_path / "tss_sites.csv")
    write_simulated_site_table(
        path, load_yaml(repo / "config" / "config.yaml")["data"]["rnaseq"]["sites"]
    )
    return path


def _write_counts(path, counts: dict[str, list[float]], genes, fmt="%.10g", raw=False):
    df = pd.DataFrame(counts, index=pd.Index(genes, name="Ensembl_ID"))
    if not raw:
        df = np.log2(df + 1.0)
    df.to_csv(path, sep="\t", compression="gzip", float_format=fmt)


def test_counts_roundtrip_exact(tmp_path):
    truth = {"TCGA-05-4244-01A": [0, 1, 7, 1000, 123456], "TCGA-A1-A0SB-01A": [3, 0, 0, 5, 9]}
    path = tmp_path / "TCGA-X.star_counts.tsv.gz"
    _write_counts(path, truth, [f"ENSG0000000000{i}.1" for i in range(5)])
    counts = read_xena_counts(str(path))
    assert counts.dtypes.unique().tolist() == [np.dtype("int64")]
    assert counts.loc["TCGA-05-4244-01A"].tolist() == [0, 1, 7, 1000, 123456]
    assert counts.columns[0] == "ENSG00000000000.1"


def test_non_integer_counts_rejected(tmp_path):
    path = tmp_path / "c.tsv.gz"
    _write_counts(path, {"TCGA-05-4244-01A": [0, 2.5, 7]}, ["g1", "g2", "g3"])
    with pytest.raises(InputDataError, match=r"1 values are not log2\(integer \+ 1\)"):
        read_xena_counts(str(path))


def test_negative_counts_rejected():
    values = np.log2(np.array([[3.0, 0.1]]))  # count 0.1 - 1 = -0.9
    with pytest.raises(InputDataError, match="negative count"):
        counts_from_log2(values, where="x")


def test_missing_sex_column(tmp_path):
    path = tmp_path / "clin.tsv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("sample\tage\nTCGA-05-4244-01A\t60\n")
    with pytest.raises(InputDataError, match="no sex column"):
        read_xena_clinical(str(path))
    with gzip.open(path, "wt") as fh:
        fh.write("barcode\tgender.demographic\nTCGA-05-4244-01A\tmale\n")
    with pytest.raises(InputDataError, match="no 'sample' column"):
        read_xena_clinical(str(path))


def test_primary_one_per_patient():
    b = [
        "TCGA-05-4244-11A",  # solid normal
        "TCGA-05-4244-01B",
        "TCGA-05-4244-01A",
        "TCGA-A1-A0SB-06A",  # metastasis
        "TCGA-A1-A0SC-01A",
    ]
    assert select_primary(b) == ["TCGA-05-4244-01A", "TCGA-A1-A0SC-01A"]


def test_simulated_cohort_through_the_xena_parser(tmp_path, sites):
    c, k = str(tmp_path / "c.tsv.gz"), str(tmp_path / "k.tsv.gz")
    table = tss_table(sites)
    simulate_rnaseq(
        c, k, "SIMX", seed=3, sites=table, n_samples=60, n_genes=80, extra_sample_fraction=0.2
    )
    raw = pd.read_csv(c, sep="\t", index_col=0)
    assert raw.index.name == "Ensembl_ID" and raw.shape[1] > 60  # extra 01B / 11A samples
    counts, obs = load_xena_cohort(c, k, sites)
    assert counts.shape == (60, 80)
    assert all(s.endswith("-01A") for s in counts.index)
    assert list(obs.columns) == ["tss", "center", "sex", "true_cluster"]
    assert set(obs["center"]) <= set(REGIONS) and obs["center"].nunique() >= 4
    assert (obs["center"] == table.loc[obs["tss"], "Region"].to_numpy()).all()
    assert set(obs["sex"]) <= {"female", "male", "NA"}
    assert obs["true_cluster"].nunique() == 4
    lib = counts.sum(axis=1)
    assert lib.std() / lib.mean() > 0.2  # library-size variation (log-normal sd 0.4)
    # the parsed integers are exactly the simulated ones (file written with 10 digits)
    assert np.array_equal(np.rint(np.exp2(raw[counts.index].T.to_numpy()) - 1), counts.to_numpy())
    again, _ = load_xena_cohort(*_resim(tmp_path, table), sites)
    assert again.equals(counts)  # same seed → identical cohort


def _resim(tmp_path, table):
    c, k = str(tmp_path / "c2.tsv.gz"), str(tmp_path / "k2.tsv.gz")
    simulate_rnaseq(
        c, k, "SIMX", seed=3, sites=table, n_samples=60, n_genes=80, extra_sample_fraction=0.2
    )
    return c, k


def test_non_numeric_counts_rejected(tmp_path):
    path = tmp_path / "c.tsv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("Ensembl_ID\tTCGA-05-4244-01A\ng1\t1.0\ng2\thigh\n")
    with pytest.raises(InputDataError, match="non-numeric values"):
        read_xena_counts(str(path))


def test_simulated_sex_signal_is_planted_and_switchable(tmp_path, sites):
    """The attacks need a sex signal: male − female log expression differs by 2·sex_lfc on the
    sex genes and by ~0 elsewhere; sex_genes=0 removes it."""

    def gap(**kw):
        c, k = str(tmp_path / "c.tsv.gz"), str(tmp_path / "k.tsv.gz")
        simulate_rnaseq(
            c, k, "SIMS", seed=4, sites=tss_table(sites), n_samples=200, n_genes=100, **kw
        )
        counts, obs = load_xena_cohort(c, k, sites)
        logc = np.log1p(counts.to_numpy() / counts.sum(axis=1).to_numpy()[:, None] * 1e6)
        male, female = (obs["sex"] == "male").to_numpy(), (obs["sex"] == "female").to_numpy()
        return np.sort(logc[male].mean(0) - logc[female].mean(0))[::-1]

    d = gap(sex_genes=5, sex_lfc=1.5)
    assert d[:5].min() > 1.5 and np.abs(d[10:]).max() < 1.0
    assert gap(sex_genes=0)[0] < 1.0
