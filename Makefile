# ABC crawler: the two front-door commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.abc-installed
# Every MPI run in the test suite is wrapped in a timeout: a collective entered by
# only some ranks hangs forever. Its seconds come from tests/mpi/budget.py, where each test's own
# timeout is set too (their sum plus start-up: a hanging test fails by its own timeout first).

.PHONY: all venv bytecode test test-unit demo bench-setup clean

all: test

$(STAMP): pyproject.toml setup.py $(wildcard kernels/*.pyx kernels/*.pxd abc_crawler/web/*.pyx abc_crawler/store/*.pyx)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel "Cython>=3.0" "numpy>=1.26"
	$(PY) -m pip install -q --no-build-isolation -e '.[test]'
	touch $@

venv: $(STAMP) bytecode

# The package is installed in editable mode, which writes no bytecode; where Python does not
# write it either (PYTHONDONTWRITEBYTECODE, a read-only tree) every rank would compile every
# module again at each start (~0.1 CPU-s per rank). compileall skips up-to-date files.
bytecode: $(STAMP)
	$(PY) -m compileall -q abc_crawler kernels partition >/dev/null

# tests/multihost simulate hosts with unshare (root); where that is not permitted they are
# skipped (a failure under ABC_REQUIRE_ALL=1), and -rs prints why. The dashboard and HTML-report tests drive Debian's headless Chromium
# (Playwright, no browser download): installed here when missing (as root, like CI), and required.
# What the tests need from Debian, installed when missing (as root, like CI): Chromium for the
# browser tests, openssl for the TLS tests' certificates, METIS's graphchk for the .graph export.
# Under ABC_REQUIRE_ALL=1 (.ci/run) a skipped test fails, with its reason.
test: $(STAMP) bytecode
	command -v chromium >/dev/null && command -v openssl >/dev/null && command -v graphchk >/dev/null || { \
	  apt-get update -qq && apt-get install -y -qq chromium chromium-driver openssl metis; }
	ABC_REQUIRE_BROWSER=1 $(PY) -m pytest -q -rs -p no:cacheprovider tests --ignore=tests/mpi
	for n in 1 2 4; do \
	  echo "== MPI tests at $$n rank(s)"; \
	  timeout $$($(PY) tests/mpi/budget.py) $(BIN)/mpiexec -n $$n $(PY) -m pytest -q -p no:cacheprovider --with-mpi tests/mpi || exit 1; \
	done

test-unit: $(STAMP) bytecode
	$(PY) -m pytest -q -rs -p no:cacheprovider tests --ignore=tests/mpi

# DEMO_ARGS: options of abc_crawler.demo (e.g. a smaller web: --hosts 6 --pages 200 --ranks 2); the
# smoke test tests/test_demo.py runs this target so
DEMO_ARGS ?=
demo: $(STAMP) bytecode
	PATH=$(abspath $(BIN)):$$PATH $(PY) -m abc_crawler.demo $(DEMO_ARGS)

# What the scripts under bench/ need beyond the project: nginx on loopback (Debian's
# nginx-light), Debian's wget2 (the C peer of bench/cpu_guard.py), Scrapy for P1 and py-spy for the
# profiles (the `bench` extra). The documentation packages of the real corpus are installed by
# bench/corpus.py when a script first needs them.
bench-setup: $(STAMP) bytecode
	command -v nginx >/dev/null || { apt-get update -qq && apt-get install -y -qq nginx-light; }
	command -v wget2 >/dev/null || { apt-get update -qq && apt-get install -y -qq wget2; }
	$(PY) -m pip install -q --no-build-isolation -e '.[test,bench]'

clean:
	rm -rf build *.egg-info demo kernels/*.c kernels/*.so abc_crawler/web/*.c abc_crawler/web/*.so abc_crawler/store/*.c abc_crawler/store/*.so
