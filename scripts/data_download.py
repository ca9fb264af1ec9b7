"""Rules `download_<dataset>`: fetch registered upstream files (mirror or network), verified."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir)))
from _common import run  # noqa: E402

from fedclust.data.download import fetch, lock_path_for  # noqa: E402
from fedclust.data.registry import remote  # noqa: E402


def main() -> None:
    p = snakemake.params
    for out in snakemake.output:
        fetch(
            remote(p.dataset, Path(out).name),
            out,
            mirror=p.mirror,
            retries=p.cfg["retries"],
            timeout=p.cfg["timeout"],
            lock=lock_path_for(out),
        )


run(main, snakemake)
