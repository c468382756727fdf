"""The README is the front door: it must list every crawl setting and console script."""
import tomllib
from pathlib import Path

from abc_crawler.config import SETTINGS

ROOT = Path(__file__).resolve().parents[1]


def test_readme_lists_every_setting():
    readme = (ROOT / "README.md").read_text()
    missing = [s.name for s in SETTINGS if f"--{s.name.replace('_', '-')}" not in readme]
    assert not missing, f"settings missing from README: {missing}"


def test_readme_names_every_console_script():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    readme = (ROOT / "README.md").read_text()
    assert [s for s in scripts if s not in readme] == []
