"""Simulators for the offline default config (documented in the report as simulated data).

* :func:`simulate_rnaseq` writes a TCGA-like cohort **in the exact UCSC Xena format** (log2(count+1)
  ``star_counts.tsv.gz`` with real-looking barcodes and a ``clinical.tsv.gz``), so the default
  config runs the same parser, sample filter and TSS → region mapping as the real data.
  Counts are negative binomial with cluster structure (cluster-specific log fold changes on a
  subset of genes), per-center batch effects and log-normal library-size variation — so size
  factors and VST matter. TSS codes are drawn from a TSS → region table with unequal weights,
  giving realistic unequal region centers: in the workflow the *simulated site table*
  (:func:`simulated_site_table`, config ``data.rnaseq.sites``: per region a number of synthetic
  sites and a share of the samples, both summarising the real TCGA table, seed 001 §3.1.1).
* :func:`simulate_mds` gives an MDS-like cohort (seed 000 §2.5): binary mutations/cytogenetics
  from a Bernoulli mixture with k components, injected NaNs, and Weibull OS / LFS times with
  cluster-dependent hazards and uniform censoring.
"""

from __future__ import annotations

import string

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..io import atomic_path, write_table
from ..seeds import rng as make_rng
from .tcga import REGIONS

# Seed 000 Table 3.1 (row-major): the 54 EUROMDS model inputs, used as simulated feature names.
TABLE_3_1 = [
    "ICHR17qort17p", "IDH2", "ETV6", "PIGA", "SF3B1", "ATRX",
    "IDH1", "NOTCH1", "LOCHR13OD13q", "ASXL1", "FLT3", "BCOR",
    "LOCHR5OD5qPLUSother", "BCORL1", "TET2", "ZRSR2", "DNMT3A", "LOCHR12OD12P12p",
    "RUNX1", "SMC1A", "LOCHR20OD20q", "MPL", "BRAF", "idicXq13",
    "NRAS", "NF1", "SMC3", "PHF6", "LOCHR7OD7q", "LOCHR9OD9q",
    "EZH2", "U2AF1", "GNAS", "WT1", "GNB1", "RAD21",
    "SRSF2", "TP53", "CBL", "KRAS", "FBXW7", "del5q",
    "LOCHR11OD11q", "PTPN11", "GATA2", "KIT", "NPM1", "GOCHR8",
    "JAK2", "LOCHRY", "PRPF40B", "CEBPA", "CBLB", "STAG2",
]  # fmt: skip


#: characters of the synthetic TSS codes, in sort order (as real codes: digits and capitals)
CODE_ALPHABET = string.digits + string.ascii_uppercase
SITE_COLUMNS = ["TSS Code", "Source Site", "Country", "State", "Region"]


def simulated_site_table(sites: dict) -> pd.DataFrame:
    """The simulated TSS table: per region (in :data:`REGIONS` order) ``sites[region]["sites"]``
    synthetic sites with unique 2-character codes ``00``, ``01``, … (base 36, in sort order),
    in the columns of the real table (``TSS Code`` as column, as in the file).

    ``sites`` is config ``data.rnaseq.sites`` ({region: {sites, share}}): the numbers summarise
    the real TSS → region table (the number of its TSS codes per region); the codes and site
    names are synthetic and mean nothing in the real table.
    """
    unknown = sorted(set(sites) - set(REGIONS))
    counts = [int(sites[r]["sites"]) for r in REGIONS if r in sites]
    if unknown or not counts or min(counts) < 1 or sum(counts) > len(CODE_ALPHABET) ** 2:
        raise ConfigError(
            f"bad simulated site table {sites!r}",
            where="data.rnaseq.sites",
            fix=f"give regions among {list(REGIONS)}, each with sites >= 1 "
            f"(at most {len(CODE_ALPHABET) ** 2} sites in all: unique 2-character codes)",
        )
    rows, n = [], 0
    for region in (r for r in REGIONS if r in sites):
        for j in range(int(sites[region]["sites"])):
            code = CODE_ALPHABET[n // len(CODE_ALPHABET)] + CODE_ALPHABET[n % len(CODE_ALPHABET)]
            rows.append(
                [code, f"simulated {region} site {j + 1}", "simulated", "simulated", region]
            )
            n += 1
    return pd.DataFrame(rows, columns=SITE_COLUMNS)


def write_simulated_site_table(path: str, sites: dict) -> None:
    """Write :func:`simulated_site_table` as CSV (read by :func:`fedclust.data.tcga.tss_table`)."""
    with atomic_path(path) as tmp:
        simulated_site_table(sites).to_csv(tmp, index=False)


def site_shares(sites: dict) -> dict[str, float]:
    """Region → configured share of the samples (``data.rnaseq.sites.<region>.share``)."""
    return {r: float(sites[r]["share"]) for r in REGIONS if r in sites}


def tss_region_shares(table: pd.DataFrame) -> dict[str, float]:
    """Share of each region among the TSS codes of a TSS → region table (:func:`tss_table`).

    Of the real table: South 26 %, Northeast 20 %, Midwest 19 %, West 14 %, Europe 9 %, Canada
    6 %, Other 6 % — the smallest and biggest center then hold 6 % and 26 % of a cohort, inside
    the ranges the thesis reports for the real cohorts (smallest 0.59–7.9 %, biggest 22–58 %,
    seed 001 §3.1.1). The defaults of ``data.rnaseq.sites`` are these numbers.
    """
    counts = table["Region"].value_counts()
    return {r: float(counts.get(r, 0)) / float(counts.sum()) for r in REGIONS}


def _site_weights(
    gen: np.random.Generator,
    shape: str,
    tss_per_region: int,
    region_weights: dict | None,
    table: pd.DataFrame,
    region_shares: dict | None = None,
) -> tuple[list, np.ndarray]:
    """TSS codes and their sampling weights: ``random`` (hard case) or ``tcga`` (region shares:
    ``region_weights``, else ``region_shares``, else the table's share of codes per region)."""
    codes: list = []
    if shape == "random":
        for region in REGIONS:
            pool = sorted(table.index[table["Region"] == region])
            if pool:
                codes += list(gen.choice(pool, size=min(tss_per_region, len(pool)), replace=False))
        return codes, gen.dirichlet(np.full(len(codes), 0.8))
    if shape != "tcga":
        raise ConfigError(
            f"unknown simulator shape {shape!r}",
            where="data.rnaseq.simulate.shape",
            fix="use 'tcga' (TCGA-like region shares) or 'random' (the hard case)",
        )
    shares = dict(region_weights or region_shares or tss_region_shares(table))
    unknown = sorted(set(shares) - set(REGIONS))
    if unknown or sum(shares.values()) <= 0 or min(shares.values()) < 0:
        raise ConfigError(
            f"bad region weights {shares!r}",
            where="data.rnaseq.simulate.region_weights",
            fix=f"give non-negative weights (not all 0) for regions among {list(REGIONS)}",
        )
    total = float(sum(shares.values()))
    weights = []
    for region in REGIONS:
        share = shares.get(region, 0.0) / total
        if share <= 0:
            continue
        pool = sorted(table.index[table["Region"] == region])
        if not pool:
            raise ConfigError(
                f"region {region} has a share of the samples but no site in the site table",
                where="data.rnaseq.sites",
                fix=f"give {region} sites >= 1, or share 0",
            )
        pick = list(gen.choice(pool, size=min(tss_per_region, len(pool)), replace=False))
        codes += pick
        weights += list(share * gen.dirichlet(np.full(len(pick), 2.0)))
    return codes, np.asarray(weights) / np.sum(weights)


def _barcodes(
    n: int,
    gen: np.random.Generator,
    tss_per_region: int,
    table: pd.DataFrame,
    shape: str = "random",
    region_weights: dict | None = None,
    region_shares: dict | None = None,
) -> tuple[list[str], list]:
    """``n`` unique patients with TSS codes drawn unequally from the TSS table (all regions)."""
    codes, weights = _site_weights(gen, shape, tss_per_region, region_weights, table, region_shares)
    site = gen.choice(len(codes), size=n, p=weights)
    alphabet = np.array(list(string.ascii_uppercase[:26] + string.digits))
    seen: set[str] = set()
    out = []
    for i in range(n):
        while True:
            part = "".join(gen.choice(alphabet, size=4))
            key = f"{codes[site[i]]}-{part}"
            if key not in seen:
                seen.add(key)
                break
        out.append(f"TCGA-{key}")
    return out, [codes[s] for s in site]


def simulate_rnaseq(
    counts_path: str,
    clinical_path: str,
    name: str,
    seed: int,
    *,
    sites: pd.DataFrame,
    region_shares: dict | None = None,
    n_samples: int = 250,
    n_genes: int = 2000,
    n_clusters: int = 4,
    de_fraction: float = 0.05,
    de_sd: float = 1.0,
    batch_sd: float = 0.3,
    library_sd: float = 0.4,
    extra_sample_fraction: float = 0.05,
    sex_genes: int = 10,
    sex_lfc: float = 1.5,
    shape: str = "random",
    region_weights: dict | None = None,
    cluster_proportions: list | None = None,
    tss_per_region: int = 3,
) -> None:
    """Write a simulated cohort as Xena ``star_counts.tsv.gz`` + ``clinical.tsv.gz``.

    ``sex_genes`` genes (playing the role of sex-chromosome genes) get a log fold change of
    ``+sex_lfc`` in male and ``-sex_lfc`` in female patients, so the property-inference attack
    (seed 001 §4.4.2) has a real signal to find; 0 switches it off.

    ``extra_sample_fraction`` of the patients also get a solid-normal sample (type 11) and as
    many a second primary vial (01B): the parser must drop them (one primary per patient).

    ``sites`` is the TSS → region table the codes are drawn from (:func:`fedclust.data.tcga.
    tss_table` of the simulated site table, or of the real one). ``shape`` picks the center
    sizes: ``random`` (the hard case: Dirichlet(0.8) weights over ``tss_per_region`` random
    sites per region, so most region × cluster cells hold a handful of samples) or ``tcga``
    (region shares ``region_weights``, else ``region_shares`` — config ``data.rnaseq.sites``,
    :func:`site_shares` — else the table's share of codes per region, :func:`tss_region_shares`).
    ``cluster_proportions`` fixes the subtype shares (e.g. TCGA BRCA PAM50); ``None`` draws them
    from Dirichlet(4).
    """
    gen = make_rng(seed, "simulate_rnaseq", name)
    patients, tss = _barcodes(
        n_samples, gen, tss_per_region, sites, shape, region_weights, region_shares
    )
    region = dict(zip(sites.index, sites["Region"], strict=True))
    cluster = gen.choice(
        n_clusters, size=n_samples, p=_cluster_shares(gen, n_clusters, cluster_proportions)
    )
    base = gen.normal(4.0, 1.8, size=n_genes)  # log mean expression per gene
    lfc = np.zeros((n_clusters, n_genes))
    for k in range(n_clusters):
        de = gen.random(n_genes) < de_fraction
        lfc[k, de] = gen.normal(0.0, de_sd, size=de.sum())
    batch = {r: gen.normal(0.0, batch_sd, size=n_genes) for r in REGIONS}
    extra = gen.random(n_samples) < extra_sample_fraction
    dup = gen.random(n_samples) < extra_sample_fraction
    with_sex = gen.choice(["female", "male", ""], size=n_samples, p=[0.49, 0.49, 0.02])
    sex_sign = np.select([with_sex == "male", with_sex == "female"], [1.0, -1.0], 0.0)
    sex_lfc_genes = np.zeros(n_genes)
    sex_lfc_genes[gen.choice(n_genes, size=min(sex_genes, n_genes), replace=False)] = sex_lfc
    barcodes, rows_cluster, rows_center, rows_sex = [], [], [], []
    for i, p in enumerate(patients):
        for suffix, use in (("-01A", True), ("-01B", dup[i]), ("-11A", extra[i])):
            if use:
                barcodes.append(p + suffix)
                rows_cluster.append(cluster[i])
                rows_center.append(region[tss[i]])
                rows_sex.append(sex_sign[i])
    m = len(barcodes)
    lib = gen.lognormal(0.0, library_sd, size=m)
    log_mu = (
        base[None, :]
        + lfc[np.array(rows_cluster)]
        + np.stack([batch[r] for r in rows_center])
        + np.log(lib)[:, None]
        + np.array(rows_sex)[:, None] * sex_lfc_genes[None, :]
    )
    mu = np.exp(log_mu)
    alpha = 0.05 + 2.0 / (np.exp(base) + 1.0)  # dispersion-mean trend
    nb_n = 1.0 / alpha
    counts = gen.negative_binomial(nb_n[None, :], nb_n[None, :] / (nb_n[None, :] + mu))
    genes = [f"ENSG{100000 + 7 * j:011d}.{1 + j % 9}" for j in range(n_genes)]
    table = pd.DataFrame(np.log2(counts.T + 1.0), index=pd.Index(genes, name="Ensembl_ID"))
    table.columns = barcodes
    sex = {p: s for p, s in zip(patients, with_sex, strict=True)}
    clinical = pd.DataFrame(
        {
            "sample": barcodes,
            "id": [f"sim-{i}" for i in range(m)],
            "gender.demographic": [sex[b[:12]] for b in barcodes],
            "true_cluster": rows_cluster,
        }
    )
    _write_gz_tsv(counts_path, table, index=True, float_format="%.10g")
    _write_gz_tsv(clinical_path, clinical, index=False)


def _cluster_shares(gen: np.random.Generator, k: int, proportions: list | None) -> np.ndarray:
    """Subtype shares: the configured ``proportions`` (normalised) or a Dirichlet(4) draw."""
    if proportions is None:
        return gen.dirichlet(np.full(k, 4.0))
    p = np.asarray(proportions, dtype=float)
    if p.shape != (k,) or np.any(p < 0) or p.sum() <= 0:
        raise ConfigError(
            f"cluster_proportions {list(proportions)} do not fit n_clusters = {k}",
            where="data.rnaseq.simulate.cluster_proportions",
            fix="give n_clusters non-negative shares (not all 0), or null for random shares",
        )
    return p / p.sum()


def _write_gz_tsv(path: str, df: pd.DataFrame, index: bool, float_format: str | None = None):
    from ..io import to_tsv_gz

    with atomic_path(path) as tmp:  # reproducible gzip bytes (no time or name in the header)
        to_tsv_gz(df, tmp, index=index, float_format=float_format)


def simulate_mds(
    seed: int,
    n_samples: int = 2043,
    n_clusters: int = 6,
    nan_rate: float = 0.05,
    weibull_shape: float = 1.2,
    censor_years: float = 10.0,
    features: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Binary features (0/1/NaN) and obs (label, OS/LFS/AMLt years and status) of an MDS-like
    cohort."""
    gen = make_rng(seed, "simulate_mds")
    names = list(features or TABLE_3_1)
    d = len(names)
    label = gen.choice(n_clusters, size=n_samples, p=gen.dirichlet(np.full(n_clusters, 5.0)))
    prof = gen.beta(0.4, 6.0, size=(n_clusters, d))
    for k in range(n_clusters):  # a few driver lesions per component
        drivers = gen.choice(d, size=4, replace=False)
        prof[k, drivers] = gen.uniform(0.5, 0.9, size=4)
    x = (gen.random((n_samples, d)) < prof[label]).astype(float)
    col_rate = gen.uniform(0.0, 2.0 * nan_rate, size=d)
    x[gen.random((n_samples, d)) < col_rate[None, :]] = np.nan
    ids = [f"SIM-MDS-{i:05d}" for i in range(n_samples)]
    feats = pd.DataFrame(x, index=pd.Index(ids, name="sample_id"), columns=names)
    # Weibull times, cluster-dependent scale (years): T = scale * (-log U)^(1/shape)
    scale_os = np.exp(gen.normal(1.3, 0.6, size=n_clusters))[label]
    scale_aml = np.exp(gen.normal(2.0, 0.8, size=n_clusters))[label]
    t_death = scale_os * gen.weibull(weibull_shape, size=n_samples)
    t_aml = scale_aml * gen.weibull(weibull_shape, size=n_samples)
    censor = gen.uniform(0.2, censor_years, size=n_samples)
    os_t = np.minimum(t_death, censor)
    lfs_event_t = np.minimum(t_death, t_aml)
    lfs_t = np.minimum(lfs_event_t, censor)
    obs = pd.DataFrame(
        {
            "label": [f"C{k + 1}" for k in label],
            "OS_YEARS": np.round(os_t, 4),
            "OS_STATUS": (t_death <= censor).astype(int),
            "LFS_YEARS": np.round(lfs_t, 4),
            "LFS_STATUS": (lfs_event_t <= censor).astype(int),
            # AML transformation, censored at death or end of follow-up
            "AMLt_YEARS": np.round(lfs_t, 4),
            "AMLt_STATUS": ((t_aml <= t_death) & (t_aml <= censor)).astype(int),
        },
        index=feats.index,
    )
    return feats, obs


def write_simulated_mds(path_features: str, path_obs: str, **kw) -> None:
    feats, obs = simulate_mds(**kw)
    write_table(path_features, feats)
    write_table(path_obs, obs)
