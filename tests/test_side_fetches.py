"""A host's robots.txt and sitemap files are requests like its pages: a sitemap answering 503 with
Retry-After is asked again after it (its URLs are not lost), and a robots.txt redirect to another
host's file waits for that host's rest. Served by the embedded server from a generated web with
routes edited in."""
from __future__ import annotations

import json

from crawlcheck import crawl_cli, generate, read_log, serve


def _edit(d, m):
    routes = json.loads((d / "routes.json").read_text())
    hosts = [h.split(":")[0] for h in m["hosts"]]
    return routes, hosts


def _rows(log, host):
    return sorted((x for x in read_log(log) if x["host"].split(":")[0] == host), key=lambda x: x["t_start"])


def test_a_sitemap_answering_503_is_asked_again_after_its_retry_after(tmp_path):
    d = tmp_path / "web"
    m = generate(d, n_hosts=2, n_pages=20, seed=51)
    routes, _ = _edit(d, m)
    port = m["port"]
    seed = m["seeds"][0]
    host = seed.split("/")[2].split(":")[0]
    (d / "sites" / host / "only.html").write_bytes(b"<!DOCTYPE html><title>listed only</title><p>x</p>")
    (d / "sites" / host / "sm.xml").write_bytes(
        ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
         f"<url><loc>http://{host}:{port}/only.html</loc></url></urlset>").encode())
    routes["hosts"][host]["/only.html"] = {"status": 200, "type": "text/html", "file": "only.html"}
    routes["hosts"][host]["/sitemap.xml"] = {"status": 200, "type": "application/xml", "file": "sm.xml",
                                             "fail_first": 1, "fail_status": 503,
                                             "fail_headers": {"Retry-After": "2"}}
    (d / "routes.json").write_text(json.dumps(routes))
    log = tmp_path / "access.log"
    with serve(d, log):
        r = crawl_cli(1, d, tmp_path / "s", "--no-stats", timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _rows(log, host)
    sm = [x for x in rows if x["path"] == "/sitemap.xml"]
    assert [x["status"] for x in sm] == [503, 200]
    assert sm[1]["t_start"] - sm[0]["t_write"] >= 2.0 - 0.02
    # the host rested the Retry-After: nothing asked of it in between
    assert not [x for x in rows if sm[0]["t_write"] < x["t_start"] < sm[0]["t_write"] + 2.0 - 0.02]
    assert "/only.html" in {x["path"] for x in rows}          # the URL only the sitemap lists
    stats = json.loads((tmp_path / "s" / "stats.json").read_text())
    assert stats["errors"].get("sitemap_retried_503") == 1 and "sitemap_http_5xx" not in stats["errors"]


def test_a_robots_redirect_to_another_host_waits_for_that_hosts_rest(tmp_path):
    """Host A's robots.txt redirects to host B's; both are seeds, so B's own robots.txt request and
    A's redirected one come at once: the second waits for B's rest (0.5 s) like any request to B."""
    d = tmp_path / "web"
    m = generate(d, n_hosts=2, n_pages=20, seed=52, robots_frac=1.0)
    routes, hosts = _edit(d, m)
    a, b = hosts
    port = m["port"]
    routes["hosts"][a]["/robots.txt"] = {"status": 301, "location": f"http://{b}:{port}/robots.txt"}
    (d / "routes.json").write_text(json.dumps(routes))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"http://{a}:{port}/\nhttp://{b}:{port}/\n")
    log = tmp_path / "access.log"
    with serve(d, log):
        r = crawl_cli(1, d, tmp_path / "s", "--politeness-delay", "0.5", "--no-stats", "--no-sitemaps",
                      seeds=seeds, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _rows(log, b)
    assert sum(1 for x in rows if x["path"] == "/robots.txt") == 2         # its own, and A's redirected one
    gaps = [round(y["t_start"] - x["t_write"], 3) for x, y in zip(rows, rows[1:])]
    assert min(gaps) >= 0.5 - 0.02, gaps
