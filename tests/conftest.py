import sys
from pathlib import Path

# tests/ holds shared support modules (crawlcheck); make them importable from tests/mpi/ too.
sys.path.insert(0, str(Path(__file__).parent))
