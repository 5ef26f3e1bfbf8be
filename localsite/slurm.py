"""A real, single-node Slurm for the local site: munged, slurmctld and slurmd started by us.

Everything lives under one project-owned folder (default ``<repo>/.run/slurm``): the generated
``slurm.conf``, a private munge key and socket, state, spool, logs and the PID files of the
daemons we started. The daemons run in the foreground as our children (``-D``/``-F``) in a new
session, so the PID we record is the daemon itself; ``stop`` signals exactly those PIDs, after
checking that each one still runs the command we started (a recycled PID is left alone).

Every Slurm client must be given ``SLURM_CONF`` (see :meth:`LocalSlurm.client_env`): without it
Slurm looks the controller up through DNS, off the machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from localsite import meminfo
from topofoam import paths
from topofoam.config import settings

DAEMONS = ("munged", "slurmctld", "slurmd")


class SlurmError(RuntimeError):
    """A local Slurm problem, with a message that names the cause and the fix."""


@dataclass(frozen=True)
class NodeLayout:
    """What slurm.conf declares for the node: hwloc's view of this machine."""

    sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_mib: int

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


def _hwloc_count(kind: str) -> int:
    out = subprocess.run(
        ["hwloc-calc", "--number-of", kind, "all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.strip())


def detect_layout() -> NodeLayout:
    """This machine's sockets, cores and threads from hwloc, and 90 % of its memory."""
    if shutil.which("hwloc-calc") is None:
        raise SlurmError("hwloc-calc not found -- run ./bench setup (package hwloc)")
    packages = max(_hwloc_count("package"), 1)
    cores = _hwloc_count("core")
    pus = _hwloc_count("pu")
    return NodeLayout(
        sockets=packages,
        cores_per_socket=max(cores // packages, 1),
        threads_per_core=max(pus // max(cores, 1), 1),
        memory_mib=int(meminfo.meminfo_mib()["MemTotal"] * 0.9),
    )


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def cmdline_of(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")[:-1] or None


def wait_for(ready, exited, timeout: float, name: str, log: Path) -> None:
    """Wait until ``ready()``; raise naming ``name`` and the tail of ``log`` if the daemon
    exits (``exited()``) or is not ready in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if exited():
            raise SlurmError(f"{name} exited -- see {log}; its last lines:\n{tail(log)}")
        if ready():
            return
        time.sleep(0.2)
    raise SlurmError(
        f"{name} not ready after {timeout:.0f} s -- see {log}; its last lines:\n{tail(log)}"
    )


def query_sinfo(env: dict, fmt: str) -> list[str] | None:
    """sinfo's node lines in ``fmt``, or None when the controller does not answer."""
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", fmt], env=env, capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        return None
    return out.stdout.splitlines() if out.returncode == 0 else None


def spool_dir(munge_socket: Path) -> Path:
    """slurmd's spool, beside our munge socket under /run: PMIx puts a UNIX socket for every
    job step there, and a socket path may have 107 characters at most (under a deep results
    folder, job 11 was one too many)."""
    return munge_socket.parent / "spool"


def common_settings(root: Path, munge_socket: Path, task_plugin: str) -> str:
    """slurm.conf lines shared by the local node and the emulated cluster: root-run daemons,
    munge on our own socket, state and logs under ``root`` (per node with %n), no accounting
    (hence ReFrame's squeue scheduler), PMIx for srun, and no requeueing: a benchmark run
    whose node fails is a failed run, not one that silently starts again later; a task that
    dies ends its step (KillOnBadExit): its MPI peers would wait for it to the time limit
    (a rank's SIGSEGV in Open MPI 4.1's MPI_Init left 6 ranks spinning for minutes)."""
    r = root
    return f"""\
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={spool_dir(munge_socket)}/%n
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS={r}/tmp
PlugStackConfig={r}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin={task_plugin}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
SwitchType=switch/none
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
JobRequeue=0
KillOnBadExit=1
MailProg=/bin/true
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
"""


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} does not exist)"
    return "\n".join(text[-lines:]) or f"({path} is empty)"


class SlurmDaemons:
    """What the local node and the emulated cluster share: Slurm daemons we start as our own
    children, each logging to ``<log_dir>/<name>.out``, one munged on a private socket, the
    clients' environment, and the wait until every node is up.

    A subclass sets ``root``, ``conf``, ``log_dir`` and ``munge_socket``, names its daemons
    (``daemon_names``), says where each logs (``daemon_log``), how it remembers a PID it
    started (``remember``) and which of them still run (``running``), and lists its nodes'
    states (``node_states``).
    """

    root: Path
    conf: Path
    log_dir: Path
    munge_socket: Path
    #: What to call the nodes in messages.
    nodes_name = "nodes"

    def __init__(self):
        # Daemons this object started: their exit is known exactly, without reading /proc
        # (between fork and exec a child's command line is still Python's).
        self._procs: dict[str, subprocess.Popen] = {}

    # -- what a subclass says -------------------------------------------------------------

    def daemon_names(self) -> list[str]:
        raise NotImplementedError

    def daemon_log(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def remember(self, name: str, pid: int) -> None:
        raise NotImplementedError

    def running(self) -> dict[str, int]:
        raise NotImplementedError

    def node_states(self) -> dict[str, str] | None:
        """{node: state} as sinfo reports them, or None when the controller does not answer."""
        lines = query_sinfo(self.client_env(), "%N %T")
        return None if lines is None else dict(line.split() for line in lines)

    def expected_nodes(self) -> int:
        return 1

    # -- shared ---------------------------------------------------------------------------

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for Slurm clients (sbatch, squeue, srun, ReFrame) of this cluster."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        return env

    def spawn(self, name: str, argv: list[str]) -> int:
        """Start a daemon in the foreground of a new session: the PID is the daemon's."""
        with open(self.log_dir / f"{name}.out", "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=self.client_env(),
            )
        self._procs[name] = proc
        self.remember(name, proc.pid)
        return proc.pid

    def exited(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc.poll() is not None if proc else name not in self.running()

    def wait_ready(self, ready, timeout: float, name: str, log: Path) -> None:
        wait_for(ready, lambda: self.exited(name), timeout, name, log)

    def start_munge(self, pid_file: Path) -> None:
        """munged with a private key on our own socket, ready when the socket is there."""
        key = self.root / "munge" / "munge.key"
        key.parent.mkdir(parents=True, exist_ok=True)
        if not key.exists():
            subprocess.run(
                ["mungekey", "--create", f"--keyfile={key}", "--bits=1024"],
                check=True,
                capture_output=True,
            )
        key.chmod(0o400)
        # munged refuses a socket folder that others may write to or cannot enter.
        for folder in (self.munge_socket.parent.parent, self.munge_socket.parent):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o755)
        for stale in self.munge_socket.parent.glob("munge.socket*"):
            stale.unlink()
        self.spawn(
            "munged",
            [
                "munged",
                "-F",
                f"--socket={self.munge_socket}",
                f"--key-file={key}",
                f"--pid-file={pid_file}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}",
                f"--log-file={self.log_dir / 'munged.log'}",
            ],
        )
        self.wait_ready(self.munge_socket.exists, 10, "munged", self.log_dir / "munged.out")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until every node is idle (or in use by jobs: mixed/allocated also count);
        a daemon that exits meanwhile is named with its log."""
        deadline = time.monotonic() + timeout
        states: dict | None = None
        while time.monotonic() < deadline:
            for name in self.daemon_names():
                if self.exited(name):
                    log = self.daemon_log(name)
                    raise SlurmError(f"{name} exited -- see {log}; its last lines:\n{tail(log)}")
            states = self.node_states()
            if (
                states
                and len(states) == self.expected_nodes()
                and all(
                    st.rstrip("*~#") in ("idle", "mixed", "allocated") for st in states.values()
                )
            ):
                return
            time.sleep(0.3)
        raise SlurmError(
            f"the {self.nodes_name} did not become idle within {timeout:.0f} s (states: "
            f"{states}) -- see the slurmd logs in {self.log_dir}"
        )


class LocalSlurm(SlurmDaemons):
    """One Slurm node on this machine, all of its files under ``root``."""

    partition = "local"
    nodes_name = "node"

    def __init__(
        self,
        root: Path | None = None,
        *,
        ctld_port: int | None = None,
        slurmd_port: int | None = None,
        hostname: str | None = None,
        task_plugin: str = "task/affinity",
    ):
        super().__init__()
        self.root = Path(root or paths.run_dir() / "slurm").resolve()
        #: task/affinity: srun binds ranks as told. task/none is the node misconfigured on
        #: purpose (the binding check's positive control): srun accepts --cpu-bind and
        #: binds nothing.
        self.task_plugin = task_plugin
        ports = settings.local_slurm_ports() if not (ctld_port and slurmd_port) else None
        self.ctld_port = ctld_port or ports[0]
        self.slurmd_port = slurmd_port or ports[1]
        self.hostname = hostname or socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self.log_dir = self.root / "log"
        # munged needs execute permission for all on every folder above its socket; a clone
        # under a private home (e.g. /root, mode 0700) fails that, so the socket lives in /run.
        tag = hashlib.sha256(str(self.root).encode()).hexdigest()[:12]
        self.munge_socket = Path(
            os.environ.get("TOPOFOAM_MUNGE_DIR", "/run/topofoam-munge"), tag, "munge.socket"
        )

    # -- configuration ---------------------------------------------------------------------

    def write_config(self, layout: NodeLayout | None = None) -> Path:
        layout = layout or detect_layout()
        r = self.root
        for sub in ("state", "log", "tmp", "munge", "pids"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        # munged refuses a socket folder that others may write to or cannot enter.
        self.munge_socket.parent.mkdir(parents=True, exist_ok=True)
        spool_dir(self.munge_socket).mkdir(exist_ok=True)
        (r / "plugstack.conf").write_text("# empty: no SPANK plugins for the local cluster\n")
        host = self.hostname
        self.conf.write_text(f"""\
# Generated by TopoFOAM bench (localsite/slurm.py) from this machine's hwloc topology.
ClusterName=topofoam
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmctldPidFile={r}/pids/slurmctld.pid.slurm
SlurmdPidFile={r}/pids/slurmd-%n.pid.slurm
{common_settings(r, self.munge_socket, self.task_plugin)}SlurmdTimeout=60
NodeName={host} NodeAddr=127.0.0.1 NodeHostname={host} Sockets={layout.sockets} \
CoresPerSocket={layout.cores_per_socket} ThreadsPerCore={layout.threads_per_core} \
RealMemory={layout.memory_mib} State=UNKNOWN
PartitionName={self.partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        return self.conf

    # -- daemons ---------------------------------------------------------------------------

    def _pidfile(self, name: str) -> Path:
        return self.root / "pids" / f"{name}.pid"

    def daemon_names(self) -> list[str]:
        return list(DAEMONS)

    def daemon_log(self, name: str) -> Path:
        if name == "slurmd":
            return self.log_dir / f"slurmd-{self.hostname}.log"
        return self.log_dir / f"{name}.log"

    def remember(self, name: str, pid: int) -> None:
        self._pidfile(name).write_text(f"{pid}\n")

    def running(self) -> dict[str, int]:
        """The daemons we started that still run, by name: PID."""
        alive = {}
        for name in DAEMONS:
            pid = self._read_pid(name)
            if pid is not None:
                alive[name] = pid
        return alive

    def _read_pid(self, name: str) -> int | None:
        """The PID from our PID file, if that process still runs the command we started."""
        try:
            pid = int(self._pidfile(name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        cmd = cmdline_of(pid)
        # Ours only if it is the same daemon with our own files (key file or slurm.conf).
        if not cmd or Path(cmd[0]).name != name or not any(str(self.root) in a for a in cmd):
            return None
        return pid

    def _check_can_start(self) -> None:
        if os.geteuid() != 0:
            raise SlurmError(
                "not root -- the local Slurm daemons run as root; "
                "run as root (or with sudo), or use the 'cpu' partition only"
            )
        for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sinfo"):
            if shutil.which(tool) is None:
                raise SlurmError(
                    f"{tool} not found -- run ./bench setup (packages slurm-wlm, munge)"
                )
        for port, what in ((self.ctld_port, "slurmctld"), (self.slurmd_port, "slurmd")):
            if port_in_use(port):
                raise SlurmError(
                    f"port {port} for {what} is already in use (another Slurm on this machine?) "
                    f"-- stop it, or choose free ports with TOPOFOAM_SLURMCTLD_PORT and "
                    f"TOPOFOAM_SLURMD_PORT"
                )

    def start(self, timeout: float = 60.0) -> None:
        """Start munged, slurmctld and slurmd (those not already running) and wait for idle."""
        alive = self.running()
        if len(alive) == len(DAEMONS) and self.conf.exists():
            try:
                self.wait_idle(timeout)
            except SlurmError:
                self.stop()
                raise
            return
        if alive:
            # A partial set from a crashed earlier run: start again from a clean slate.
            self.stop()
        self._check_can_start()
        self.write_config()
        try:
            self.start_munge(self.root / "pids" / "munged.pid.munge")
            self.spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
            self.wait_ready(
                lambda: self.node_states() is not None,
                20,
                "slurmctld",
                self.daemon_log("slurmctld"),
            )
            self.spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.hostname])
            self.wait_idle(timeout)
        except SlurmError:
            self.stop()
            raise

    def stop(self, timeout: float = 15.0) -> list[str]:
        """Stop the daemons we started, slurmd first; returns the names that were stopped."""
        stopped = []
        for name in reversed(DAEMONS):
            pid = self._read_pid(name)
            proc = self._procs.pop(name, None)
            if pid is None and proc is not None and proc.poll() is None:
                pid = proc.pid  # ours, just started: its command line may not show it yet
            if pid is not None:
                terminate(pid, timeout)
                stopped.append(name)
            self._pidfile(name).unlink(missing_ok=True)
        shutil.rmtree(spool_dir(self.munge_socket), ignore_errors=True)
        try:
            self.munge_socket.parent.rmdir()  # ours, and empty once munged has exited
        except OSError:
            pass
        return stopped


def terminate(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while not _gone(pid):
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    """True once the process is gone or a zombie; reaps it when it is our own child."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass  # not our child: look at /proc
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return True
