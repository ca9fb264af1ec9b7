# Stage: generative — federated generative models of seed 003 (D6.2 ch. 5, 6, 9): SAVAE with the
# good node / poor node test and virtual patients, the Deep Generative Decoder, RadialGAN.
# One job per model x data set x scenario (generative.fanout: unit, thesis.yaml) or one job per
# model running its units in one process (fanout: model, the default config; same numbers).
from fedclust.generative import workflow as GW

GEN = config.get("generative", {})
GEN_MODELS = GW.enabled_models(GEN) if enabled("generative") else []
GEN_GROUPED = GW.fanout(GEN) == "model"
GEN_UNIT = "all" if GEN_GROUPED else "{unit}"
GEN_SOURCES = GW.sources(config) if GEN_MODELS else {}
GEN_REPORT = {"caption": "../report/generative.rst", "category": "Generative"}


if "savae" in GEN_MODELS:

    rule generative_savae:
        input:
            unpack(
                lambda wc: GW.inputs(
                    config, "savae", GW.job_units(GEN, GEN_MODELS, "savae", wc)
                )
            ),
        output:
            **GW.unit_outputs(
                "savae",
                GW.model_units(GEN, GEN_MODELS, "savae") if GEN_GROUPED else None,
            ),
        log:
            f"results/logs/generative/generative_savae_{GEN_UNIT}.log",
        benchmark:
            f"results/benchmarks/generative_savae/{GEN_UNIT}.tsv"
        wildcard_constraints:
            unit="[A-Za-z0-9_.]+",
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("generative_savae")
        resources:
            **job_resources("generative_savae"),
        params:
            cfg=GW.model_cfg(GEN, "savae"),
            units=lambda wc: GW.job_units(GEN, GEN_MODELS, "savae", wc),
            seed=SEED,
            sources=GEN_SOURCES,
        script:
            "../scripts/generative_savae.py"


if "dgd" in GEN_MODELS:

    rule generative_dgd:
        input:
            unpack(
                lambda wc: GW.inputs(
                    config, "dgd", GW.job_units(GEN, GEN_MODELS, "dgd", wc)
                )
            ),
        output:
            **GW.unit_outputs(
                "dgd", GW.model_units(GEN, GEN_MODELS, "dgd") if GEN_GROUPED else None
            ),
        log:
            f"results/logs/generative/generative_dgd_{GEN_UNIT}.log",
        benchmark:
            f"results/benchmarks/generative_dgd/{GEN_UNIT}.tsv"
        wildcard_constraints:
            unit="[A-Za-z0-9_.]+",
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("generative_dgd")
        resources:
            **job_resources("generative_dgd"),
        params:
            cfg=GW.model_cfg(GEN, "dgd"),
            units=lambda wc: GW.job_units(GEN, GEN_MODELS, "dgd", wc),
            seed=SEED,
            sources=GEN_SOURCES,
            cohorts=GW.rnaseq_cohorts(config) if "dgd" in GEN_MODELS else [],
        script:
            "../scripts/generative_dgd.py"


if "radialgan" in GEN_MODELS:

    rule generative_radialgan:
        input:
            unpack(
                lambda wc: GW.inputs(
                    config, "radialgan", GW.job_units(GEN, GEN_MODELS, "radialgan", wc)
                )
            ),
        output:
            **GW.unit_outputs(
                "radialgan",
                GW.model_units(GEN, GEN_MODELS, "radialgan") if GEN_GROUPED else None,
            ),
        log:
            f"results/logs/generative/generative_radialgan_{GEN_UNIT}.log",
        benchmark:
            f"results/benchmarks/generative_radialgan/{GEN_UNIT}.tsv"
        wildcard_constraints:
            unit="[A-Za-z0-9_.]+",
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("generative_radialgan")
        resources:
            **job_resources("generative_radialgan"),
        params:
            cfg=GW.model_cfg(GEN, "radialgan"),
            units=lambda wc: GW.job_units(GEN, GEN_MODELS, "radialgan", wc),
            seed=SEED,
            sources=GEN_SOURCES,
        script:
            "../scripts/generative_radialgan.py"


if GEN_MODELS:

    rule generative_report:
        input:
            **GW.report_inputs(GEN),
        output:
            **{
                k: report(v, **GEN_REPORT) if k != "ledger" else v
                for k, v in GW.report_outputs(GEN).items()
            },
            section="results/report/sections/generative.json",
        log:
            "results/logs/generative/generative_report.log",
        benchmark:
            "results/benchmarks/generative_report/all.tsv"
        conda:
            "../envs/fedclust.yaml"
        threads: job_threads("generative_report")
        resources:
            **job_resources("generative_report"),
        params:
            models=GEN_MODELS,
            units={m: GW.units(GEN, m) for m in GEN_MODELS},
            digit_units=GW.digit_units(GEN),
        script:
            "../scripts/generative_report.py"

    TARGETS += ["results/report/sections/generative.json"]
    REPORT_SECTIONS.append("results/report/sections/generative.json")
