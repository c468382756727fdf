"""The address rule: which IP addresses a crawl may connect to (abc_crawler.net.addresses), and what
the fetcher can judge from a URL alone (fetcher.name_refusal)."""
from __future__ import annotations

import doctest
import ipaddress

import pytest
from hypothesis import given, settings, strategies as st

from abc_crawler.net import addresses
from abc_crawler.net.addresses import REFUSED_V4, REFUSED_V6, AddressPolicy, refusal
from abc_crawler.net.fetcher import name_refusal
from abc_crawler.web.urls import canonicalize


def test_doctests():
    assert doctest.testmod(addresses).failed == 0


@pytest.mark.parametrize("addr,why", [
    ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link_local"), ("169.254.0.1", "link_local"), ("fe80::1", "link_local"),
    ("fe80::1%eth0", "link_local"),
    ("100.64.0.1", "cgnat"), ("100.127.255.255", "cgnat"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("::", "unspecified"),
    ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("198.18.0.1", "reserved"),
    ("192.0.0.8", "reserved"), ("2001::1", "reserved"), ("100::1", "reserved"),
    ("192.0.2.1", "documentation"), ("198.51.100.7", "documentation"), ("203.0.113.9", "documentation"),
    ("2001:db8::1", "documentation"),
    ("fc00::1", "private"), ("fd12:3456::1", "private"), ("fec0::1", "private"),
    # IPv6 forms of IPv4 addresses: judged by the IPv4 address they carry
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:7f00:1", "loopback"), ("::ffff:169.254.169.254", "link_local"),
    ("::ffff:10.1.1.1", "private"), ("::10.1.1.1", "private"), ("64:ff9b::10.0.0.1", "private"),
    ("64:ff9b:1::a9fe:a9fe", "link_local"), ("2002:7f00:1::", "loopback"), ("2002:c0a8:101::1", "private"),
    ("not an address", "invalid"), ("", "invalid"),
])
def test_refused(addr, why):
    assert refusal(addr) == why


@pytest.mark.parametrize("addr", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "169.255.0.1",
                                  "2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8",
                                  "2002:808:808::1"])
def test_public_allowed(addr):
    assert refusal(addr) is None


# Python's own classification (3.11): is_global, which is not used (its answers changed between
# versions) but must agree wherever both are defined. The table refuses two blocks Python calls
# global: 192.0.0.0/24 (IETF protocol assignments, whole) and 192.88.99.0/24 (6to4 relays), and
# multicast (not a unicast destination).
_EXTRA_V4 = [ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("192.88.99.0/24")]


@settings(max_examples=1500, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_ipv4_agrees_with_ipaddress_is_global(n):
    a = ipaddress.IPv4Address(n)
    expected_public = a.is_global and not a.is_multicast and not any(a in net for net in _EXTRA_V4)
    assert (refusal(str(a)) is None) == expected_public, (str(a), refusal(str(a)))


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["mapped", "compat", "nat64", "nat64local", "6to4"]))
def test_ipv6_forms_of_an_ipv4_address_are_judged_by_it(n, form):
    v4 = ipaddress.IPv4Address(n)
    if form == "mapped":
        v6 = ipaddress.IPv6Address((0xFFFF << 32) | n)
    elif form == "compat":
        if n <= 1:
            return                        # :: and ::1 are themselves
        v6 = ipaddress.IPv6Address(n)
    elif form == "nat64":
        v6 = ipaddress.IPv6Address((0x64FF9B << 96) | n)
    elif form == "nat64local":
        v6 = ipaddress.IPv6Address((0x64FF9B0001 << 80) | n)
    else:
        v6 = ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1)
    why4 = refusal(str(v4))
    if why4 is not None:
        assert refusal(str(v6)) == why4, (str(v6), form)
    else:
        assert refusal(str(v6)) is None, (str(v6), form)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(REFUSED_V6), st.integers(0, 2**128 - 1))
def test_every_address_of_a_refused_ipv6_network_is_refused(entry, n):
    net, why = entry
    a = ipaddress.IPv6Address(int(net.network_address) | (n & int(net.hostmask)))
    got = refusal(str(a))
    assert got is not None
    # nested blocks (2001:db8::/32 inside 2001::/23 ...) may give the more specific reason
    assert got == why or any(a in n2 and n2.prefixlen > net.prefixlen for n2, _ in REFUSED_V6), (str(a), got, why)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(REFUSED_V4), st.integers(0, 2**32 - 1))
def test_every_address_of_a_refused_ipv4_network_is_refused_with_its_reason(entry, n):
    net, why = entry
    a = ipaddress.IPv4Address(int(net.network_address) | (n & int(net.hostmask)))
    assert refusal(str(a)) == why


@settings(max_examples=1000, deadline=None)
@given(st.integers(0x2000 << 112, (0x3FFF << 112) | (2**112 - 1)))
def test_global_unicast_ipv6_outside_the_special_blocks_is_allowed(n):
    a = ipaddress.IPv6Address(n)
    special = any(a in net for net, _ in REFUSED_V6) or a in ipaddress.ip_network("2002::/16")
    if not special:
        assert refusal(str(a)) is None


def test_policy_allows_listed_addresses_and_everything_when_private_is_allowed():
    p = AddressPolicy(allowed=["127.0.0.1", "[::1]"])
    assert p.check("127.0.0.1") is None and p.check("::1") is None and p.check("0:0::1") is None
    assert p.check("127.0.0.2") == "loopback" and p.check("169.254.169.254") == "link_local"
    assert p.check("8.8.8.8") is None
    assert AddressPolicy(allow_private=True).check("169.254.169.254") is None
    # the control: without the list, the same address is refused
    assert AddressPolicy().check("127.0.0.1") == "loopback"


# Textual forms of IPv4 addresses in URLs: the WHATWG parser makes them dotted quads, so the check by
# name sees every spelling (decimal, hex, octal, short forms)
def _spellings(n: int) -> list[str]:
    a, b, c, d = n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255
    return [f"{a}.{b}.{c}.{d}", str(n), hex(n), f"0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}", f"0{a:o}.{b}.{c}.{d}",
            f"{a}.{(b << 16) | (c << 8) | d}", f"[::ffff:{a}.{b}.{c}.{d}]"]


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_name_refusal_sees_every_spelling_of_an_ipv4_literal(n, data):
    spelling = data.draw(st.sampled_from(_spellings(n)))
    url = canonicalize(f"http://{spelling}:8080/x")
    assert url is not None
    why = refusal(str(ipaddress.IPv4Address(n)))
    assert name_refusal(url, AddressPolicy()) == why, (spelling, url)
    assert name_refusal(url, AddressPolicy(allow_private=True)) is None


def test_name_refusal_of_names():
    p = AddressPolicy()
    assert name_refusal("http://localhost:8080/", p) == "loopback"
    assert name_refusal("http://x.y.localhost/", p) == "loopback"
    assert name_refusal("http://localhost.example/", p) is None
    assert name_refusal("http://1password.com/", p) is None          # a name that starts with a digit
    assert name_refusal("http://169.254.169.254/latest/meta-data/", p) == "link_local"
    assert name_refusal("http://[fd00::1]/", p) == "private"
