"""The official MCP conformance suite and the inspector CLI: independent TypeScript clients."""

from __future__ import annotations

import re
import subprocess

import pytest

from symbiote.config import PROJECT_ROOT
from tests.conftest import ServerProcess

SCRIPT = PROJECT_ROOT.parent / "shared" / "tools" / "mcp-conformance.sh"
MUST_PASS = ("server-initialize", "ping", "tools-list", "prompts-list", "resources-list", "dns-rebinding-protection")


@pytest.mark.skipif(not SCRIPT.exists(), reason=f"{SCRIPT} is not beside this checkout")
def test_conformance_suite_passes(fresh_server: ServerProcess) -> None:
    for _attempt in range(3):  # exit 2 is the script's install/usage error (first npm install can flake)
        run = subprocess.run(
            ["bash", str(SCRIPT), fresh_server.mcp_url, "--only-applicable"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if run.returncode != 2:
            break
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    summary = run.stdout.strip().splitlines()[-1]
    assert ", 0 failed" in summary, output
    for scenario in MUST_PASS:
        assert f"✓ {scenario}:" in output, f"{scenario} did not pass:\n{output}"
    listed = re.search(r"✓ inspector tools/list: (\d+) tools: ([^\n]*)", output)
    assert listed and int(listed.group(1)) >= 6, output
    assert {"store_memory", "search_memory", "get_memory", "delete_memory"} <= set(listed.group(2).replace(" ", "").split(","))
