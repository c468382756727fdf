import os
import sys
from pathlib import Path

# tests/ holds shared support modules (crawlcheck); make them importable from tests/mpi/ too.
sys.path.insert(0, str(Path(__file__).parent))

# every crawl the tests start sends its rank to the test web (abc_crawler.config.TEST_RANK_HEADER_ENV),
# also the README's and make demo's commands run verbatim: the access-log checks attribute requests
os.environ["ABC_TEST_RANK_HEADER"] = "1"
