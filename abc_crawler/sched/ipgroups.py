"""Politeness groups: the hosts that share an IP address are one unit of politeness, across ranks.

A webmaster's server answers for every name it hosts: two hosts on one address are one server,
and ``--ip-politeness-delay`` is the least time between two requests to that address, whichever
hosts and whichever ranks send them (BUbiNG keeps such a delay per IP address, per agent; it
assigns hosts to agents by hash, so an address's hosts on two agents are never spaced). ABC can
keep it across every rank because a phase slot has one holder: the holder table and the leases
hold *groups* — all the hosts on one address, or a host alone — where they held hosts.

Where the addresses come from:

* ``--resolve``: its addresses are the hosts' addresses, known to every rank from the start; the
  groups never change.
* otherwise, the address each rank's requests connected to (curl's primary IP): the first rank to
  learn a host's address announces it with the next superstep exchange; every rank applies the
  announcements of one exchange in the same order (rank, then line; the first address of a host
  wins), so every rank computes the same groups.

A change of group is agreed at a superstep boundary, safely: a rank that learnt at exchange ``p``
that host h joins group G contacts h, until exchange ``p + 1``, only in slots where it holds both
h's old group and G; after ``p + 1`` G alone decides. A rank that has not completed exchange ``p``
still decides by the old group, and one past ``p + 1`` by G: they are never both running, because
no rank completes exchange ``p + 1`` before every rank has completed ``p``. So no two ranks ever
hold one host at once. Before the first request to a host tells its address, the host is a group
of its own: in that superstep two hosts of one address may be asked by two ranks close together
(the address spacing starts once the group is agreed; each host's own spacing always holds).

Through a proxy the address connected to is the proxy's: no address is learnt then.

>>> g = Groups(ip_delay=0.25, resolved={"a.test": "10.0.0.1", "b.test": "10.0.0.1", "c.test": "10.0.0.2"})
>>> g.group("a.test"), g.group("b.test"), g.group("c.test"), g.group("d.test")
('ip:10.0.0.1', 'ip:10.0.0.1', 'c.test', 'd.test')
>>> g.members("ip:10.0.0.1"), g.members("d.test")
(('a.test', 'b.test'), ('d.test',))
"""
from __future__ import annotations

__all__ = ["Groups", "GROUP_PREFIX"]

#: the key of a group of several hosts: this prefix and their address
GROUP_PREFIX = "ip:"


class Groups:
    """The politeness groups every rank agrees on, and the changes on their way (module docstring)."""

    def __init__(self, ip_delay: float, resolved: dict[str, str] | None = None):
        self.ip_delay = ip_delay
        self.learn_addresses = ip_delay > 0 and not resolved   # with --resolve every address is known
        self.ip_of: dict[str, str] = {}            # agreed: host -> address
        self.hosts_of: dict[str, list[str]] = {}   # agreed: address -> its hosts, in the order agreed
        self._group: dict[str, str] = {}           # host -> its group key (hosts alone are absent)
        self.moving: dict[str, str] = {}           # host -> its previous group, until the next exchange
        self._learnt: dict[str, str] = {}          # addresses this rank learnt, not announced yet
        self.local_ip: dict[str, str] = {}         # every address this rank connected to, by host
        self.next_at: dict[str, float] = {}        # this rank: address -> monotonic time of its next
        #                                            request (inf while one is in flight)
        self.version = 0                           # counts agreed changes (caches key on it)
        for host, ip in (resolved or {}).items():
            self._add(host, ip)
        self.moving.clear()

    # -- what a group is ---------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.ip_delay > 0

    def group(self, host: str) -> str:
        """The group key of ``host``: ``ip:ADDR`` when it shares its address with another host, else
        the host itself."""
        return self._group.get(host, host)

    def members(self, key: str) -> tuple[str, ...]:
        """The hosts of a group key."""
        if key.startswith(GROUP_PREFIX):
            return tuple(self.hosts_of.get(key[len(GROUP_PREFIX):], ()))
        return (key,)

    def shared(self, host: str) -> bool:
        """``host`` is in a group of several hosts (the address spacing applies to it)."""
        return host in self._group

    def address(self, host: str) -> str | None:
        """The agreed address of ``host`` (None: not known, or unused without an IP delay)."""
        return self.ip_of.get(host)

    def spacing_address(self, host: str) -> str | None:
        """The address this rank spaces ``host``'s requests by: the agreed one, else the one its own
        requests connected to (None before the first, or without an IP delay)."""
        if not self.active:
            return None
        return self.ip_of.get(host) or self.local_ip.get(host)

    def previous(self, host: str) -> str | None:
        """The group ``host`` belonged to before an agreed change still in its transition (None: no
        change is under way for it)."""
        return self.moving.get(host)

    # -- learning and agreeing -----------------------------------------------------------------
    def learn(self, host: str, ip: str) -> None:
        """This rank connected to ``ip`` for ``host``: spaced by it here from now on, and announced
        with the next exchange when no rank has yet (one address per host: the first wins)."""
        if not ip or not self.active:
            return
        self.local_ip.setdefault(host, ip)
        if self.learn_addresses and host not in self.ip_of and host not in self._learnt:
            self._learnt[host] = ip

    def announce(self) -> bytes:
        """``host\\tip`` lines of the addresses learnt since the last exchange."""
        out = "\n".join(f"{h}\t{ip}" for h, ip in self._learnt.items())
        self._learnt.clear()
        return out.encode()

    def agree(self, reports: list[bytes]) -> list[str]:
        """At an exchange, on every rank: the changes of the exchange before become final, and the
        addresses every rank announced now (``reports``, one per rank in rank order) are added.
        Returns the hosts whose group changed (in transition until the next exchange)."""
        self.moving.clear()
        changed: list[str] = []
        for data in reports:
            if not data:
                continue
            for line in data.decode().split("\n"):
                host, _, ip = line.partition("\t")
                if host and ip and host not in self.ip_of:
                    changed += self._add(host, ip)
        if changed:
            self.version += 1
        return changed

    def _add(self, host: str, ip: str) -> list[str]:
        """``host`` is on ``ip``; the hosts whose group changed (recorded in :attr:`moving`)."""
        self.ip_of[host] = ip
        hosts = self.hosts_of.setdefault(ip, [])
        hosts.append(host)
        if not self.active or len(hosts) < 2:
            return []
        key = GROUP_PREFIX + ip
        news = hosts if len(hosts) == 2 else [host]
        for h in news:
            self.moving.setdefault(h, self._group.get(h, h))
            self._group[h] = key
        return list(news)

    # -- checkpoints ---------------------------------------------------------------------------
    def as_plain(self) -> dict:
        return {"hosts_of": {ip: list(h) for ip, h in self.hosts_of.items()}, "learnt": dict(self._learnt)}

    def load(self, d: dict) -> None:
        self.ip_of.clear()
        self.hosts_of.clear()
        self._group.clear()
        for ip, hosts in d.get("hosts_of", {}).items():
            for h in hosts:
                self._add(h, ip)
        self.moving.clear()
        self._learnt = dict(d.get("learnt", {}))
        self.version += 1
