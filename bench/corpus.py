"""The real corpus: Debian's documentation sites laid out under their real host names.

    .venv/bin/python bench/corpus.py [--out /var/tmp/abc-bench/corpus] [--port 8080] [--no-install]

Installs the documentation packages of /work/shared/corpus/README.md with apt
when a document root is missing (``apt-get install -y ...``; ``--no-install``
only reports), then writes into ``--out`` the same web-directory format the
embedded server and ``bench/nginx.py`` read:

* ``sites/<host>`` — a symlink to the package's document root (so the site
  root of docs.python.org is exactly ``/usr/share/doc/python3.11/html``, as its
  root-relative links need);
* ``routes.json`` — ``static_fallback: true`` (serve any file under the root,
  directories answer ``index.html``, ``x.gz`` served decompressed as ``x``) and
  one ``prefix_redirects`` entry: on docs.djangoproject.com every path under
  ``/usr/share/doc/python3-doc/html/`` answers ``301`` to the same path on
  ``http://docs.python.org:PORT/`` (Django's 575 file-path links into Python's
  docs become real cross-site links);
* ``seeds.txt`` — each site's seed page (git-scm.com: ``/git.html``, it has no
  index.html), ``resolve.txt`` — ``HOST:PORT:127.0.0.1`` per site,
  ``manifest.json`` — ``addr``, ``port``, hosts, resolve lines, seeds, package
  versions.

Port: 8080 by default, not 80. Every cross-site absolute link in these
packages but a handful is ``https://`` (cmake alone has 3,877 links to
``https://cmake.org/``); only ~600 are ``http://`` (sqlite's links into its
Fossil repository, ``http://www.sqlite.org/src/timeline``, and gcc's own
``http://gcc.gnu.org/onlinedocs/...``, which lie outside the packaged trees
and would answer 404 anyway). On port 8080 the resolve list holds
``host:8080``: absolute links without the port (``http://docs.python.org/x``,
``https://...``) do not match it and stay out of scope, never resolved.
On port 80 the crawler would take ``https://cmake.org/...`` as in scope
(``abc_crawler/web/scope.py`` keys the scope on the host name for both default
ports, and curl's RESOLVE list has only the :80 entry, so the https request
would go to the system resolver); ``--port 80`` is therefore refused unless
``--guard-https`` is given, which adds ``HOST:443:127.0.0.1`` lines so that
such requests go to loopback (connection refused, counted as failures).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["SITES", "PACKAGES", "ensure_installed", "layout", "package_versions"]

# host -> (package, document root, seed path)
SITES = {
    "docs.python.org": ("python3.11-doc", "/usr/share/doc/python3.11/html", "/index.html"),
    "docs.djangoproject.com": ("python-django-doc", "/usr/share/doc/python-django-doc/html", "/index.html"),
    "www.postgresql.org": ("postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html", "/index.html"),
    "git-scm.com": ("git-doc", "/usr/share/doc/git-doc", "/git.html"),
    "www.sqlite.org": ("sqlite3-doc", "/usr/share/doc/sqlite3", "/index.html"),
    "cmake.org": ("cmake-doc", "/usr/share/doc/cmake-data/html", "/index.html"),
    "gcc.gnu.org": ("libstdc++-12-doc", "/usr/share/doc/gcc-12-base/libstdc++", "/index.html"),
}
# python3-doc provides the /usr/share/doc/python3-doc/html symlink Django's links name
PACKAGES = ["python3.11-doc", "python3-doc", "python-django-doc", "postgresql-doc-15", "git-doc", "sqlite3-doc",
            "cmake-doc", "libstdc++-12-doc"]
DJANGO_PREFIX = "/usr/share/doc/python3-doc/html/"
DEFAULT_OUT = "/var/tmp/abc-bench/corpus"


def missing_roots() -> list[str]:
    return [h for h, (_, root, seed) in SITES.items() if not Path(root + seed).exists()]


def ensure_installed(install: bool = True) -> None:
    """apt-get install the doc packages if a document root is missing."""
    missing = missing_roots()
    if not missing:
        return
    if not install:
        raise SystemExit(f"corpus: missing document roots for {', '.join(missing)} "
                         f"(apt-get install -y {' '.join(PACKAGES)})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", *PACKAGES]
    print("corpus: " + " ".join(cmd), file=sys.stderr)
    if subprocess.run(cmd, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, check=True)
        subprocess.run(cmd, env=env, check=True)
    still = missing_roots()
    if still:
        raise SystemExit(f"corpus: still missing after install: {', '.join(still)}")


def package_versions() -> dict[str, str]:
    out = {}
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True, text=True)
        out[p] = r.stdout.strip() if r.returncode == 0 else "not installed"
    return out


def layout(out_dir=DEFAULT_OUT, port: int = 8080, addr: str = "127.0.0.1", guard_https: bool = False) -> dict:
    """Write the corpus web directory; returns its manifest."""
    if port in (80, 443) and not guard_https:
        raise SystemExit("corpus: on port 80/443 https links to these hosts would count as in scope "
                         "(abc_crawler/web/scope.py); use another port or --guard-https")
    out = Path(out_dir)
    sites = out / "sites"
    sites.mkdir(parents=True, exist_ok=True)
    netloc = (lambda h: h) if port == 80 else (lambda h: f"{h}:{port}")
    for host, (_, root, _) in SITES.items():
        link = sites / host
        if link.is_symlink() or link.exists():
            if link.is_symlink() and os.readlink(link) == root:
                continue
            link.unlink()
        link.symlink_to(root)
    routes = {"format": "abc-testweb-routes/1", "static_fallback": True,
              "prefix_redirects": {"docs.djangoproject.com": {DJANGO_PREFIX: f"http://{netloc('docs.python.org')}/"}}}
    resolve = [f"{h}:{port}:{addr}" for h in SITES]
    if guard_https and port != 443:
        resolve += [f"{h}:443:{addr}" for h in SITES]
    seeds = [f"http://{netloc(h)}{seed}" for h, (_, _, seed) in SITES.items()]
    manifest = {"format": "abc-corpus/1", "addr": addr, "port": port, "hosts": [netloc(h) for h in SITES],
                "resolve": resolve, "seeds": seeds, "roots": {h: r for h, (_, r, _) in SITES.items()},
                "packages": package_versions()}
    (out / "routes.json").write_text(json.dumps(routes, indent=1) + "\n")
    (out / "resolve.txt").write_text("\n".join(resolve) + "\n")
    (out / "seeds.txt").write_text("\n".join(seeds) + "\n")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def prepare(out_dir=DEFAULT_OUT, port: int = 8080, install: bool = True) -> Path:
    """Install if needed and lay out; returns the web directory."""
    ensure_installed(install)
    layout(out_dir, port)
    return Path(out_dir)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--no-install", action="store_true", help="do not run apt-get; fail if a package is missing")
    ap.add_argument("--guard-https", action="store_true", help="with --port 80: add HOST:443:ADDR lines")
    a = ap.parse_args(argv)
    ensure_installed(not a.no_install)
    m = layout(a.out, a.port, a.addr, a.guard_https)
    print(f"{a.out}: {len(m['hosts'])} sites on {a.addr}:{a.port}")
    for h in SITES:
        print(f"  {h:24s} -> {SITES[h][1]}  ({SITES[h][0]} {m['packages'][SITES[h][0]]})")
    print(f"  seeds: {a.out}/seeds.txt  resolve: {a.out}/resolve.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
