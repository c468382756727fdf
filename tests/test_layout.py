"""The code's shape, checked: each decision in one place a newcomer can find.

- no runtime module (abc_crawler/, partition/; the test web aside) over 600 lines;
- the hash assignment's bucket count is a constant in one place;
- no import cycle inside a package (module-level imports; imports inside functions are how a
  lower layer reaches a higher one lazily, and are allowed).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = [p for d in ("abc_crawler", "partition") for p in (ROOT / d).rglob("*.py")
           if "testweb" not in p.parts]
MAX_LINES = 600


def test_no_runtime_module_is_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in RUNTIME if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_the_bucket_count_is_defined_once():
    """The hash assignment's 4096 buckets are written as a number once: ``N_BUCKETS`` in
    abc_crawler/web/ownership.py (every other 4096 in the code is about something else: no
    "bucket" on its line)."""
    hits = []
    for p in RUNTIME + list((ROOT / "kernels").glob("*.py")):
        lines = p.read_text().splitlines()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value == 4096:
                line = lines[node.lineno - 1]
                if "bucket" in line.lower():
                    hits.append(f"{p.relative_to(ROOT)}:{node.lineno}: {line.strip()}")
    assert len(hits) == 1 and hits[0].startswith("abc_crawler/web/ownership.py:") and "N_BUCKETS = 4096" in hits[0], hits


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    mapping = {"abc_crawler": ["abc_crawler"], "partition": ["abc_crawler", "partition"],
               "kernels": ["abc_crawler", "kernels"]}
    parts = mapping[parts[0]] + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _top_level_imports(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text())
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in tree.body:                      # module level only
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
    return out


def test_no_import_cycle_inside_a_package():
    files = RUNTIME + list((ROOT / "kernels").glob("*.py"))
    mods = {_module_name(p): p for p in files}
    graph = {m: {d for d in _top_level_imports(p, m) if d in mods and d != m} for m, p in mods.items()}
    # an edge a -> b counts only inside one package (the same parent)
    parent = lambda m: m.rsplit(".", 1)[0]  # noqa: E731
    cycles = []
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for d in graph[m]:
            if parent(d) != parent(m) and not d.startswith(m + "."):
                continue
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, cycles


def test_every_package_is_installed():
    """A non-editable install gets every package folder (pyproject's explicit package list)."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    dirs = {"abc_crawler": "abc_crawler", "kernels": "abc_crawler.kernels", "partition": "abc_crawler.partition"}
    found = set()
    for top, name in dirs.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join([name, *rel]))
    assert found == listed, (found - listed, listed - found)


def test_the_owner_rules_do_not_import_the_partitioner():
    """abc_crawler/web/ownership.py (the owner rules) is imported by partition/partvec.py (the vector's
    file); it must not import the partitioner back, not even lazily inside a function (issue 31:
    the cycle). abc_crawler/web/assignments.py sits above both."""
    import ast

    root = Path(__file__).resolve().parents[1]
    tree = ast.parse((root / "abc_crawler" / "web" / "ownership.py").read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if "partition" in m or m.endswith("assignments")], imported
    pv = ast.parse((root / "partition" / "partvec.py").read_text())
    assert any((n.module or "").endswith("ownership") for n in ast.walk(pv) if isinstance(n, ast.ImportFrom))
