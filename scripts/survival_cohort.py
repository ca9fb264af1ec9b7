"""Rule `survival_cohort`: IPSS-M (real) or simulated survival cohort → covariates + outcomes."""

from _common import run

from fedclust.io import write_json, write_table
from fedclust.survival.cohort import load_ipssm_survival, simulate_cohort


def main() -> None:
    cfg, out = snakemake.params.cfg, snakemake.output
    if snakemake.params.source == "ipssm":
        i = snakemake.input
        x, obs = load_ipssm_survival(
            i.clinical, i.mut, i.cna, list(cfg["clinical"]), int(cfg["min_carriers"])
        )
        label = "real: IPSS-M cohort (Bernard et al. 2022, papaemmelab/IPSSMstudy)"
    else:
        x, obs = simulate_cohort(
            snakemake.params.seed,
            int(cfg["simulate_n"]),
            int(cfg["min_carriers"]),
            list(cfg["clinical"]),
        )
        label = (
            "SIMULATED stand-in (no IPSS-M files in a data mirror): MDS binaries + clinical "
            "covariates, Cox-Weibull times"
        )
    info = {
        "source": snakemake.params.source,
        "label": label,
        "patients": len(x),
        "covariates": list(x.columns),
        "n_covariates": x.shape[1],
        "missing_cells": int(x.isna().sum().sum()),
    }
    for ep in ("OS", "LFS"):
        known = obs[f"{ep}_YEARS"].notna() & obs[f"{ep}_STATUS"].notna()
        info[f"{ep}_patients"] = int(known.sum())
        info[f"{ep}_events"] = int(obs.loc[known, f"{ep}_STATUS"].sum())
    write_table(out.covariates, x)
    write_table(out.outcomes, obs)
    write_json(out.info, info)


run(main, snakemake)
