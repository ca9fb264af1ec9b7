"""The tuning grids' constants and the thesis' printed best values (seed 000 §4.1, §4.3, §5.1),
without torch: the figure rules (:mod:`fedclust.dec.tuning_plots`) and the DAG read them."""

from __future__ import annotations

from typing import Any

GRIDS = ("lr", "batch", "regularizers", "cluster")
#: the grid whose selected settings a grid's points start from
PREVIOUS = {"lr": None, "batch": "lr", "regularizers": "batch", "cluster": "batch"}
REGULARIZERS = {"corruption": (0.0, 0.5), "dropout": (0.0, 0.5), "sigma": (0.0, 0.2),
                "beta": (0.0, 0.5)}  # fmt: skip
#: settings keys each grid selects (regularizers: none, reported only)
SELECTS = {"lr": ["autoencoder_lr"], "batch": ["autoencoder_batch_size", "model"],
           "regularizers": [],
           "cluster": ["clustering_lr", "clustering_batch_size"]}  # fmt: skip


def tuned_datasets(cfg: dict) -> list[str]:
    t = (cfg or {}).get("tuning") or {}
    return list(t.get("datasets", [])) if t.get("enabled") else []


def reuse_source(cfg: dict, dataset: str, grid: str) -> str | None:
    """The dataset whose ``grid`` selection ``dataset`` reuses (``dec.tuning.reuse``; the thesis
    reused MNIST's Step-2 settings for BMNIST, seed 000 Table B.5 note), or None."""
    r = ((cfg or {}).get("tuning") or {}).get("reuse") or {}
    spec = r.get(dataset) if dataset in tuned_datasets(cfg) else None
    return str(spec["source"]) if spec and grid in spec.get("grids", []) else None


def check_reuse(cfg: dict) -> None:
    """A tuned dataset's reuse source must be tuned too (and another dataset); entries of
    datasets not tuned are ignored (a config layered over thesis.yaml may tune fewer)."""
    from fedclust.errors import ConfigError

    tuned = tuned_datasets(cfg)
    for d, spec in (((cfg or {}).get("tuning") or {}).get("reuse") or {}).items():
        src = spec["source"]
        if d in tuned and (src not in tuned or src == d):
            raise ConfigError(
                f"dec.tuning.reuse.{d}: {d} and its source {src} must be two datasets of "
                f"dec.tuning.datasets {tuned}",
                where=f"dec.tuning.reuse.{d}",
                fix="add both to dec.tuning.datasets or drop the entry",
            )
        for g in spec.get("grids", []):
            if reuse_source(cfg, src, g):
                raise ConfigError(
                    f"dec.tuning.reuse: {d} reuses {src}'s {g!r} grid, which {src} reuses too",
                    where=f"dec.tuning.reuse.{d}",
                    fix=f"point {d} at the dataset that runs the {g!r} grid",
                )


def architectures(cfg: dict, dataset: str) -> list[str]:
    """The TSAE architectures of ``dataset``'s LR grid (``dec.tuning.step1.architectures``;
    thesis: EUROMDS "DEC", "CURVES", "GOOGLE", Table A.3); empty: the config's model only."""
    return list(((cfg["tuning"]["step1"].get("architectures") or {}).get(dataset)) or [])


# ------------------------------------------------------------------ the thesis' values
#: Best values printed in the thesis (seed 000 §4.3, §5.1; DEC architecture rows), keyed by
#: (dataset, grid) → rows with the keys our best table has. A.3's Adam LR is printed "9.5743"
#: (exponent lost; spec §4.2): shown as 9.5743e-05.
THESIS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("mnist", "lr"): [
        {"optimizer": "adam", "scheduler": s, "lr": lr, "loss": lo}
        for s, lr, lo in (("plateau", 0.0007, 0.0113), ("none", 0.0003, 0.0122))
    ]
    + [
        {"optimizer": "sgd", "scheduler": s, "lr": lr, "loss": lo}
        for s, lr, lo in (("plateau", 0.6546, 0.0138), ("none", 0.4784, 0.0137))
    ]
    + [
        {"optimizer": "yogi", "scheduler": s, "lr": lr, "loss": lo}
        for s, lr, lo in (("plateau", 0.0644, 0.0115), ("none", 0.0369, 0.0125))
    ],
    ("bmnist", "lr"): [
        {"optimizer": o, "scheduler": s, "lr": lr, "loss": lo}
        for o, s, lr, lo in (
            ("adam", "plateau", 0.0007, 0.0227),
            ("sgd", "plateau", 0.3999, 0.0268),
            ("yogi", "plateau", 0.0699, 0.0232),
            ("adam", "none", 0.0002, 0.0240),
            ("sgd", "none", 0.7243, 0.0244),
            ("yogi", "none", 0.0241, 0.0248),
        )
    ],
    ("mds", "lr"): [
        {"optimizer": o, "scheduler": s, "lr": lr, "loss": lo}
        for o, s, lr, lo in (
            ("adam", "none", 9.5743e-05, 0.0035),
            ("sgd", "none", 0.0036, 0.0040),
            ("yogi", "none", 0.0009, 0.0032),
            ("adam", "plateau", 9.7019e-05, 0.0042),
            ("sgd", "plateau", 0.0080, 0.0047),
            ("yogi", "plateau", 0.0003, 0.0039),
        )
    ],
    ("mds", "batch"): [
        {"optimizer": o, "batch_size": b, "hidden_act": "relu", "final_act": "relu", "loss": lo}
        for o, b, lo in (("adam", 16, 0.0044), ("sgd", 16, 0.0195), ("yogi", 8, 0.0082))
    ],
    ("mds", "regularizers"): [
        {"optimizer": o, "kind": k, "value": v, "loss": lo}
        for k, rows in (
            (
                "corruption",
                (("adam", 0.0806, 0.00306), ("sgd", 0.11924, 0.00479), ("yogi", 0.16963, 0.00311)),
            ),
            (
                "dropout",
                (("adam", 0.12112, 0.00344), ("sgd", 0.03004, 0.00904), ("yogi", 0.04302, 0.00353)),
            ),
            (
                "sigma",
                (("adam", 0.18134, 0.00274), ("sgd", 0.08128, 0.003), ("yogi", 0.17921, 0.00309)),
            ),
            (
                "beta",
                (("adam", 0.1809, 0.00501), ("sgd", 0.04614, 0.00546), ("yogi", 0.0161, 0.00398)),
            ),
        )
        for o, v, lo in rows
    ],  # fmt: skip
    ("mnist", "cluster"): [
        {
            "optimizer": o,
            "batch_size": b,
            "lr": lr,
            "accuracy": a,
            "cycle_accuracy": ca,
            "recon_loss": lo,
        }
        for o, b, lr, a, ca, lo in (
            ("sgd", 64, 0.0427, 0.86775, 0.80772, 77.65878),
            ("yogi", 64, 0.00148, 0.8019, 0.84267, 13.21794),
            ("adam", 256, 0.00102, 0.85807, 0.60787, 2.80548),
        )
    ],  # fmt: skip
    ("mds", "cluster"): [
        {
            "optimizer": o,
            "batch_size": b,
            "lr": lr,
            "accuracy": a,
            "cycle_accuracy": ca,
            "recon_loss": lo,
            "sil_data": sd,
            "sil_feat": sf,
        }
        for o, b, lr, a, ca, lo, sd, sf in (
            ("yogi", 64, 0.003, 0.61527, 0.99853, 0.46623, 0.23511, 0.90038),
            ("sgd", 64, 0.02881, 0.558, 0.99755, 1.39768, 0.22552, 0.89419),
        )
    ],  # fmt: skip
}
#: Table A.3's CURVES and GOOGLE rows (seed 000 §4.3; "4.0641" read as 4.0641e-05, §4.2)
THESIS_ARCH: dict[str, list[dict[str, Any]]] = {
    arch: [{"optimizer": o, "scheduler": s, "lr": lr, "loss": lo} for o, s, lr, lo in rows]
    for arch, rows in (
        ("CURVES", (("adam", "none", 0.0001, 0.0086), ("sgd", "none", 0.0415, 0.0103),
                    ("yogi", "none", 0.0010, 0.0089), ("adam", "plateau", 0.0002, 0.0100),
                    ("sgd", "plateau", 0.0373, 0.0103), ("yogi", "plateau", 0.0020, 0.0103))),
        ("GOOGLE", (("adam", "none", 0.0001, 0.0042), ("sgd", "none", 0.0065, 0.0043),
                    ("yogi", "none", 0.0008, 0.0042), ("adam", "plateau", 4.0641e-05, 0.0043),
                    ("sgd", "plateau", 0.0140, 0.0055), ("yogi", "plateau", 0.0014, 0.0047))),
    )
}  # fmt: skip
#: the thesis table each (dataset, grid) reproduces
SOURCES = {("mnist", "lr"): "Table A.1", ("bmnist", "lr"): "Table A.2",
           ("mds", "lr"): "Table A.3 (DEC)", ("mds", "batch"): "Table A.4 (DEC)",
           ("mds", "regularizers"): "Tables A.5–A.8 (DEC)",
           ("mnist", "cluster"): "Tables B.1–B.3 (top rows)",
           ("mds", "cluster"): "Table B.6 (dec, best per optimizer)"}  # fmt: skip
