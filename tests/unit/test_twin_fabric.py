"""What a site twin runs in place of a site's fabric (localsite/twin.py, site-configs/sitekit/
twin.py): UCX's PML where the site runs Open MPI 5 (ob1 dies in MPI_Init under srun at a
site's scale: localsite.initracebench), ob1 where it runs Open MPI 4, and TCP standing in for
InfiniBand's transports in the sweeps' UCX presets, which would otherwise leave the twin's
nodes unreachable to each other."""

import sys

import pytest

from localsite import twin
from topofoam.config import presets

sys.path.insert(0, str(twin.SITE_CONFIGS))
from sitekit.twin import substitute  # noqa: E402


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOFOAM_RUN", str(tmp_path))


def pml(site: str) -> str:
    return dict(twin.Twin(site, nodes=2).partition_settings()["partition_env"])["OMPI_MCA_pml"]


def test_open_mpi_5_sites_run_ucx_and_open_mpi_4_sites_ob1(run_dir):
    assert pml("oci") == "ucx"
    assert {pml("vsc5"), pml("hpc2")} == {"ob1"}


def test_every_partition_of_the_twin_gets_the_stand_ins(run_dir):
    t = twin.Twin("oci", nodes=2)
    config = substitute(twin.load_site("oci"), {"site": "oci", "environments": {},
                                                 **t.partition_settings()})  # fmt: skip
    parts = config["systems"][0]["partitions"]
    assert [p["name"] for p in parts] == ["nps1", "nps2"]
    for p in parts:
        assert dict(p["env_vars"])["OMPI_MCA_pml"] == "ucx"
        stand_ins = p["extras"]["ucx_tls_stand_ins"]
        assert {stand_ins["rc"], stand_ins["ud"]} == {"tcp"}


@pytest.mark.parametrize(
    "preset, tls",
    [("rc-128k", "self,sm,tcp"), ("ud-128k-flat", "self,sm,tcp"), ("tcp-128k-flat", "self,sm,tcp")],
)
def test_a_presets_infiniband_transport_runs_as_tcp_on_a_twin(preset, tls):
    env = presets.env_of("ucx_inter", preset)
    on_twin = presets.with_stand_ins(env, {"rc": "tcp", "ud": "tcp"})
    assert on_twin["UCX_TLS"] == tls
    # only the transports change: the thresholds the stage sweeps stay the preset's
    assert {k: v for k, v in on_twin.items() if k != "UCX_TLS"} == {
        k: v for k, v in env.items() if k != "UCX_TLS"
    }


def test_without_stand_ins_or_transports_the_preset_is_unchanged():
    rc = presets.env_of("ucx_inter", "rc-128k")
    assert presets.with_stand_ins(rc, {}) == rc
    assert presets.with_stand_ins({"UCX_RNDV_THRESH": "16kb"}, {"rc": "tcp"}) == {
        "UCX_RNDV_THRESH": "16kb"
    }
    assert presets.with_stand_ins({"UCX_TLS": "rc_x, ud ,sm"}, {"rc_x": "tcp", "ud": "tcp"}) == {
        "UCX_TLS": "tcp,sm"
    }
