"""Which IP addresses a crawl may connect to: public unicast only, unless told otherwise.

A page of the public web can link to ``http://169.254.169.254/`` (a cloud
metadata service), ``http://10.0.0.5/`` or a name whose DNS answer is
``127.0.0.1``; a crawler running inside a cluster would fetch those from the
inside. So without a ``--resolve`` list the fetcher checks the address libcurl
is about to connect to (:mod:`abc_crawler.net.fetcher`, curl's
``OPENSOCKETFUNCTION``), after every DNS answer and every redirect, and refuses
every address :func:`refusal` names a reason for.

The tables are IANA's special-purpose address registries (RFC 6890 and its
updates), written out here rather than taken from :mod:`ipaddress`'s
``is_global``, whose answers changed between Python versions (IPv4-mapped
addresses before 3.13). IPv6 forms that carry an IPv4 address a gateway would
connect to — IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``,
NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, 6to4 ``2002::/16`` — are judged by
that IPv4 address too (Teredo ``2001::/32`` is refused whole).

Examples
--------
>>> refusal("169.254.169.254"), refusal("10.1.2.3"), refusal("::ffff:127.0.0.1")
('link_local', 'private', 'loopback')
>>> refusal("93.184.216.34") is None, refusal("2606:4700::1111") is None
(True, True)
>>> refusal("64:ff9b::a00:1"), refusal("100.64.0.1"), refusal("not an address")
('private', 'cgnat', 'invalid')
"""
from __future__ import annotations

import ipaddress
from functools import lru_cache

__all__ = ["refusal", "REFUSED_V4", "REFUSED_V6", "AddressPolicy"]

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network

#: IPv4 networks never connected to, with the reason counted (most specific first where nested)
REFUSED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple((_N4(n), why) for n, why in (
    ("0.0.0.0/8", "unspecified"),          # "this network" (RFC 791, 1122)
    ("10.0.0.0/8", "private"),             # RFC 1918
    ("100.64.0.0/10", "cgnat"),            # shared address space, RFC 6598
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link_local"),      # RFC 3927, cloud metadata services at 169.254.169.254
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),          # IETF protocol assignments, RFC 6890
    ("192.0.2.0/24", "documentation"),     # TEST-NET-1, RFC 5737
    ("192.88.99.0/24", "reserved"),        # 6to4 relay anycast, deprecated (RFC 7526)
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "reserved"),         # benchmarking, RFC 2544
    ("198.51.100.0/24", "documentation"),  # TEST-NET-2
    ("203.0.113.0/24", "documentation"),   # TEST-NET-3
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),           # future use, and 255.255.255.255 (broadcast)
))

#: IPv6 networks never connected to (the IPv4-carrying prefixes are handled by :func:`_embedded_v4`)
REFUSED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple((_N6(n), why) for n, why in (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "reserved"),              # discard-only, RFC 6666
    ("2001::/23", "reserved"),             # IETF protocol assignments (Teredo 2001::/32 among them)
    ("2001:db8::/32", "documentation"),    # RFC 3849
    ("3fff::/20", "documentation"),        # RFC 9637
    ("5f00::/16", "reserved"),             # segment routing SIDs, RFC 9602
    ("fc00::/7", "private"),               # unique local, RFC 4193
    ("fe80::/10", "link_local"),
    ("fec0::/10", "private"),              # site-local, deprecated (RFC 3879)
    ("ff00::/8", "multicast"),
))

_V4_IN_V6 = (
    (_N6("::ffff:0:0/96"), 96),            # IPv4-mapped
    (_N6("::/96"), 96),                    # IPv4-compatible (deprecated; ::, ::1 are in the table)
    (_N6("64:ff9b::/96"), 96),             # NAT64 well-known prefix, RFC 6052
    (_N6("64:ff9b:1::/48"), 96),           # NAT64 local-use prefix, RFC 8215 (IPv4 in the last 32 bits)
    (_N6("2002::/16"), 16),                # 6to4: the IPv4 address follows the prefix
)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (and a gateway would connect to), or None."""
    n = int(ip)
    for net, at in _V4_IN_V6:
        if ip in net:
            shift = 128 - at - 32
            return ipaddress.IPv4Address((n >> shift) & 0xFFFFFFFF)
    return None


@lru_cache(maxsize=65536)
def refusal(address: str) -> str | None:
    """Why a crawl must not connect to ``address`` (an IPv4 or IPv6 literal), or None.

    Reasons: ``loopback``, ``private``, ``link_local``, ``cgnat``, ``multicast``,
    ``unspecified``, ``reserved``, ``documentation``, and ``invalid`` for text
    that is not an address. An IPv6 zone (``fe80::1%eth0``) is ignored.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "invalid"
    if ip.version == 6:
        v4 = _embedded_v4(ip)
        if v4 is not None and not (ip in REFUSED_V6[0][0] or ip in REFUSED_V6[1][0]):
            why = refusal(str(v4))
            if why is not None:
                return why
            if int(ip) >> 32 in (0, 0xFFFF):
                return None                 # a public IPv4 address written as IPv6
        for net, why in REFUSED_V6:
            if ip in net:
                return why
        return None
    for net, why in REFUSED_V4:
        if ip in net:
            return why
    return None


class AddressPolicy:
    """The fetcher's rule for one crawl: which connect addresses are refused.

    ``allow_private``: ``--allow-private-addresses`` (nothing refused).
    ``allowed``: addresses the user listed (``--resolve``): always allowed.

    >>> p = AddressPolicy(allowed=["127.0.0.1"])
    >>> p.check("127.0.0.1"), p.check("127.0.0.2"), p.check("8.8.8.8")
    (None, 'loopback', None)
    >>> AddressPolicy(allow_private=True).check("10.0.0.1") is None
    True
    """

    def __init__(self, allow_private: bool = False, allowed=()):
        self.allow_private = bool(allow_private)
        self.allowed = frozenset(str(ipaddress.ip_address(a.strip("[]"))) for a in allowed)

    def check(self, address: str) -> str | None:
        """The reason to refuse a connection to ``address``, or None to allow it."""
        if self.allow_private:
            return None
        base = address.split("%", 1)[0]
        if base in self.allowed:
            return None
        try:
            if str(ipaddress.ip_address(base)) in self.allowed:
                return None
        except ValueError:
            return "invalid"
        return refusal(address)
