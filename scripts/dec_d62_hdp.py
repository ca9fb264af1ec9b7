"""Rule `dec_d62_hdp`: the HDP topic model on the pooled binary MDS features (D6.2 ch. 7's
reference): each patient's live-topic distribution, its dominant topic and its cluster at
every k of ``dec.d62.hdp.k``."""

import pandas as pd
from _common import run

from fedclust.dec.d62.pooled import fit_hdp, hdp_clusters
from fedclust.io import read_table, write_json, write_table
from fedclust.seeds import derive_seed


def main() -> None:
    cfg, seed, out = snakemake.params.cfg["hdp"], snakemake.params.seed, snakemake.output
    x = read_table(snakemake.input.features)
    res = fit_hdp(x.to_numpy(), cfg, derive_seed(seed, "d62", "hdp"))
    idx = x.index.rename("sample_id")
    labels = pd.DataFrame({"hdp_dominant": res.dominant}, index=idx)
    for k in cfg["k"]:
        labels[f"hdp_k{k}"] = hdp_clusters(res.theta, int(k), derive_seed(seed, "d62", "hdp", k))
    write_table(out.labels, labels)
    theta = pd.DataFrame(res.theta, index=idx)
    theta.columns = [f"topic{j}" for j in range(res.theta.shape[1])]
    write_table(out.theta, theta)
    write_json(out.info, {
        "live_topics": res.live_topics, "log_likelihood_per_word": res.log_likelihood_per_word,
        "empty_documents": res.empty_documents, "patients": len(x), "features": x.shape[1],
        "iterations": int(cfg["iterations"]), "k": [int(k) for k in cfg["k"]],
    })  # fmt: skip


run(main, snakemake)
