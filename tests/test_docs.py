"""The documents agree with the code. The README is the front door: it must name every console
script and link every document, and the documents it and docs/ point at must exist. docs/CLI.md, the
`abc-crawl` reference, must list every crawl setting with the default the code has (its tables are
where the README's table was: the same checks, as strict), each under the `--help` group it belongs
to; docs/ARCHITECTURE.md's layout table must name every package; every key a session writes must be
documented; every benchmark command must run as written."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from abc_crawler.cli import build_parser
from abc_crawler.config import GROUPS, HIDDEN, SETTINGS, group_of

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the ``abc-crawl`` reference: every setting, with its default, in tables grouped as --help groups them
CLI_DOC = ROOT / "docs" / "CLI.md"
#: the internals: the life of a URL, phase slots, live statistics, the layout table
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MiB = 1024 * 1024


def test_cli_doc_lists_every_setting():
    """Every setting's flag appears in docs/CLI.md (the README links there for the options)."""
    text = CLI_DOC.read_text()
    missing = [s.name for s in SETTINGS if f"--{s.name.replace('_', '-')}" not in text]
    assert not missing, f"settings missing from docs/CLI.md: {missing}"


def test_readme_names_every_console_script():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    readme = README.read_text()
    assert [s for s in scripts if s not in readme] == []


# --------------------------------------------------------------------------- the settings table


def grouped_options_tables(text: str) -> list[tuple[str, list[str], str]]:
    """(heading, flag names, default cell) of every row of docs/CLI.md's ``abc-crawl`` options
    tables: each table starts with ``| option | default | meaning |`` and sits under the ``##``
    heading of its group; there must be at least one."""
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if re.match(r"\| option \| default \| meaning \|", ln)]
    assert starts, "no options table"
    rows = []
    for start in starts:
        heading = next((ln[3:].strip() for ln in reversed(lines[:start]) if ln.startswith("## ")), "")
        for ln in lines[start + 2:]:
            if not ln.startswith("|"):
                break
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]]
            names = [re.split(r"[ /]", chunk, maxsplit=1)[0].removeprefix("--")
                     for chunk in re.findall(r"`([^`]*)`", cells[0])]
            rows.append((heading, names, cells[1]))
    return rows


def options_table(text: str) -> list[tuple[list[str], str]]:
    """(flag names, default cell) of every row of docs/CLI.md's options tables, all groups."""
    return [(names, cell) for _, names, cell in grouped_options_tables(text)]


def documented_value(cell: str):
    """A default as docs/CLI.md writes it, as a Python value (``...`` for a placeholder)."""
    v = re.sub(r"\s*\(.*\)$", "", cell.strip("` "))   # "0 (= ranks)" -> "0"
    if v == "none":
        return None
    if v in ("on", "off"):
        return v == "on"
    m = re.fullmatch(r"(\d+) MiB", v)
    if m:
        return float(int(m.group(1)) * MiB)
    if "<" in v:                       # e.g. sessions/<UTC time>: computed when the crawl starts
        return ...
    try:
        return float(v)
    except ValueError:
        return v


def table_defaults(text: str) -> dict[str, object]:
    out = {}
    for names, cell in options_table(text):
        if cell == "—":                 # a flag with no default (e.g. --resume)
            out.update({n.replace("-", "_"): "—" for n in names})
            continue
        values = [c.strip() for c in cell.split(", ")] if len(names) > 1 else [cell]
        assert len(values) == len(names), f"docs/CLI.md row {names}: {len(names)} flags but defaults {cell!r}"
        out.update({n.replace("-", "_"): documented_value(v) for n, v in zip(names, values)})
    return out


def default_differences(documented: dict) -> list[str]:
    bad = []
    for s in SETTINGS:
        if s.name not in documented:
            bad.append(f"--{s.name}: not in the options table")
            continue
        d = documented[s.name]
        if d is ...:
            ok = s.default is None
        elif d is None or isinstance(d, bool) or isinstance(s.default, bool):
            ok = d is s.default
        elif isinstance(s.default, (int, float)):
            ok = isinstance(d, float) and d == float(s.default)
        else:
            ok = d == s.default
        if not ok:
            bad.append(f"--{s.name.replace('_', '-')}: docs/CLI.md says {d!r}, the code {s.default!r}")
    return bad


def test_cli_doc_options_tables_give_each_setting_its_default():
    """docs/CLI.md's tables, all groups together, give every setting the default the code has."""
    assert default_differences(table_defaults(CLI_DOC.read_text())) == []


def test_the_options_table_check_finds_a_wrong_default():
    text = CLI_DOC.read_text().replace("| `--concurrency C` | 32 |", "| `--concurrency C` | 31 |")
    assert default_differences(table_defaults(text)) == ["--concurrency: docs/CLI.md says 31.0, the code 32"]
    text = CLI_DOC.read_text().replace("| `--warc/--no-warc` | on |", "| `--warc/--no-warc` | off |")
    assert default_differences(table_defaults(text)) == ["--warc: docs/CLI.md says False, the code True"]


def test_cli_doc_options_tables_name_only_real_flags():
    """docs/CLI.md lists only flags abc-crawl accepts, each once over all its tables."""
    real = {opt.removeprefix("--") for a in build_parser()._actions for opt in a.option_strings}
    names = [n for ns, _ in options_table(CLI_DOC.read_text()) for n in ns]
    assert [n for n in names if n not in real] == []
    assert len(names) == len(set(names)), "a flag is listed twice"


def misgrouped(rows: list[tuple[str, list[str], str]]) -> list[str]:
    """Flags of docs/CLI.md not under the heading of their ``--help`` group (a hidden test hook under
    "test hooks", a flag of no group, such as --resume, under "options")."""
    bad = []
    for heading, names, _ in rows:
        for n in names:
            name = n.replace("-", "_")
            want = group_of(name) or ("test hooks" if name in HIDDEN else "options")
            if heading != want:
                bad.append(f"--{n}: under {heading!r}, --help group {want!r}")
    return bad


def test_cli_doc_groups_the_options_as_help_does():
    text = CLI_DOC.read_text()
    assert misgrouped(grouped_options_tables(text)) == []
    headings = [ln[3:] for ln in text.split("\n") if ln.startswith("## ")]
    order = [h for h in headings if h in {"options", "test hooks", *(title for title, _ in GROUPS)}]
    assert order == ["options", *(title for title, _ in GROUPS), "test hooks"], order
    # and the check sees a row in the wrong group
    moved = text.replace("| `--concurrency C` | 32 |", "| `--concurrency-x` | 32 |").replace(
        "| option | default | meaning |\n| --- | --- | --- |\n| `--session-dir",
        "| option | default | meaning |\n| --- | --- | --- |\n| `--concurrency C` | 32 | x |\n| `--session-dir")
    assert "--concurrency: under 'input and output', --help group 'HTTP'" in misgrouped(grouped_options_tables(moved))


# --------------------------------------------------------------------------- documents and layout


def test_readme_links_every_document_and_every_named_document_exists():
    readme = README.read_text()
    docs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert [d for d in docs if f"`{d}`" not in readme] == [], "documents the README does not link"
    bench_docs = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    sub = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "benchmarks").glob("*.md"))
    assert [d for d in sub if f"`{d}`" not in bench_docs] == [], "benchmark documents BENCHMARKS.md does not link"
    for src in [README, ROOT / "bench" / "README.md", *(ROOT / "docs").rglob("*.md")]:
        named = set(re.findall(r"`((?:docs|bench)/[\w./-]+\.(?:md|py))`", src.read_text()))
        assert [n for n in sorted(named) if not (ROOT / n).exists()] == [], f"{src.name} names missing files"


def test_architecture_layout_table_names_every_package():
    """The layout table (folders and imports) is in docs/ARCHITECTURE.md, which the README links."""
    text = ARCHITECTURE.read_text()
    packages = [p.parent.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "abc_crawler").glob("*/__init__.py")]
    assert packages and [p for p in packages if f"| `{p}` |" not in text] == []


# --------------------------------------------------------------------------- benchmark commands


def benchmark_commands() -> dict[str, set[str]]:
    """Script -> the flags the commands of docs/BENCHMARKS.md give it."""
    out: dict[str, set[str]] = {}
    for cmd in re.findall(r"`(bench/[\w]+\.py[^`]*)`", (ROOT / "docs" / "BENCHMARKS.md").read_text()):
        script, *args = cmd.split()
        out.setdefault(script, set()).update(a for a in args if a.startswith("--"))
    return out


@pytest.mark.parametrize("script", sorted(benchmark_commands()))
def test_every_benchmark_command_names_a_script_and_flags_it_has(script):
    path = ROOT / script
    assert path.is_file(), script
    r = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert sorted(f for f in benchmark_commands()[script] if f not in r.stdout) == []


# --------------------------------------------------------------------------- session keys


def documented_keys(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_0-9]+)`", text))


def undocumented(stats: dict, manifest: dict, text: str) -> list[str]:
    """Keys of stats.json / manifest.json that SESSION_FORMAT.md does not name (data dicts excluded)."""
    doc = documented_keys(text)
    keys = [f"stats.{k}" for k in stats]
    for sect in ("exchange", "imbalance", "graph"):
        keys += [f"stats.{sect}.{k}" for k in stats.get(sect) or {}]
    for r in stats.get("per_rank") or []:
        keys += [f"stats.per_rank.{k}" for k in r]
    keys += [f"manifest.{k}" for k in manifest]
    keys += [f"manifest.software.{k}" for k in manifest.get("software") or {}]
    for r in manifest.get("resumed") or []:
        keys += [f"manifest.resumed.{k}" for k in r]
    return sorted({k for k in keys if k.rsplit(".", 1)[1] not in doc and f"`{k.rsplit('.', 1)[1]}`" not in text})


@pytest.fixture(scope="module")
def crawled_session(tmp_path_factory):
    """A real 2-rank session of a small generated web (graph statistics on)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from crawlcheck import crawl_cli, generate, serve

    d = tmp_path_factory.mktemp("docs-session")
    web = d / "web"
    generate(web, n_hosts=4, n_pages=40, seed=3)
    with serve(web):
        r = crawl_cli(2, web, d / "s", "--checkpoint-seconds", "0.2", timeout=180)
    assert r.returncode == 0, r.stderr
    return d / "s"


def test_session_format_documents_every_key_a_session_has(crawled_session):
    stats = json.loads((crawled_session / "stats.json").read_text())
    manifest = json.loads((crawled_session / "manifest.json").read_text())
    assert stats["per_rank"] and stats["graph"]["nodes"] > 0 and "scc_count" in stats["graph"]["whole"]
    text = (ROOT / "docs" / "SESSION_FORMAT.md").read_text()
    assert undocumented(stats, manifest, text) == []
    # and the check sees a key that is not documented
    stats["exchange"]["a_new_counter"] = 1
    manifest["software"]["a_new_library"] = "1.0"
    assert undocumented(stats, manifest, text) == ["manifest.software.a_new_library",
                                                   "stats.exchange.a_new_counter"]
