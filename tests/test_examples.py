"""Every example runs end to end."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sql_session_example():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "run_sql.py"), str(ROOT / "examples" / "k_anonymize.sql")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "achieved_k" in out.stdout and "ncp_percent" in out.stdout
    measures = out.stdout.split("achieved_k")[1].splitlines()[1].split(" | ")
    assert int(measures[0]) == 30162 and int(measures[2]) >= 10
