"""Rule `fedcref_dataset`: one glyph dataset as an npz (x in [0, 1], y, flags real/synthetic)."""

import numpy as np
from _common import run

from fedclust.data.glyphs import REAL, load_glyphs
from fedclust.io import write_npz
from fedclust.seeds import derive_seed


def main() -> None:
    ds = snakemake.wildcards.dataset
    spec = snakemake.params.cfg["datasets"][ds]
    x, y = load_glyphs(
        spec, list(snakemake.input), derive_seed(snakemake.params.seed, "glyphs", ds)
    )
    write_npz(snakemake.output[0], x=x, y=y, real=np.asarray(spec["source"] in REAL))


run(main, snakemake)
