# Stage: dec (extra figures and the MNIST size curve) — seed 000 Figs 3.1, 5.5, 5.7, 5.8,
# 5.10, 5.15–5.17, B.1 and issue 16's accuracy-vs-size curve. Reads the dec stage's result
# tables by their paths (rules/dec.smk); its own outputs live under results/dec/figures/ and
# results/dec/size_curve/.
from fedclust.dec import workflow as DEC_WF

DECFIG = DEC.get("figures", {})
DECFIG_SC = DEC.get("size_curve", {})
DECFIG_ON = enabled("dec") and bool(DECFIG.get("enabled", True))
DECFIG_SC_ON = enabled("dec") and bool(DECFIG_SC.get("enabled", False))
# without the curve's jobs the report shows the committed measurement (a few seconds)
DECFIG_SC_MEASURED = str(
    Path(workflow.basedir) / "docs" / "dec_size_curve" / "points.tsv"
)
DECFIG_SC_SHOW = DECFIG_SC_ON or (DECFIG_ON and Path(DECFIG_SC_MEASURED).exists())
DECFIG_SC_MODE = "run" if DECFIG_SC_ON else ("measured" if DECFIG_SC_SHOW else "")
DECFIG_SIZE_REPORT = {
    "caption": "../report/dec_size_curve.rst",
    "category": "DEC",
    "subcategory": "MNIST size curve",
}


rule dec_size_point:
    input:
        unpack(lambda w: DEC_WF.size_inputs(DECFIG_SC)),
    output:
        "results/dec/size_curve/{schedule}/n{size}_r{rep}.tsv",
    log:
        "results/logs/dec/dec_size_point_{schedule}_n{size}_r{rep}.log",
    benchmark:
        "results/benchmarks/dec_size_point/{schedule}_n{size}_r{rep}.tsv"
    wildcard_constraints:
        schedule="[A-Za-z0-9_]+",
        size="[0-9]+",
        rep="[0-9]+",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_size_point")
    resources:
        **job_resources("dec_size_point"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_size_point.py"


rule dec_size_curve:
    input:
        DEC_WF.curve_inputs(DECFIG_SC, DECFIG_SC_ON, DECFIG_SC_MEASURED),
    output:
        summary=report("results/dec/size_curve/summary.tsv", **DECFIG_SIZE_REPORT),
        points=report("results/dec/size_curve/points.tsv", **DECFIG_SIZE_REPORT),
        trend=report("results/dec/size_curve/trend.tsv", **DECFIG_SIZE_REPORT),
        figure=report("results/dec/size_curve/size_curve.png", **DECFIG_SIZE_REPORT),
    log:
        "results/logs/dec/dec_size_curve.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_size_curve")
    resources:
        **job_resources("dec_size_curve"),
    params:
        source=DECFIG_SC.get("source", "mlxtend5k"),
        mode=DECFIG_SC_MODE,
    script:
        "../scripts/dec_size_curve.py"


DECFIG_DS = DEC_DATASETS if DECFIG_ON else []
DECFIG_STATES = [d for d in ("mnist", "mds") if d in DECFIG_DS]
DECFIG_CONFUSION = [d for d in ("mnist", "bmnist") if d in DECFIG_DS]
DECFIG_FED = [d for d in DEC.get("federated_datasets", []) if d == "mds" and DECFIG_ON]
DECFIG_FED = DECFIG_FED if DEC.get("splits") else []
DECFIG_MNIST_BMNIST = "mnist" in DECFIG_DS and "bmnist" in DECFIG_DS


rule dec_best_states:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        results="results/dec/{dataset}/centralized/results.tsv",
    output:
        states="results/dec/figures/{dataset}/states.npz",
        table="results/dec/figures/{dataset}/states.tsv",
        density=report(
            "results/dec/figures/{dataset}/density.png",
            **DEC_WF.report_spec("density"),
        ),
    log:
        "results/logs/dec/dec_best_states_{dataset}.log",
    benchmark:
        "results/benchmarks/dec_best_states/{dataset}.tsv"
    wildcard_constraints:
        dataset="|".join(DECFIG_STATES) or "NONE",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_best_states")
    resources:
        **job_resources("dec_best_states"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_best_states.py"


rule dec_fed_best_states:
    input:
        features="results/data/{dataset}/features.parquet",
        obs="results/data/{dataset}/obs.tsv",
        results=lambda w: expand(
            "results/dec/{dataset}/federated/{split}/results.tsv",
            dataset=w.dataset,
            split=DEC.get("splits", []),
        ),
        splits=lambda w: expand(
            "results/data/{dataset}/splits/{split}.tsv",
            dataset=w.dataset,
            split=DEC.get("splits", []),
        ),
    output:
        states="results/dec/figures/{dataset}/federated_states.npz",
        table="results/dec/figures/{dataset}/federated_states.tsv",
        density=report(
            "results/dec/figures/{dataset}/federated_density.png",
            **DEC_WF.report_spec("fig5_17"),
        ),
    log:
        "results/logs/dec/dec_fed_best_states_{dataset}.log",
    benchmark:
        "results/benchmarks/dec_fed_best_states/{dataset}.tsv"
    wildcard_constraints:
        dataset="|".join(DECFIG_FED) or "NONE",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_fed_best_states")
    resources:
        **job_resources("dec_fed_best_states"),
    params:
        cfg=DEC,
        seed=SEED,
    script:
        "../scripts/dec_fed_best_states.py"


rule dec_fig_confusion:
    input:
        labels="results/dec/{dataset}/centralized/labels.tsv",
    output:
        figure=report(
            "results/dec/figures/{dataset}/confusion.png",
            **DEC_WF.report_spec("confusion"),
        ),
        table=report(
            "results/dec/figures/{dataset}/confusion.tsv",
            **DEC_WF.report_spec("confusion"),
        ),
    log:
        "results/logs/dec/dec_fig_confusion_{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DECFIG_CONFUSION) or "NONE",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_fig_confusion")
    resources:
        **job_resources("dec_fig_confusion"),
    script:
        "../scripts/dec_fig_confusion.py"


rule dec_fig_mnist:
    input:
        states="results/dec/figures/{dataset}/states.npz",
        obs="results/data/{dataset}/obs.tsv",
    output:
        fours_nines=report(
            "results/dec/figures/{dataset}/fours_nines.png",
            **DEC_WF.report_spec("fig5_7"),
        ),
        reconstruction=report(
            "results/dec/figures/{dataset}/reconstruction.png",
            **DEC_WF.report_spec("fig5_15"),
        ),
        recon_original=report(
            "results/dec/figures/{dataset}/recon_original.png",
            **DEC_WF.report_spec("fig5_16"),
        ),
    log:
        "results/logs/dec/dec_fig_mnist_{dataset}.log",
    wildcard_constraints:
        dataset="mnist",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_fig_mnist")
    resources:
        **job_resources("dec_fig_mnist"),
    params:
        seed=SEED,
        image_points=DECFIG.get("image_points", 150),
    script:
        "../scripts/dec_fig_mnist.py"


rule dec_fig_mnist_bmnist:
    input:
        mnist_features="results/data/mnist/features.parquet",
        mnist_obs="results/data/mnist/obs.tsv",
        bmnist_features="results/data/bmnist/features.parquet",
        bmnist_obs="results/data/bmnist/obs.tsv",
    output:
        report(
            "results/dec/figures/mnist_bmnist.png", **DEC_WF.report_spec("fig3_1", "")
        ),
    log:
        "results/logs/dec/dec_fig_mnist_bmnist.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_fig_mnist_bmnist")
    resources:
        **job_resources("dec_fig_mnist_bmnist"),
    script:
        "../scripts/dec_fig_mnist_bmnist.py"


rule dec_figures_report:
    input:
        unpack(
            lambda w: DEC_WF.section_inputs(
                DECFIG_CONFUSION,
                DECFIG_STATES,
                DECFIG_FED,
                DECFIG_MNIST_BMNIST,
                DECFIG_SC_SHOW,
            )
        ),
    output:
        section="results/report/sections/dec_figures.json",
        headline=report(
            "results/dec/figures/headline.tsv", **DEC_WF.report_spec("headline", "")
        ),
    log:
        "results/logs/dec/dec_figures_report.log",
    conda:
        "../envs/fedclust.yaml"
    threads: job_threads("dec_figures_report")
    resources:
        **job_resources("dec_figures_report"),
    params:
        confusion=DECFIG_CONFUSION,
        states=DECFIG_STATES,
        fed=DECFIG_FED,
        mnist_bmnist=DECFIG_MNIST_BMNIST,
        size_curve=DECFIG_SC_MODE,
        reduced=bool(DEC.get("reduced", True)),
        source=DECFIG_SC.get("source", "mlxtend5k"),
    script:
        "../scripts/dec_figures_report.py"


if DECFIG_ON or DECFIG_SC_ON:
    TARGETS += ["results/report/sections/dec_figures.json"]
    REPORT_SECTIONS.append("results/report/sections/dec_figures.json")
