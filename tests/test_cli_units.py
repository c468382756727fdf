"""The command line an operator meets (issue 34): --help in groups with the test hooks hidden,
--version, a URL as SEEDS, sizes and durations with units, wget's --accept-regex/--reject-regex
beside --url-filter, and each rank's log file (--log-level)."""
from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest

from abc_crawler import __version__
from abc_crawler.cli import build_parser
from abc_crawler.config import GROUPS, HIDDEN, SETTINGS, CrawlConfig, read_config_file
from abc_crawler.exceptions import ConfigError, SeedError
from abc_crawler.web.scope import Scope, ScopeRules, UrlFilter, read_seeds
from abc_crawler.units import parse_duration, parse_size
from crawlcheck import BIN, crawl_cli, generate, serve

CONTACT = {"contact": "https://example.org/bot"}


def _help() -> str:
    r = subprocess.run([str(BIN / "abc-crawl"), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_help_lists_every_setting_once_under_its_group_and_hides_the_test_hooks():
    text = _help()
    # the group headings, in the documented order
    heads = [ln[:-1] for ln in text.splitlines() if ln.endswith(":") and not ln.startswith(" ")]
    titles = [t for t, _ in GROUPS]
    assert heads[-len(titles):] == titles, heads
    # each flag's first mention after "options:" sits in its own group's section
    sections = re.split(r"^(\S[^\n]*):\n", text, flags=re.M)
    body = dict(zip(sections[1::2], sections[2::2]))
    grouped = [n for _, names in GROUPS for n in names]
    assert sorted(grouped + list(HIDDEN)) == sorted(s.name for s in SETTINGS)      # exactly one home each
    for title, names in GROUPS:
        for n in names:
            flag = "--" + n.replace("_", "-")
            assert re.search(rf"^  {re.escape(flag)}\b", body[title], re.M), (title, flag)
            others = [t for t in titles if t != title]
            assert not any(re.search(rf"^  {re.escape(flag)}[ ,=\n]", body[t], re.M) for t in others), flag
    for n in HIDDEN:
        assert "--" + n.replace("_", "-") not in text
    # hidden, yet accepted
    ns = build_parser().parse_args(["seeds.txt", "--test-rank-header", "--test-clock-skew", "1:0.5"])
    assert ns.test_rank_header is True and ns.test_clock_skew == "1:0.5"
    # defaults shown with units
    assert re.search(r"--max-body-bytes SIZE\s.*\(default: 10M\)", text, re.S)


def test_version():
    r = subprocess.run([str(BIN / "abc-crawl"), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"abc-crawl {__version__}"


@pytest.mark.parametrize("text,value", [("10M", 10 << 20), ("1G", 1 << 30), ("64k", 65536), ("2MB", 2_000_000),
                                        ("123", 123), (4096, 4096), ("1.5K", 1536)])
def test_sizes_with_units(text, value):
    assert parse_size(text) == value
    cfg = CrawlConfig.build({"seeds": "s", **CONTACT, "max_body_bytes": text, "warc_max_bytes": text})
    assert cfg.max_body_bytes == value and cfg.warc_max_bytes == value


@pytest.mark.parametrize("text,value", [("90s", 90.0), ("2h", 7200.0), ("5m", 300.0), ("250ms", 0.25),
                                        ("1d", 86400.0), ("1.5", 1.5), (3, 3.0)])
def test_durations_with_units(text, value):
    assert parse_duration(text) == value
    cfg = CrawlConfig.build({"seeds": "s", **CONTACT, "time_limit": text, "checkpoint_seconds": text})
    assert cfg.time_limit == value and cfg.checkpoint_seconds == value


@pytest.mark.parametrize("key,value,msg", [
    ("max_body_bytes", "10 parsecs", r"^max-body-bytes: expected bytes.*got '10 parsecs'$"),
    ("max_body_bytes", "1.5", r"^max-body-bytes: expected bytes.*got '1.5'$"),
    ("time_limit", "2 fortnights", r"^time-limit: expected seconds.*got '2 fortnights'$"),
    ("timeout", "0ms", r"^timeout: must be >= 0.1, got 0.0$"),
    ("accept_regex", "(unclosed", r"^accept-regex: bad regular expression '\(unclosed'"),
    ("reject_regex", "[", r"^reject-regex: bad regular expression '\['"),
    ("log_level", "chatty", r"^log-level: must be one of debug, info, warning, error, got 'chatty'$"),
    ("max_retries", "256", r"^max-retries: must be <= 255, got 256$"),        # a URL's counts are bytes
    ("max_slot_cuts", "1000", r"^max-slot-cuts: must be <= 255, got 1000$"),
    ("max_body_bytes", "image/=2 parsecs", r"^max-body-bytes: expected bytes.*got '2 parsecs' in 'image/=2 parsecs'$"),
    ("max_body_bytes", "im age=2M", r"^max-body-bytes: 'im age' is no MIME type or type prefix"),
    ("max_body_bytes", "image/=0,1M", r"^max-body-bytes: must be >= 1, got 0 for 'image/=0'$"),
    ("max_body_bytes", "1M,image/=1K,2M", r"^max-body-bytes: 'the bare size' given twice"),
])
def test_a_bad_value_names_the_flag_and_the_value(key, value, msg):
    with pytest.raises(ConfigError, match=msg):
        CrawlConfig.build({"seeds": "s", **CONTACT, key: value})


def test_max_body_bytes_per_type_survives_the_saved_config():
    """A typed --max-body-bytes is kept in the manifest as pairs; a resume reads them back the same."""
    cfg = CrawlConfig.build({"seeds": "s", **CONTACT, "max_body_bytes": "text/html=5M,image/=2K,20M"})
    assert cfg.max_body_bytes == (("text/html", 5 << 20), ("image/", 2048), ("", 20 << 20))
    saved = json.loads(json.dumps(cfg.as_dict()))
    assert CrawlConfig.build({**saved, "seeds": "s"}).max_body_bytes == cfg.max_body_bytes


def test_units_in_a_config_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('max-body-bytes = "512K"\ntime-limit = "1h"\nwarc-max-bytes = 1000\n')
    assert read_config_file(str(f)) == {"max_body_bytes": 512 * 1024, "time_limit": 3600.0, "warc_max_bytes": 1000}


def test_regex_filters_in_their_documented_order(tmp_path):
    flt = UrlFilter.from_lines(["-/private/", "+."], "f.txt")
    r = ScopeRules(url_filter=flt, accept_regex=r"^http://a\.test/", reject_regex=r"\.pdf$")
    cases = {"http://a.test/x.html": None,
             "http://a.test/x.pdf": "--reject-regex",            # rejected first, though accepted and filtered in
             "http://b.test/x.html": "--accept-regex",
             "http://a.test/private/y": "--url-filter"}
    assert {u: r.filter_flag(u) for u in cases} == cases
    assert {u: r.reason(u) for u in cases} == {u: None if f is None else "out_of_scope_filter" for u, f in cases.items()}
    assert ScopeRules(reject_regex="x").active and not ScopeRules().active
    # a seed refused by one of them names it
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/ok\nhttp://a.test/doc.pdf\n")
    good, problems = read_seeds(str(seeds), Scope(), r)
    assert good == ["http://a.test/ok"] and len(problems) == 1 and "--reject-regex" in str(problems[0])


def test_a_url_as_seeds_and_a_missing_seeds_file(tmp_path):
    assert read_seeds("http://a.test/start", Scope())[0] == ["http://a.test/start"]
    with pytest.raises(SeedError, match=r"nope\.txt: seeds file not found \(a seed URL starts with http://"):
        read_seeds(str(tmp_path / "nope.txt"), Scope())
    # a URL of another scheme given as SEEDS is named as the URL it is, not as a missing file
    for bad in ("ftp://h.test/", "ht!tp://x"):
        with pytest.raises(SeedError, match=r"not a seeds file, nor a seed URL abc-crawl can crawl") as e:
            read_seeds(bad, Scope())
        assert "not found" not in str(e.value)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_crawl_from_a_seed_url_with_regex_filters_and_its_log_files(tmp_path):
    d = tmp_path / "web"
    m = generate(d, n_hosts=3, n_pages=60, seed=11)
    seed = (d / "seeds.txt").read_text().split()[0]
    # a host on a port nobody listens on: given up, with a warning that names it
    dead = _closed_port()
    resolve = tmp_path / "resolve.txt"
    resolve.write_text((d / "resolve.txt").read_text() + f"\ndead.test:{dead}:127.0.0.1\n")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{seed}\nhttp://dead.test:{dead}/\n")
    session = tmp_path / "s"
    with serve(d) as srv:
        mark = srv.mark()
        r = crawl_cli(2, d, session, "--resolve", str(resolve), "--reject-regex", r"/p0*[13579]\.html$",
                      "--log-level", "info", "--host-max-failures", "1", "--no-stats", timeout=180, seeds=seeds)
        rows = srv.rows(mark)
    assert r.returncode == 0, r.stderr[-3000:]
    paths = [row["path"] for row in rows]
    assert paths and not [p for p in paths if re.search(r"/p0*[13579]\.html$", p)], paths
    stats = json.loads((session / "stats.json").read_text())
    assert stats["links"]["out_of_scope_filter"] > 0
    # one file per rank; rank lines with UTC times; the dead host's warning names it
    files = sorted((session / "logs").glob("rank-*.log"))
    assert [f.name for f in files] == ["rank-00000.log", "rank-00001.log"]
    line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) rank [01]: \S")
    text = {f.name: f.read_text() for f in files}
    for name, t in text.items():
        assert t and all(line.match(x) for x in t.splitlines()), t[:500]
        assert "DEBUG" not in t                 # --log-level info
    # (each rank with URLs of the host asks its robots.txt: at most one warning per rank)
    warned = {name: [x for x in t.splitlines() if "WARNING" in x and f"dead.test:{dead}" in x] for name, t in text.items()}
    assert 1 <= sum(map(len, warned.values())) and all(len(w) <= 1 for w in warned.values()), text
    assert all("given up" in x for w in warned.values() for x in w), warned
    assert stats["log"]["warnings"] >= 1 and stats["log"]["level"] == "info"
    assert "logs" in r.stderr and "log warnings / errors" in r.stderr
    # the manifest lists each rank's log file among its files
    manifest = json.loads((session / "manifest.json").read_text())
    listed = {f["path"] if isinstance(f, dict) else f for loc in manifest["locations"] for f in loc["files"]}
    assert any("logs/rank-00001.log" in str(p) for p in listed), listed
    # a URL as SEEDS: the crawl starts from it alone
    s2 = tmp_path / "s2"
    with serve(d) as srv:
        mark = srv.mark()
        r2 = crawl_cli(1, d, s2, "--max-pages", "5", "--no-stats", "--log-level", "debug", timeout=180,
                       seeds=Path(seed))
        rows2 = srv.rows(mark)
    assert r2.returncode == 0, r2.stderr[-3000:]
    first = [row for row in rows2 if row["path"] not in ("/robots.txt", "/sitemap.xml")][0]
    assert f"http://{first['host']}:{first.get('port', m['port'])}{first['path']}" == seed, (first, seed)
    assert "DEBUG" in (s2 / "logs" / "rank-00000.log").read_text()


def _scripts() -> list[list[str]]:
    """Every command pyproject.toml installs, and each subcommand of those that have them."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    names = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    out = [[n] for n in names]
    for cmd in names:
        text = subprocess.run([str(BIN / cmd), "--help"], capture_output=True, text=True, timeout=60).stdout
        m = re.search(r"\{([a-z,-]+)\}", text.split("\n\n")[0])      # argparse's {sub,commands} in the usage
        subs = m.group(1).split(",") if m else []
        if re.search(r"^usage: \S+ .*COMMAND \.\.\.", text, re.M):     # a metavar: the list under it
            subs = re.findall(r"^    ([a-z][a-z-]*)  ", text, re.M)
        out += [[cmd, sub] for sub in subs]
    return out


def test_every_command_and_subcommand_prints_its_help():
    """``--help`` of every command and subcommand prints its usage and exits 0 (a help text with a bare
    % made argparse's formatting raise: abc-graph export --help ended in a traceback)."""
    cmds = _scripts()
    assert ["abc-graph", "export"] in cmds and ["abc-graph", "rank"] in cmds
    for cmd in cmds:
        p = subprocess.run([str(BIN / cmd[0]), *cmd[1:], "--help"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "usage:" in p.stdout and "Traceback" not in p.stderr, (cmd, p.stderr[-800:])
