"""Rule `bayes_report`: Table 4.1, the VIRTUAL numbers, federated / heterogeneity / conjugate /
message tables, Figs 4.1, 4.2, 4.4 and the section."""

import pandas as pd
from _common import run

from fedclust.bayes import report as R
from fedclust.io import read_json, save_figure, write_table
from fedclust.report import Section, headlines, write_section


def _read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t")


def main() -> None:
    cfg, inp, out = snakemake.params.cfg, snakemake.input, snakemake.output
    info = read_json(inp.info)
    c_units, f_units = list(snakemake.params.central), list(snakemake.params.federated)
    c_res = [read_json(p) for p in inp.central_result]
    curves = {u: _read(p) for u, p in zip(c_units, inp.central_curve, strict=True)}
    f_res = [read_json(p) for p in inp.federated_result]
    rounds = {u: _read(p) for u, p in zip(f_units, inp.federated_rounds, strict=True)}
    ledgers = {u: _read(p) for u, p in zip(f_units, inp.federated_ledger, strict=True)}
    central = R.central_table(c_res)
    fed = R.federated_table(f_res)
    kinds = {k: v["kind"] for k, v in cfg["federated"]["splits"].items()}
    conj_res = next((r for r in f_res if r["unit"] == "conjugate"), None)
    conj = R.conjugate_table(conj_res)
    t41 = R.table_4_1(central, info)
    virt = R.virtual_table(fed, cfg["federated"]["headline_unit"], info)
    het = R.heterogeneity_table(fed, kinds)
    tables_out = {
        "table_4_1": (
            t41,
            "Table 4.1 (D6.2): MNIST test error (%) of Blundell et al.'s, "
            "Srivastava et al.'s and D6.2's runs beside ours (the validation-selected "
            "setting of each family); not_comparable says why a row measures another "
            "setting.",
        ),
        "virtual": (
            virt,
            "VIRTUAL on MNIST (D6.2 §4.3.2): server and clients' accuracy (%) "
            "beside the headline unit's.",
        ),
        "central": (
            central,
            "Every central run: prior setting, validation and test error "
            "(MC predictive; test_error_mean: posterior-mean weights), the posterior's "
            "median sigma.",
        ),
        "federated": (
            fed,
            "Every federated run: method, client split, schedule, damping, final "
            "server and clients' accuracy (%), messages and floats through the ledger, "
            "abstentions, clipped precisions (server) and cavity entries reset to the "
            "prior (centres).",
        ),
        "heterogeneity": (
            het,
            "D6.2's motivating claim measured: server accuracy (%) on the "
            "IID split and on each non-IID split, and the drop (points).",
        ),
        "conjugate": (
            conj,
            "Conjugate check: relative error of the global natural parameters "
            "vs the exact pooled posterior (Bayesian linear regression).",
        ),
        "messages": (R.message_table(ledgers), "Ledger by unit, protocol and direction."),
    }
    tables = []
    for name, (df, caption) in tables_out.items():
        path = getattr(out, name)
        write_table(path, df, index=False)
        tables.append({"path": path, "caption": caption})
    label = R.data_label(info)
    figs = []

    def fig(path, f, reproduces, caption):
        save_figure(f, path)
        figs.append({"path": path, "reproduces": reproduces, "caption": caption})

    for fam, path, num in (("gaussian", out.fig_4_1, "4.1"), ("mixture", out.fig_4_2, "4.2")):
        fig(
            path,
            R.error_curves_figure(curves, central, fam, f"test error, {fam} prior ({label})"),
            f"seed 003 Fig {num}",
            f"Test error (%) per epoch of every BBB run with a {fam} prior (thick: selected on the "
            f"validation images), SGD and dropout dashed. Data: {label}.",
        )
    fig(
        out.fig_4_4,
        R.federated_figure(rounds, fed, f"federated BNNs ({label})"),
        "seed 003 Fig 4.4",
        "Accuracy (%) per round of every federated run: training accuracy of the round's "
        "clients, server (global model on all test images), clients (each client's latest local "
        f"model on its own test images) and the round's clients. Data: {label}.",
    )
    fig(
        out.heterogeneity_fig,
        R.heterogeneity_figure(fed, "server accuracy by client split"),
        "D6.2 §4.1 claim (no figure in D6.2)",
        f"Final server accuracy (%) of each federated method on each client split. Data: {label}.",
    )
    fig(
        out.conjugate_fig,
        R.conjugate_figure(
            _read(inp.federated_rounds[f_units.index("conjugate")])
            if "conjugate" in f_units
            else pd.DataFrame(columns=["schedule", "round", "relative_error"])
        ),
        "PVI invariant (Bui et al.; no figure in D6.2)",
        "Relative error of the global natural parameters vs the exact pooled posterior per round "
        "(Bayesian linear regression, simulated).",
    )
    write_section(
        out.section,
        Section(
            id="bayes",
            title="Bayesian neural networks, PVI and VIRTUAL (seed 003 ch. 4)",
            order=62,
            text=R.section_text(cfg, info, conj),
            figures=figs,
            tables=tables,
            headline=headlines.bayes(tables, figs),
        ),
    )


run(main, snakemake)
