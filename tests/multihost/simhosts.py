"""Simulated hosts on one machine: MPICH's launcher, a stand-in for ssh, a disk per host.

MPICH's hydra starts one proxy per host with ``ssh HOST COMMAND``;
``-launcher ssh -launcher-exec simssh`` (or ``HYDRA_LAUNCHER=ssh`` and
``HYDRA_LAUNCHER_EXEC=simssh`` in the environment) makes it call the script
``simssh`` beside this file instead. simssh runs the command under
``unshare --uts --mount --propagation private`` with the host name set and the
host's own directory (``hosts/HOST`` here) bind-mounted on the working path
common to all hosts (``work``), so each simulated host has its own disk at the
same path while the network (loopback) is shared, as on a cluster without a
shared file system.

Host names map to distinct 127.0.1.x addresses in ``/etc/hosts`` (added once,
idempotently, under a lock). Not 127.0.1.1: hydra launched a name on that
address locally, without the launcher (measured on this machine).

The MPI traffic is forced onto TCP (``UCX_TLS=tcp,self``):
the simulated hosts share one machine's memory, and MPICH's UCX netmod would
otherwise be free to pick a shared-memory path between them.

Every command is bounded in time; a command that runs over is killed with its
whole process group, and :meth:`SimHosts.close` kills, by pid, any process
still carrying this harness's working path in its environment.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
MPIEXEC = str(BIN / "mpiexec")
SIMSSH = Path(__file__).with_name("simssh")
HOSTS = {"node1": "127.0.1.21", "node2": "127.0.1.22"}
_HOSTS_FILE = Path("/etc/hosts")
_LOCK = Path("/tmp/abc-simhosts.lock")


def _map_names(names: dict[str, str]) -> str | None:
    """Add ``ADDR NAME`` lines to /etc/hosts for the names not there yet; None, or why it cannot."""
    try:
        with open(_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            text = _HOSTS_FILE.read_text()
            have = {}
            for line in text.splitlines():
                fields = line.split("#", 1)[0].split()
                for name in fields[1:]:
                    have.setdefault(name, fields[0])
            add = []
            for name, addr in names.items():
                if name not in have:
                    add.append(f"{addr} {name}    # ABC simulated host (tests/multihost)")
                elif have[name] != addr:
                    return f"/etc/hosts maps {name} to {have[name]}, the simulated hosts need {addr}"
            if add:
                with open(_HOSTS_FILE, "a") as fh:
                    fh.write(("" if text.endswith("\n") or not text else "\n") + "\n".join(add) + "\n")
    except OSError as exc:
        return f"cannot add the simulated host names to /etc/hosts ({exc.strerror})"
    return None


_REASON: list = []


def unavailable() -> str | None:
    """None when hosts can be simulated here, else the reason (tests skip with it)."""
    if _REASON:
        return _REASON[0]
    reason = None
    if shutil.which("unshare") is None:
        reason = "unshare (util-linux) is not installed"
    elif not os.access(SIMSSH, os.X_OK):
        reason = f"{SIMSSH} is not executable"
    else:
        r = subprocess.run(["unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c",
                            "hostname abc-probe && mount --bind /tmp /tmp"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            reason = f"unshare --uts --mount is not permitted here: {r.stderr.strip() or r.returncode}"
        else:
            reason = _map_names(HOSTS)
    _REASON.append(reason)
    return reason


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class SimHosts:
    """Simulated hosts under ``base``: ``base/hosts/HOST`` is what HOST sees at ``base/work``."""

    def __init__(self, base: Path, hosts=tuple(HOSTS)):
        self.base = Path(base)
        self.work = self.base / "work"          # the common working path (-wdir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.hosts = list(hosts)
        for h in self.hosts:
            self.disk(h).mkdir(parents=True, exist_ok=True)
        self._procs: list[subprocess.Popen] = []

    def disk(self, host: str) -> Path:
        """Where the test (outside every simulated host) reaches HOST's disk."""
        return self.base / "hosts" / host

    def env(self) -> dict:
        env = dict(os.environ)
        env.update({
            "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "SIMHOSTS_ROOT": str(self.base / "hosts"), "SIMHOSTS_WORK": str(self.work),
            "HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": str(SIMSSH),
            "UCX_TLS": "tcp,self",
        })
        return env

    def hostfile(self, *placement: tuple[str, int]) -> Path:
        """A hostfile ``HOST:SLOTS`` per line, outside every host's disk (mpiexec reads it)."""
        text = "".join(f"{h}:{n}\n" for h, n in placement)
        p = self.base / ("hostfile-" + "-".join(f"{h}{n}" for h, n in placement))
        p.write_text(text)
        return p

    def mpiexec_cmd(self, hostfile: Path, n: int, *args: str) -> list[str]:
        """MPICH's launcher with the ssh stand-in; run from outside every host, ranks start in ``work``."""
        return [MPIEXEC, "-launcher", "ssh", "-launcher-exec", str(SIMSSH), "-f", str(hostfile), "-n", str(n),
                "-wdir", str(self.work), *args]

    def popen(self, cmd: list[str]) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        self._procs.append(proc)
        return proc

    def run(self, cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
        """Run ``cmd``; on timeout its whole process group is killed and TimeoutError raised."""
        proc = self.popen(cmd)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise TimeoutError(f"{cmd[:6]}... did not end within {timeout} s") from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def mpiexec(self, hostfile: Path, n: int, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return self.run(self.mpiexec_cmd(hostfile, n, *args), timeout)

    def on(self, host: str, command: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """Run a shell command on HOST in the working path, as ``ssh HOST 'cd WORK && COMMAND'`` would."""
        return self.run([str(SIMSSH), host, f"cd {self.work} && {command}"], timeout)

    def rank_pids(self) -> dict[int, int]:
        """MPI rank -> pid of this harness's abc-crawl processes now running."""
        out = {}
        for pid in self._own_pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            rank = next((e.split(b"=", 1)[1] for e in env if e.startswith(b"PMI_RANK=")), None)
            if rank is not None and any(c.endswith(b"abc-crawl") for c in cmd):
                out[int(rank)] = pid
        return out

    def _own_pids(self) -> list[int]:
        """Processes whose environment names this harness's working path (started by it)."""
        marker = f"SIMHOSTS_WORK={self.work}".encode()
        pids = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if marker in Path(d, "environ").read_bytes().split(b"\0"):
                    pids.append(int(d.name))
            except OSError:
                continue
        return pids

    def close(self) -> None:
        """Kill whatever this harness started and is still running (by pid)."""
        for proc in self._procs:
            if proc.poll() is None:
                _kill_group(proc)
        for _ in range(3):
            pids = self._own_pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
