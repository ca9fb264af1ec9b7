"""Rule `generative_report`: merged tables, figures and the section of the generative stage."""

import numpy as np
import pandas as pd
from _common import run

from fedclust.generative import report as R
from fedclust.io import read_json, save_figure, write_table
from fedclust.report import Section, headlines, write_section


def _units(model):
    return list(snakemake.params.units[model])


def _read(model, key):
    return [pd.read_csv(p, sep="\t") for p in snakemake.input[f"{model}_{key}"]]


def main() -> None:
    out, models = snakemake.output, list(snakemake.params.models)
    infos = {m: [read_json(p) for p in snakemake.input[f"{m}_info"]] for m in models}
    ledgers = {}
    for m in models:
        for u, t in zip(_units(m), _read(m, "ledger"), strict=True):
            ledgers[(m, u)] = t
    write_table(out.ledger, R.ledger_summary(ledgers), index=False)
    tables = [
        {
            "path": out.ledger,
            "caption": "Every message of every unit by protocol and "
            "sender: messages, abstentions (a centre below generative.min_samples sends "
            "nothing) and floats. What leaves a centre is declared in "
            "fedclust.generative.protocols.",
        }
    ]
    figures = []
    savae = None
    if "savae" in models:
        savae = R.savae_table(_read("savae", "metrics"))
        write_table(out.savae, savae, index=False)
        tables.insert(
            0,
            {
                "path": out.savae,
                "caption": "SAVAE good node / poor node test (D6.2 "
                "§6.6): one row per data set, corruption rate r, evaluation set "
                "(clean / corrupted like the poor node) and arm. latent_* / "
                "recovered_*: the poor node's downstream logistic regression on latent"
                " means / recovered samples (the good node's own for the upper bound);"
                " recon_error on observed, impute_error on the corrupted entries "
                "(|error| in units of the test set's SD for Gaussian columns); c_index"
                " and ibs (integrated Brier score) of the Weibull time decoder.",
            },
        )
        save_figure(R.savae_figure(savae), out.savae_figure)
        figures.append(
            {
                "path": out.savae_figure,
                "reproduces": "D6.2 Figs 6.13-6.16 (bounds)",
                "caption": "Poor node's downstream classifier on the corrupted test set "
                "per arm vs corruption rate r: latent space (solid) and recovered samples"
                " (dashed); the good node's on clean images is the upper bound and the "
                "isolated poor node the lower bound. D6.2 shows these as curves only (no "
                "numbers). Data: " + "; ".join(sorted({i["source"] for i in infos["savae"]})) + ".",
            }
        )
        curves = pd.concat(_read("savae", "curves"), ignore_index=True)
        save_figure(R.curves_figure(curves, "SAVAE"), out.savae_curves)
        figures.append(
            {
                "path": out.savae_curves,
                "caption": "SAVAE training loss (-ELBO per "
                "sample) per epoch (isolated, virtual, pooled) or FedAvg round "
                "(federated, sample-weighted mean of the centres' last local epoch).",
            }
        )
        for path, unit in zip(out.savae_digits, snakemake.params.digit_units, strict=True):
            i = _units("savae").index(unit)
            ex = dict(np.load(snakemake.input["savae_examples"][i]))
            save_figure(R.digits_figure(ex, f"SAVAE {unit}: test digits"), path)
            figures.append(
                {
                    "path": path,
                    "reproduces": "D6.2 Figs 6.13-6.15 (digit panels)",
                    "caption": f"Unit {unit}: original test digits, the poor node's "
                    "corrupted input, and each arm's reconstruction (good node: from "
                    "the clean digit). Data: " + infos["savae"][i]["source"] + ".",
                }
            )
    dgd = None
    if "dgd" in models:
        dgd = R.dgd_table(_read("dgd", "metrics"))
        write_table(out.dgd, dgd, index=False)
        tables.insert(
            1 if savae is not None else 0,
            {
                "path": out.dgd,
                "caption": "Deep Generative Decoder: one row per unit, arm and centre (isolated "
                "centres one by one and their mean). nll_per_entry / nll_per_sample: held-out "
                "-log p(x_observed, z) at the MAP representation; impute_error: hidden test "
                "entries (|error| in units of the test set's SD); kmeans_* / train_*: ARI / FMI "
                "of k-means / the mixture's components on the training representations vs the "
                "reference clusters; test_*: the mixture's components on the test "
                "representations; parameters: the VAE's size (the DGD's is in the text).",
            },
        )
        reps = {
            u: dict(np.load(p))
            for u, p in zip(_units("dgd"), snakemake.input["dgd_representations"], strict=True)
        }
        save_figure(R.representations_figure(reps), out.dgd_figure)
        figures.append(
            {
                "path": out.dgd_figure,
                "reproduces": "D6.2 Fig. 9.1 D-F (representation space)",
                "caption": "Federated DGD: the training representations (they never left their "
                "centres; gathered here for the figure only) coloured by reference cluster, "
                "with the mixture's component means. Data: "
                + "; ".join(sorted({i["source"] for i in infos["dgd"]}))
                + ".",
            }
        )
        curves = pd.concat(_read("dgd", "curves"), ignore_index=True)
        curves = curves[curves["centre"].fillna("").astype(str).isin(["", "nan"])]
        save_figure(R.curves_figure(curves, "DGD"), out.dgd_curves)
        figures.append(
            {
                "path": out.dgd_curves,
                "caption": "DGD training loss (-log posterior per sample) per epoch (pooled, VAE:"
                " -ELBO) or FedAvg round (federated).",
            }
        )
    rg = None
    if "radialgan" in models:
        rg = R.radialgan_table(_read("radialgan", "metrics"))
        write_table(out.radialgan, rg, index=False)
        tables.insert(
            len(tables) - 1,
            {
                "path": out.radialgan,
                "caption": "RadialGAN: one row per unit (test bed x alpha rule) and centre: "
                "training / test rows, features it records (missing_features: what it lacks), "
                "share of positive labels, test AUC of its logistic regression on its own rows "
                "(auc_local) and with the decoded rows of the other centres (auc_augmented), "
                "the gain, and the virtual rows with their share of positives.",
            },
        )
        save_figure(R.radialgan_figure(rg), out.radialgan_figure)
        figures.append(
            {
                "path": out.radialgan_figure,
                "reproduces": "D6.2 ch. 5 / Yoon et al. 2018 (per-centre AUC with augmentation;"
                " D6.2: 'not yet completely operative', no figure)",
                "caption": "Each centre's test AUC trained on its own rows vs with the "
                "RadialGAN-augmented set D~_i = D_i + G_i(F_j(D_j)) (eq. 5.8). Data: "
                + "; ".join(sorted({i["source"] for i in infos["radialgan"]}))
                + ".",
            }
        )
        curves = pd.concat(_read("radialgan", "curves"), ignore_index=True)
        save_figure(R.curves_figure(curves, "RadialGAN"), out.radialgan_curves)
        figures.append(
            {
                "path": out.radialgan_curves,
                "caption": "RadialGAN: sum over centres of the F/G objective (adversarial + "
                "lambda x cycle) per iteration.",
            }
        )
    head = R.headline_table(savae=savae, dgd=dgd, radialgan=rg)
    write_table(out.headline, head, index=False)
    tables.append(
        {
            "path": out.headline,
            "caption": "The values the headline reads (differences"
            " between arms on the poor node's task, corrupted test set).",
        }
    )
    write_section(
        out.section,
        Section(
            id="generative",
            title="Federated generative models: SAVAE, DGD, RadialGAN (seed 003 ch. 5, 6, 9)",
            order=65,
            text=R.text(models, infos),
            figures=figures,
            tables=tables,
            headline=headlines.generative(tables, figures),
        ),
    )


run(main, snakemake)
