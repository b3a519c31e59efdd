"""The README's pytest example runs as written (a pytest of its own, in a
scratch folder, with the package on PYTHONPATH as the README says)."""
import os
import re
import subprocess
import sys

import admit
from conftest import SOURCE


def test_readme_pytest_example(tmp_path):
    text = open(os.path.join(SOURCE, "README.md")).read()
    block = re.search(r"A kernel's admission as a pytest \(`test_fc1.py`\):\n\n```python\n(.*?)```", text, re.S)
    assert block, "README.md: the pytest example is gone"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 10, "the example is ten lines"
    (tmp_path / "test_fc1.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(admit.__file__))))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_fc1.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
