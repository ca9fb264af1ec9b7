"""Rules `download_<dataset>`: fetch registered upstream files (mirror or network), verified."""

from pathlib import Path

from _common import run

from fedclust.data.download import fetch, lock_path_for
from fedclust.data.registry import remote


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
