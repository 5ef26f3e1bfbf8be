"""An emulated multi-node Slurm cluster on one machine (DESIGN.md, "Emulated multi-node Slurm").

N nodes, each a network namespace joined to a bridge by a veth pair, on a private /24 that
exists only inside this machine. Each node runs a real slurmd in its own network, UTS and mount
namespaces: its hostname is nodeI, a shared hosts file is bind-mounted over /etc/hosts, and a
folder of its own over Slurm's TmpFS. slurmctld runs in the root network namespace (on the
bridge address) with its own UTS and mount namespaces; one munged serves all. Timings on it
mean nothing (all nodes share the machine's cores): it exists so that multi-node code paths
(several hosts in rankfiles, srun -N, arbitrary distribution, inter-node schedule levels) run
for real.

Everything created is recorded in ``<root>/state.json`` before it is created, so ``stop`` (or
the next ``start``, after a crash) removes exactly that: the daemons by PID, the namespaces, the
links and the bridge.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from localsite import cpuquota
from localsite.slurm import (
    NodeLayout,
    SlurmDaemons,
    SlurmError,
    cmdline_of,
    common_settings,
    port_in_use,
    spool_dir,
    terminate,
)
from topofoam import paths
from topofoam.config import fabric, settings

#: What each emulated node declares: the layout rankmap and the checks see. It may exceed the
#: real cores; binding is then not applied (TaskPlugin=task/none), and checks say so.
DEFAULT_LAYOUT = NodeLayout(sockets=1, cores_per_socket=2, threads_per_core=1, memory_mib=1024)

#: Most nodes an emulated cluster has: each is a slurmd and a network namespace on this machine.
MAX_NODES = 8
#: Slurm clients of ours that stand before the real ones on the cluster's PATH.
CLIENTS = Path(__file__).resolve().parent / "clients"


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of one kind in one Slurm partition of the emulated cluster (a site twin has one
    group per partition of its site file)."""

    partition: str
    count: int
    layout: NodeLayout
    #: The hwloc topology the nodes show to every task (HWLOC_XMLFILE, set by the cluster's
    #: TaskProlog): hwloc, lstopo and Open MPI then see the declared node, not this machine
    #: (Open MPI maps a rankfile onto it and binds nothing: it is not this system).
    topology_xml: Path | None = None
    #: Slurm node features (sinfo's AVAIL_FEATURES), e.g. the NPS setting.
    features: tuple[str, ...] = ()


#: Open MPI's mpirun refuses root unless told (the emulated nodes' jobs run as root), and
#: mca_base_env_list forwards the library path to every rank, on any host. It warns about
#: variables that are not set, so checks append their optional ones; ReFrame writes values
#: unquoted into the job script, hence the quotes around the ';'-separated list.
MPI_AS_ROOT = [
    ["OMPI_ALLOW_RUN_AS_ROOT", "1"],
    ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"],
    ["OMPI_MCA_mca_base_env_list", '"LD_LIBRARY_PATH;WM_PROJECT_DIR"'],
]


#: Open MPI across the emulated nodes: TCP on the private subnet, and ranks that yield when
#: idle (oversubscribed ranks spin otherwise: 83 s instead of 1.4 s for cavity).
#: Its session folders and shared-memory files go to ``node_tmp``, which each node's mount
#: namespace backs with a folder of its own, as real nodes have their own /tmp and /dev/shm.
#: In the machine's shared /dev/shm, a killed step's segment files (named after node and
#: step) outlive it, and the next cluster's job ids start at 1 again; that collision is the
#: suspected cause of rank 0 dying of SIGSEGV in vader's start-up under srun.
def mpi_env(subnet: str, node_tmp: Path) -> dict[str, str]:
    return {
        "OMPI_MCA_btl": "self,vader,tcp",
        "OMPI_MCA_pml": "ob1",
        "OMPI_MCA_btl_tcp_if_include": f"{subnet}.0/24",
        "OMPI_MCA_oob_tcp_if_include": f"{subnet}.0/24",
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "OMPI_MCA_btl_vader_backing_directory": str(node_tmp),
        "OMPI_MCA_orte_tmpdir_base": str(node_tmp),
    }


#: Open MPI 5 on the emulated nodes takes UCX's PML (over TCP and shared memory) in place of
#: ob1. Under srun, ob1 can take a message from a peer that has left MPI_Init while it still
#: waits in the modex fence, before MPI_COMM_WORLD is added to the PML, and dies of SIGSEGV
#: (open-mpi/ompi#13559): at 4 x 36 ranks on the OCI twin in 6 of 12 launches, UCX's PML in
#: none (localsite.initracebench, docs/timings.md ``race.ompi5``). UCX also reads the sweeps'
#: UCX presets, which ob1 ignores. Each node has one interface, eth0 (EmulatedCluster).
UCX_PML = {
    "OMPI_MCA_pml": "ucx",
    "OMPI_MCA_pml_ucx_tls": "any",
    "OMPI_MCA_pml_ucx_devices": "any",
    "UCX_TLS": "tcp,sm,self",
    "UCX_NET_DEVICES": "eth0",
}

#: UCX transports the emulated nodes lack (InfiniBand's), and the one that stands in for each
#: in a preset's UCX_TLS: the nodes' only fabric is TCP.
UCX_TLS_STAND_INS = {t: "tcp" for t in ("rc", "rc_x", "rc_v", "rc_mlx5", "dc", "dc_x",
                                         "dc_mlx5", "ud", "ud_x", "ud_v", "ud_mlx5", "ib")}  # fmt: skip


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SlurmError(
            f"'ip {' '.join(args)}' failed: {done.stderr.strip()} -- the emulated "
            f"cluster needs root and network namespaces (iproute2)"
        )


class EmulatedCluster(SlurmDaemons):
    """``nodes`` emulated Slurm nodes named node1..nodeN, all files under ``root``."""

    partition = "emu"

    def __init__(
        self,
        nodes: int = 2,
        root: Path | None = None,
        *,
        subnet: str | None = None,
        layout: NodeLayout = DEFAULT_LAYOUT,
        port: int | None = None,
        groups: list[NodeGroup] | None = None,
        slurmd_timeout: int = 10,
        pmix_timeout: int = 300,
    ):
        self.groups = groups or [NodeGroup(self.partition, nodes, layout)]
        #: Seconds before an unanswering node is marked down (its jobs then fail).
        self.slurmd_timeout = slurmd_timeout
        #: Seconds a PMIx fence waits for its next contribution (mpi.conf's PMIxTimeout;
        #: 300 is Slurm's default); a fence that times out ends its job (fencewatch).
        self.pmix_timeout = pmix_timeout
        nodes = sum(g.count for g in self.groups)
        if not 1 <= nodes <= MAX_NODES or any(g.count < 1 for g in self.groups):
            raise SlurmError(
                f"{nodes} nodes asked for -- the emulated cluster has 1 to {MAX_NODES} nodes, "
                f"at least one a partition"
            )
        super().__init__()
        self.nodes = nodes
        self.root = Path(root or paths.run_dir() / "cluster").resolve()
        self.subnet = subnet or settings.subnet("TOPOFOAM_EMU_SUBNET", "10.77.0")
        self.layout = layout
        self.ctld_port = port or settings.emu_slurmctld_port()
        self.slurmd_port = self.ctld_port + 1
        tag = hashlib.sha256(str(self.root).encode()).hexdigest()[:4]
        self.bridge = f"tfb{tag}"
        self.hosts = [f"node{i}" for i in range(1, nodes + 1)]
        #: Each host's group, in host order: the groups' nodes follow one another.
        self.group_of = dict(zip(self.hosts, [g for g in self.groups for _ in range(g.count)]))
        self.netns = {h: f"tf{tag}{h}" for h in self.hosts}
        self.veth = {h: f"tf{tag}h{i}" for i, h in enumerate(self.hosts, 1)}
        self.addr = {h: f"{self.subnet}.{10 + i}" for i, h in enumerate(self.hosts, 1)}
        self.ctl_addr = f"{self.subnet}.1"
        self.conf = self.root / "slurm.conf"
        # Slurm's TmpFS: every node's mount namespace puts its own tmp-<node> there.
        self.node_tmp = self.root / "tmp"
        self.state_file = self.root / "state.json"
        self.munge_socket = Path("/run/topofoam-munge", f"emu{tag}", "munge.socket")
        self.log_dir = self.root / "log"
        #: Rate-limited links (TOPOFOAM_EMU_LINKS): node -> tc rate, e.g. {"node3": "100mbit"}.
        self.link_limits = settings.emu_links()
        #: Latency factors (TOPOFOAM_EMU_LATENCY, under a fabric profile): node -> factor.
        self.latency_factors = settings.emu_latency()
        #: CPU quotas (TOPOFOAM_EMU_CPU): node -> fraction of the machine's cores' time.
        self.cpu_quotas = settings.emu_cpu()
        #: Files bound over others in one node (TOPOFOAM_EMU_BIND): node -> [(source, target)].
        self.binds = settings.emu_binds()
        #: What every link costs (TOPOFOAM_FABRIC; None: the links as they are).
        self.fabric = fabric.from_environment()
        self.fabric_lib = self.root / "fabric" / "libtopofoam-fabric.so"

    # -- state -----------------------------------------------------------------------------

    def _state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {"netns": [], "links": [], "pids": {}}

    def _record(self, state: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps(state, indent=1))

    def running(self) -> dict[str, int]:
        """Daemons of ours that still run, by name (munged, slurmctld, fencewatch,
        slurmd-nodeI): PID."""
        alive = {}
        for name, pid in self._state()["pids"].items():
            cmd = cmdline_of(pid) or []
            # While starting, the PID still runs one of the namespace wrappers.
            program = Path(cmd[0]).name if cmd else ""
            known = program in (name.split("-")[0], "nsenter", "unshare", "sh") or (
                name == "fencewatch" and "localsite.fencewatch" in cmd
            )
            if known and any(str(self.root) in a for a in cmd):
                alive[name] = pid
        return alive

    def client_env(self, base: dict | None = None) -> dict[str, str]:
        env = super().client_env(base)
        env.update(mpi_env(self.subnet, self.node_tmp))
        # squeue that waits for a starved slurmctld (localsite/clients/squeue says why)
        rest = [d for d in env.get("PATH", "").split(os.pathsep) if d and d != str(CLIENTS)]
        env["PATH"] = os.pathsep.join([str(CLIENTS), *rest])
        return env

    def daemon_names(self) -> list[str]:
        return ["munged", "slurmctld", "fencewatch"] + [f"slurmd-{h}" for h in self.hosts]

    def daemon_log(self, name: str) -> Path:
        return self.log_dir / (f"{name}.out" if name in ("munged", "fencewatch") else f"{name}.log")

    def remember(self, name: str, pid: int) -> None:
        state = self._state()
        state["pids"][name] = pid
        self._record(state)

    def expected_nodes(self) -> int:
        return self.nodes

    # -- start -----------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        self.stop()  # whatever an earlier, perhaps crashed, run of this cluster left behind
        self._check_can_start()
        state = {"netns": [], "links": [], "pids": {}}
        try:
            if self.fabric:
                self._build_fabric()
            self._network(state)
            self.write_files()
            self._daemons()
            self.wait_idle(timeout)
        except BaseException:
            self.stop()
            raise

    def _check_can_start(self) -> None:
        if os.geteuid() != 0:
            raise SlurmError(
                "not root -- the emulated cluster needs root (network namespaces, "
                "Slurm daemons); run as root or skip the 'emu' partition"
            )
        for setting, named in (
            ("TOPOFOAM_EMU_LINKS", self.link_limits),
            ("TOPOFOAM_EMU_CPU", self.cpu_quotas),
            ("TOPOFOAM_EMU_LATENCY", self.latency_factors),
            ("TOPOFOAM_EMU_BIND", self.binds),
        ):
            unknown = sorted(set(named) - set(self.hosts))
            if unknown:
                raise SlurmError(
                    f"{setting} names {', '.join(unknown)}, which this {self.nodes}-node "
                    f"cluster does not have -- name nodes node1 to node{self.nodes}"
                )
        if self.latency_factors and not self.fabric:
            raise SlurmError(
                "TOPOFOAM_EMU_LATENCY multiplies the fabric profile's latency, and "
                "TOPOFOAM_FABRIC names none -- set e.g. TOPOFOAM_FABRIC=vsc5x30"
            )
        tools = ("ip", "nsenter", "unshare", "munged", "slurmctld", "slurmd", "sinfo")
        for tool in tools + (("tc",) if self.link_limits or self.fabric else ()):
            if shutil.which(tool) is None:
                raise SlurmError(f"{tool} not found -- run ./bench setup")
        for port in (self.ctld_port, self.slurmd_port):
            if port_in_use(port):
                raise SlurmError(
                    f"port {port} is already in use (a Slurm controller or slurmd on this "
                    f"machine?) -- stop it, or choose another port with "
                    f"TOPOFOAM_EMU_SLURMCTLD_PORT"
                )

    def _network(self, state: dict) -> None:
        state["links"].append(self.bridge)
        self._record(state)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.ctl_addr}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for host in self.hosts:
            ns, veth = self.netns[host], self.veth[host]
            state["netns"].append(ns)
            state["links"].append(veth)
            self._record(state)
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", f"{veth}n")
            _ip("link", "set", f"{veth}n", "netns", ns)
            _ip("-n", ns, "link", "set", f"{veth}n", "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{self.addr[host]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("link", "set", veth, "master", self.bridge)
            _ip("link", "set", veth, "up")
            if host in self.link_limits:
                self.limit_link(host, self.link_limits[host])
            elif self.fabric:
                self.limit_link(host, self.fabric.tc_rate, "TOPOFOAM_FABRIC")
        if self.fabric:
            state["fabric"] = {"label": self.fabric.label(), "lib": str(self.fabric_lib)}
            state["fabric"].update(vars(self.fabric))
            state["fabric"]["factors"] = self.latency_factors
            self._record(state)

    def _build_fabric(self) -> None:
        try:
            fabric.build(self.fabric_lib)
        except fabric.FabricError as e:
            raise SlurmError(f"TOPOFOAM_FABRIC={self.fabric.name}: {e}, or unset it") from None

    def fabric_in_force(self) -> dict | None:
        """The fabric profile the running cluster applies (its state), or None."""
        return self._state().get("fabric")

    def fabric_env(self) -> dict[str, str]:
        """What a job on the cluster needs for the profile in force: the latency's interposer
        preloaded, and the latency."""
        f = self.fabric_in_force()
        if not f:
            return {}
        env = {
            "LD_PRELOAD": f["lib"],
            "TOPOFOAM_FABRIC_LATENCY_US": f"{f['latency_us']:.3f}",
            "TOPOFOAM_FABRIC_MBYTES": f"{f['mbytes']:.3f}",
        }
        if f.get("factors"):
            env["TOPOFOAM_FABRIC_LATENCY_FACTORS"] = ",".join(
                f"{host}={factor:g}" for host, factor in f["factors"].items()
            )
        return env

    def limit_link(self, host: str, rate: str, setting: str = "TOPOFOAM_EMU_LINKS") -> None:
        """Make ``host``'s link a slow one: a token bucket (tc's tbf) of ``rate`` on both ends
        of its veth pair, so traffic to and from the node is limited. These kernels have
        tbf but not netem: a rate can be injected, a delay cannot. The qdiscs go with the
        links when the cluster stops."""
        # A bucket of 64 KiB (reframe/src/fabric's BUCKET: the fabric's interposer charges
        # smaller messages their bandwidth itself), one segment train of TCP's (a larger bucket lets a whole
        # message pass at the link's own speed: with 10 ms of the rate, 1 MiB messages came
        # through at twice a 1 Gbit/s limit), and a queue of at most 50 ms: TCP then sees
        # drops and backs off to the rate.
        tbf = ["root", "tbf", "rate", rate, "burst", "64kb", "latency", "50ms"]
        for prefix, dev in (([], self.veth[host]), (["-n", self.netns[host]], "eth0")):
            done = subprocess.run(
                ["tc", *prefix, "qdisc", "replace", "dev", dev, *tbf],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise SlurmError(
                    f"cannot limit {host}'s link to {rate} (tc: {done.stderr.strip()}) -- the "
                    f"kernel needs the tbf qdisc (sch_tbf); unset {setting}"
                )

    def write_files(self) -> None:
        """The cluster's slurm.conf and the files it names, without its network or daemons
        (start() runs it; a dry run's Slurm clients need only the configuration)."""
        r = self.root
        for sub in ("state", "log", "munge", "tmp"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        for host in self.hosts:
            # Nothing of an earlier cluster in this folder survives: its job ids come again.
            shutil.rmtree(r / f"tmp-{host}", ignore_errors=True)
            (r / f"tmp-{host}").mkdir()
        self.munge_socket.parent.mkdir(parents=True, exist_ok=True)
        spool_dir(self.munge_socket).mkdir(exist_ok=True)
        (r / "hosts").write_text(
            "127.0.0.1 localhost\n"
            + f"{self.ctl_addr} ctl\n"
            + "".join(f"{self.addr[h]} {h}\n" for h in self.hosts)
        )
        (r / "plugstack.conf").write_text("# empty: no SPANK plugins\n")
        # slurmd reads mpi.conf beside slurm.conf and hands it to every step's PMIx server.
        (r / "mpi.conf").write_text(f"PMIxTimeout={self.pmix_timeout}\n")
        nodes = "".join(self._node_line(h) for h in self.hosts)
        partitions = "".join(
            f"PartitionName={g.partition} "
            f"Nodes={','.join(h for h in self.hosts if self.group_of[h] is g)} "
            f"Default={'YES' if g is self.groups[0] else 'NO'} MaxTime=INFINITE State=UP\n"
            for g in self.groups
        )
        prolog = ""
        if any(g.topology_xml for g in self.groups):
            prolog = f"TaskProlog={self._task_prolog()}\n"
        self.conf.write_text(f"""\
# Generated by TopoFOAM bench (localsite/cluster.py): an emulated cluster.
ClusterName=topofoam-emu
SlurmctldHost=ctl({self.ctl_addr})
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmctldPidFile={r}/log/slurmctld.pid
SlurmdPidFile={r}/log/slurmd-%n.pid
# The declared layout may exceed the real cores: binding is accepted but not applied, and
# the nodes register with what slurm.conf declares (config_overrides), not what they have.
# A node that stops answering is marked down after SlurmdTimeout s (its jobs then fail:
# NODE_FAIL): 10 here, where a node failure is tested; a twin's nodes run a site's ranks per
# node on this machine's cores, which starve the daemons for minutes (MessageTimeout too).
{common_settings(r, self.munge_socket, "task/none")}SlurmdTimeout={self.slurmd_timeout}
MessageTimeout={min(100, max(10, self.slurmd_timeout // 6))}
SlurmdParameters=config_overrides
{prolog}{nodes}{partitions}""")

    def _node_line(self, host: str) -> str:
        g = self.group_of[host]
        lay = g.layout
        features = f" Feature={','.join(g.features)}" if g.features else ""
        return (
            f"NodeName={host} NodeAddr={self.addr[host]} NodeHostname={host} "
            f"Sockets={lay.sockets} CoresPerSocket={lay.cores_per_socket} "
            f"ThreadsPerCore={lay.threads_per_core} RealMemory={lay.memory_mib}{features} "
            f"State=UNKNOWN\n"
        )

    def _task_prolog(self) -> Path:
        """Slurm's TaskProlog: every task on a node of a group with a topology gets
        HWLOC_XMLFILE (Slurm exports what the prolog prints as 'export NAME=VALUE')."""
        script = self.root / "taskprolog.sh"
        cases = "".join(
            f"    {h}) echo export HWLOC_XMLFILE={self.group_of[h].topology_xml} ;;\n"
            for h in self.hosts
            if self.group_of[h].topology_xml
        )
        script.write_text(f'#!/bin/sh\ncase "$(hostname)" in\n{cases}esac\n')
        script.chmod(0o755)
        return script

    def _in_namespaces(
        self, hostname: str, command: str, netns: str | None = None, tmpfs: Path | None = None
    ) -> list[str]:
        """argv running ``command`` as ``hostname`` with our hosts file (and TmpFS)."""
        mounts = f"mount --bind {self.root / 'hosts'} /etc/hosts"
        if tmpfs:
            mounts += f" && mount --bind {tmpfs} {self.node_tmp}"
        for source, target in self.binds.get(hostname, []):
            mounts += f" && mount --bind {shlex.quote(source)} {shlex.quote(target)}"
        inner = [
            "unshare",
            "--uts",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            f"hostname {hostname} && {mounts} && exec {command}",
        ]
        # nsenter, not 'ip netns exec': the latter remounts /sys and breaks Slurm's plugins.
        return (["nsenter", f"--net=/run/netns/{netns}"] + inner) if netns else inner

    def _daemons(self) -> None:
        self.start_munge(self.log_dir / "munged.pid")
        self.spawn("slurmctld", self._in_namespaces("ctl", f"slurmctld -D -c -f {self.conf}"))
        self.wait_ready(
            lambda: self.node_states() is not None, 20, "slurmctld", self.daemon_log("slurmctld")
        )
        for host in self.hosts:
            argv = self._in_namespaces(
                host,
                f"slurmd -D -N {host} -f {self.conf}",
                self.netns[host],
                self.root / f"tmp-{host}",
            )
            if host in self.cpu_quotas:
                argv = self._under_quota(host, argv)
            self.spawn(f"slurmd-{host}", argv)
        self.spawn("fencewatch", [sys.executable, "-m", "localsite.fencewatch", str(self.root)])

    def _under_quota(self, host: str, argv: list[str]) -> list[str]:
        """``argv`` started inside a CPU quota of its own: the node's slurmd, and so every
        job step it starts (proctrack/linuxproc leaves them in its cgroup), runs slower."""
        try:
            group = cpuquota.make(self.cpu_quotas[host], f"topofoam-{self.bridge}-{host}")
        except cpuquota.QuotaError as e:
            raise SlurmError(f"TOPOFOAM_EMU_CPU: {e}, or unset it") from None
        state = self._state()
        state.setdefault("cgroups", []).append(str(group))
        self._record(state)
        enter = f'echo $$ > {group / "cgroup.procs"} && exec "$@"'
        return ["sh", "-c", enter, "sh", *argv]

    # -- stop ------------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Stop our daemons (slurmd first), kill what still runs in our namespaces, delete
        them, our links and the bridge."""
        state = self._state()
        alive = self.running()
        for name, proc in self._procs.items():
            if name not in alive and proc.poll() is None:
                alive[name] = proc.pid  # ours, just started: its command line may not show it
        self._procs.clear()
        order = sorted(alive, key=lambda n: (not n.startswith("slurmd"), n != "slurmctld"))
        for name in order:
            terminate(alive[name], 15.0)
        removed = list(order)
        for ns in state["netns"]:
            # Job steps outlive a slurmd that died (a crashed node, an interrupted run): kill
            # what still runs in the node, or deleting the namespace leaves it running.
            pids = subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True
            ).stdout.split()
            if pids:
                subprocess.run(["kill", "-9", *pids], capture_output=True)
            if subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode == 0:
                removed.append(ns)
        for link in reversed(state["links"]):
            if subprocess.run(["ip", "link", "del", link], capture_output=True).returncode == 0:
                removed.append(link)
        for group in state.get("cgroups", []):
            cpuquota.remove(Path(group))
        self.state_file.unlink(missing_ok=True)
        shutil.rmtree(spool_dir(self.munge_socket), ignore_errors=True)
        try:
            self.munge_socket.parent.rmdir()
        except OSError:
            pass
        return removed
