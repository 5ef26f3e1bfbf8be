"""The suite's settings variables (TOPOFOAM_*), each read against its domain in one place.

A variable that is unset or empty takes its default. A value outside the domain is refused
with the values it takes; it is never taken as unset, since a run with a setting the user
did not mean is a run whose numbers answer another question. (The folders, TOPOFOAM_RESULTS,
TOPOFOAM_CACHE and the like, are read in topofoam.paths: any path is a path.)
"""

from __future__ import annotations

import ipaddress
import os
import re


class SettingError(ValueError):
    """A settings variable outside its domain; the message names it and the fix."""


def _text(name: str) -> str | None:
    text = os.environ.get(name, "").strip()
    return text or None


def choice(name: str, allowed: dict[str, str], default: str) -> str:
    """One of ``allowed`` (value -> what it means)."""
    text = _text(name)
    if text is None:
        return default
    if text not in allowed:
        said = "; ".join(f"{k}: {v}" for k, v in allowed.items())
        raise SettingError(
            f"{name}={text!r} is not a value it takes -- give one of {said} (or unset it: "
            f"{default})"
        )
    return text


def whole(name: str, default: int, least: int = 1, most: int | None = None) -> int:
    """A whole number in [least, most]."""
    text = _text(name)
    if text is None:
        return default
    if not text.isdigit() or int(text) < least or (most is not None and int(text) > most):
        bounds = f"{least} to {most}" if most is not None else f"{least} or more"
        raise SettingError(
            f"{name}={text!r} is not a whole number {bounds} -- give one (or unset it: {default})"
        )
    return int(text)


def port(name: str, default: int, most: int = 65535) -> int:
    """A TCP port a daemon of ours can listen on (unprivileged ports are allowed too)."""
    return whole(name, default, 1, most)


def local_slurm_ports() -> tuple[int, int]:
    """TOPOFOAM_SLURMCTLD_PORT and TOPOFOAM_SLURMD_PORT: the local Slurm's two daemons,
    which cannot share a port."""
    ctld = port("TOPOFOAM_SLURMCTLD_PORT", 6817)
    slurmd = port("TOPOFOAM_SLURMD_PORT", 6818)
    if ctld == slurmd:
        raise SettingError(
            f"TOPOFOAM_SLURMCTLD_PORT and TOPOFOAM_SLURMD_PORT are both {ctld}: slurmctld and "
            f"slurmd cannot listen on one port -- give them two (or unset them: 6817, 6818)"
        )
    return ctld, slurmd


def emu_slurmctld_port() -> int:
    """TOPOFOAM_EMU_SLURMCTLD_PORT: the emulated cluster's slurmctld; its slurmd listens on
    the next port, so 65534 at most."""
    return port("TOPOFOAM_EMU_SLURMCTLD_PORT", 6817, most=65534)


def subnet(name: str, default: str) -> str:
    """The first three octets of a private /24 (10.x.y, 172.16-31.x, 192.168.x): the
    emulated cluster's addresses must never reach outside the machine."""
    text = _text(name)
    if text is None:
        return default
    try:
        net = ipaddress.ip_network(f"{text}.0/24")
    except ValueError:
        net = None
    if net is None or not net.is_private or net.is_loopback or text.count(".") != 2:
        raise SettingError(
            f"{name}={text!r} is not the first three octets of a private /24 -- give e.g. "
            f"10.77.0 or 192.168.77 (or unset it: {default})"
        )
    return text


# -- the variables -------------------------------------------------------------------------


def compare() -> str:
    """TOPOFOAM_COMPARE: which cases the local site's timed comparisons run on."""
    return choice("TOPOFOAM_COMPARE", {"all": "every case", "kinds": "one case per kind"}, "kinds")


def repeats() -> int:
    """TOPOFOAM_REPEATS: repeats of every timed comparison on the local cpu partition."""
    return whole("TOPOFOAM_REPEATS", 5)


def validate_repeats(default: int) -> int:
    """TOPOFOAM_VALIDATE_REPEATS: repeats of each validation measurement on the local site
    (``default``: the suite's). 3 at least: the judgement's confidence interval needs them;
    100 at most: each repeat is a test case of its own (100 make a session of hours here, and
    100,000 a listing that never ends)."""
    return whole("TOPOFOAM_VALIDATE_REPEATS", default, least=3, most=100)


_RATE = re.compile(r"^(\d+(?:\.\d+)?)(kbit|mbit|gbit)$")
_BITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def rate_mbytes(rate: str) -> float | None:
    """A tc rate (``200mbit``) in MB/s (10^6 bytes), or None if it is not one."""
    m = _RATE.match(rate.strip())
    return float(m.group(1)) * _BITS[m.group(2)] / 8 / 1e6 if m else None


def emu_links() -> dict[str, str]:
    """TOPOFOAM_EMU_LINKS: emulated nodes whose link is rate-limited (tc's token bucket),
    ``node3=100mbit,node1=1gbit``: a slow link, injected on purpose (tests, demonstrations)."""
    text = _text("TOPOFOAM_EMU_LINKS")
    if text is None:
        return {}
    limits = {}
    for item in text.split(","):
        host, _, rate = item.strip().partition("=")
        if not re.fullmatch(r"node[1-8]", host.strip()) or not rate_mbytes(rate):
            raise SettingError(
                f"TOPOFOAM_EMU_LINKS={text!r}: {item.strip()!r} is not NODE=RATE -- give e.g. "
                f"node3=100mbit (nodes node1 to node8, rates in kbit, mbit or gbit; or unset "
                f"it: no link limited)"
            )
        if host.strip() in limits:
            raise SettingError(
                f"TOPOFOAM_EMU_LINKS={text!r} names {host.strip()} twice -- give each node once"
            )
        limits[host.strip()] = rate.strip()
    return limits


def _node_numbers(name: str, what: str, example: str, low: float, high: float) -> dict[str, float]:
    """``name``: emulated nodes each with a number in (low, high], ``node3=0.8,node1=0.9``."""
    text = _text(name)
    if text is None:
        return {}
    numbers: dict[str, float] = {}
    for item in text.split(","):
        host, _, number = (part.strip() for part in item.partition("="))
        try:
            value = float(number)
        except ValueError:
            value = float("nan")
        if not re.fullmatch(r"node[1-8]", host) or not low < value <= high or host in numbers:
            raise SettingError(
                f"{name}={text!r}: {item.strip()!r} is not NODE={what.split()[0].upper()}, each "
                f"node once -- give e.g. {example} (nodes node1 to node8, {what} above {low:g} "
                f"and at most {high:g}; or unset it)"
            )
        numbers[host] = value
    return numbers


def emu_cpu() -> dict[str, float]:
    """TOPOFOAM_EMU_CPU: emulated nodes whose processes share only a fraction of this
    machine's cores' time (a CPU quota), ``node3=0.8``: one slow node among its peers,
    injected on purpose (the node screening's positive control)."""
    return _node_numbers(
        "TOPOFOAM_EMU_CPU", "fraction of the machine's cores' time", "node3=0.8", 0, 1
    )


def emu_latency() -> dict[str, float]:
    """TOPOFOAM_EMU_LATENCY: emulated nodes whose inter-node latency is a multiple of the
    fabric profile's, ``node3=2``: one node with a doubled latency among its peers, injected
    on purpose (the fabric screening's positive control). Needs TOPOFOAM_FABRIC: the latency
    is the fabric interposer's (these kernels have no netem)."""
    return _node_numbers("TOPOFOAM_EMU_LATENCY", "factor of the latency", "node3=2", 0, 100)


def emu_binds() -> dict[str, list[tuple[str, str]]]:
    """TOPOFOAM_EMU_BIND: files bind-mounted over others inside one emulated node's mount
    namespace, ``node2=/tmp/meminfo:/proc/meminfo``: a node unlike its peers in one respect
    (half its memory, another library's version), injected on purpose (the node screening's
    fingerprint control). Several are separated by commas."""
    text = _text("TOPOFOAM_EMU_BIND")
    if text is None:
        return {}
    binds: dict[str, list[tuple[str, str]]] = {}
    for item in text.split(","):
        host, _, spec = (part.strip() for part in item.partition("="))
        source, _, target = spec.partition(":")
        if (
            not re.fullmatch(r"node[1-8]", host)
            or not os.path.isabs(source)
            or not os.path.isabs(target)
            or not os.path.exists(source)
            or not os.path.exists(target)
        ):
            raise SettingError(
                f"TOPOFOAM_EMU_BIND={text!r}: {item.strip()!r} is not NODE=SOURCE:TARGET with "
                f"two existing absolute paths -- give e.g. node2=/tmp/meminfo:/proc/meminfo "
                f"(or unset it: nothing bound)"
            )
        binds.setdefault(host, []).append((source, target))
    return binds


def check_all() -> None:
    """Refuse, before anything starts, any settings variable outside its domain."""
    compare()
    repeats()
    from topofoam.config import sweepspace  # the suite's count is the validation's own

    validate_repeats(sweepspace.VALIDATE_REPEATS)
    local_slurm_ports()
    emu_slurmctld_port()
    subnet("TOPOFOAM_EMU_SUBNET", "10.77.0")
    emu_links()
    emu_cpu()
    emu_binds()
    from topofoam.config import fabric  # it reads its table through this module

    if not fabric.from_environment() and emu_latency():
        raise SettingError(
            f"TOPOFOAM_EMU_LATENCY={_text('TOPOFOAM_EMU_LATENCY')!r} multiplies the fabric "
            f"profile's latency, and TOPOFOAM_FABRIC names none -- set e.g. "
            f"TOPOFOAM_FABRIC=vsc5x30, or unset TOPOFOAM_EMU_LATENCY"
        )
