"""Deployment files against their schemas, offline, with a broken copy of each to show the check bites.

* Kubernetes manifests: the JSON schemas that kubernetes-validate bundles (generated from the
  Kubernetes OpenAPI spec), in their strict form (no unknown fields), for the oldest and the
  newest Kubernetes version the package carries.
* ``compose.yaml``: the Compose Specification's JSON schema, as check-jsonschema vendors it
  (its ``vendor.compose-spec`` schema, Apache-2.0, from compose-spec/compose-spec).
* Grafana: no JSON schema for the dashboard model or for provisioning files is published as a
  package (Grafana's schemas are CUE, its SDKs are builders), so the dashboard is checked against
  the documented model: known fields, the 24-column grid without overlaps, panel types shipped
  with Grafana, the ClickHouse plugin's query fields, defined variables and valid time ranges.
* OpenTelemetry Collector: ``otelcol validate`` needs the collector binary, which no registry
  here ships, so the config is checked for the rules the collector applies when it loads one.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_deploy import DASHBOARD, DEPLOY, find, k8s_documents, load_yaml

# The test extra installs these; without it the module is skipped with this reason, not a collection error.
_EXTRA = "needs the test extra: pip install -e '.[test]'"
jsonschema = pytest.importorskip("jsonschema", reason=_EXTRA)
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason=_EXTRA)
all_versions = pytest.importorskip("kubernetes_validate.utils", reason=_EXTRA).all_versions
get_builtin_schema = pytest.importorskip("check_jsonschema.builtin_schemas", reason=_EXTRA).get_builtin_schema

K8S_VERSIONS = (all_versions()[0], all_versions()[-1])

# -- Kubernetes ----------------------------------------------------------------------------------


def k8s_problems(document: dict[str, Any], version: str) -> list[str]:
    try:
        kubernetes_validate.validate(document, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = "/".join(str(part) for part in exc.absolute_path)
        return [f"{document['kind']} {document['metadata']['name']} at {path or '/'}: {exc.message}"]
    return []


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_k8s_document_matches_the_kubernetes_schema(version: str) -> None:
    documents = [*k8s_documents(), load_yaml(DEPLOY / "k8s" / "examples" / "spanscore-secret.yaml")]
    problems = [problem for document in documents for problem in k8s_problems(document, version)]
    assert problems == []


@pytest.mark.parametrize(
    "breaks",
    [
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(imagePullPolcy="Always"),  # typo
        lambda d: d["spec"].update(replicas="three"),
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(containerPort="4317"),
        lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("name"),
    ],
)
def test_a_broken_deployment_fails_the_kubernetes_schema(breaks: Callable[[dict[str, Any]], object]) -> None:
    deployment = copy.deepcopy(find("StatefulSet", "spanscore"))
    breaks(deployment)
    assert k8s_problems(deployment, K8S_VERSIONS[-1])


# -- compose -----------------------------------------------------------------------------------


def compose_problems(document: dict[str, Any]) -> list[str]:
    schema = get_builtin_schema("vendor.compose-spec")
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document)]


def test_compose_file_matches_the_compose_specification() -> None:
    assert compose_problems(load_yaml(DEPLOY / "compose.yaml")) == []


@pytest.mark.parametrize(
    "breaks",
    [
        lambda c: c["services"]["spanscore"]["depends_on"]["clickhouse"].update(condition="service_ready"),
        lambda c: c["services"]["grafana"].update(prots=["3000:3000"]),  # typo
        lambda c: c["services"]["clickhouse"]["ulimits"].update(nofile={"soft": 1024}),  # hard is required
        lambda c: c.update(volume={}),
    ],
)
def test_a_broken_compose_file_fails_the_specification(breaks: Callable[[dict[str, Any]], object]) -> None:
    compose = copy.deepcopy(load_yaml(DEPLOY / "compose.yaml"))
    breaks(compose)
    assert compose_problems(compose)


# -- Grafana dashboard -------------------------------------------------------------------------

# Fields of the dashboard JSON model (Grafana docs, "JSON model"), of a panel, and of a variable.
DASHBOARD_FIELDS = frozenset(
    "id uid title description tags style timezone editable graphTooltip time timepicker templating annotations "
    "refresh schemaVersion version panels links fiscalYearStartMonth liveNow weekStart gnetId revision preload".split()
)
PANEL_FIELDS = frozenset(
    "id type title description gridPos datasource targets fieldConfig options transparent links repeat "
    "repeatDirection maxPerRow interval maxDataPoints timeFrom timeShift hideTimeOverride transformations "
    "libraryPanel pluginVersion cacheTimeout queryCachingTTL collapsed panels".split()
)
VARIABLE_FIELDS = frozenset(
    "name label type description datasource query definition multi includeAll allValue current options refresh "
    "regex sort hide skipUrlSync".split()
)
# Panel plugins that ship with Grafana 11 (no install needed).
BUILT_IN_PANELS = frozenset(
    "timeseries table stat gauge bargauge barchart piechart text heatmap histogram logs traces nodeGraph "
    "state-timeline status-history xychart trend geomap canvas news dashlist alertlist annolist row".split()
)
# The ClickHouse plugin's query model: editor, query type and the format each query type uses.
CLICKHOUSE_FORMATS = {"timeseries": 0, "table": 1, "logs": 2, "traces": 3}
GRID_COLUMNS = 24
RELATIVE_TIME = re.compile(r"^now(?:[-+]\d+[smhdwMy])?(?:/[smhdwMy])?$")
INTERVAL = re.compile(r"^\d+[smhdwMy]$")


def provisioned_datasource() -> dict[str, Any]:
    sources = load_yaml(DEPLOY / "grafana/provisioning/datasources/clickhouse.yaml")["datasources"]
    assert len(sources) == 1
    return dict(sources[0])


def _unknown(fields: dict[str, Any], known: frozenset[str], where: str) -> list[str]:
    return [f"{where}: unknown field {name!r}" for name in sorted(set(fields) - known)]


def _grid_problems(panels: list[dict[str, Any]]) -> list[str]:
    problems = []
    for panel in panels:
        grid = panel.get("gridPos", {})
        x, y, w, h = (grid.get(key) for key in ("x", "y", "w", "h"))
        if not all(isinstance(value, int) for value in (x, y, w, h)):
            problems.append(f"panel {panel.get('id')}: gridPos needs integer x, y, w, h")
        elif x < 0 or y < 0 or w < 1 or h < 1 or x + w > GRID_COLUMNS:
            problems.append(f"panel {panel.get('id')}: gridPos {grid} is outside the {GRID_COLUMNS}-column grid")
    boxes = [(p.get("id"), p.get("gridPos", {})) for p in panels]
    for (first, a), (second, b) in combinations(boxes, 2):
        if _overlap(a, b):
            problems.append(f"panels {first} and {second} overlap")
    return problems


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if not all(isinstance(box.get(key), int) for box in (a, b) for key in "xywh"):
        return False
    across = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
    down = a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]
    return across and down


def _target_problems(panel: dict[str, Any], source: dict[str, Any]) -> list[str]:
    where = f"panel {panel.get('id')}"
    problems = []
    targets = panel.get("targets", [])
    if not targets:
        problems.append(f"{where}: no queries")
    if len({t.get("refId") for t in targets}) != len(targets):
        problems.append(f"{where}: refIds must be unique")
    for target in [panel, *targets]:
        if target.get("datasource") != {"type": source["type"], "uid": source["uid"]}:
            problems.append(f"{where}: datasource must be the provisioned {source['uid']!r}")
    for target in targets:
        query_type = target.get("queryType")
        if target.get("editorType") not in ("sql", "builder"):
            problems.append(f"{where}: editorType must be sql or builder")
        if CLICKHOUSE_FORMATS.get(query_type) != target.get("format"):
            problems.append(f"{where}: format {target.get('format')!r} does not match queryType {query_type!r}")
        if panel.get("type") == "timeseries" and not re.search(r"\bAS time\b", target.get("rawSql", "")):
            problems.append(f"{where}: a time series query must return a column named time")
    return problems


def _variable_problems(dashboard: dict[str, Any], source: dict[str, Any]) -> list[str]:
    problems = []
    variables = dashboard.get("templating", {}).get("list", [])
    for variable in variables:
        where = f"variable {variable.get('name')!r}"
        problems += _unknown(variable, VARIABLE_FIELDS, where)
        if variable.get("type") == "query" and variable.get("datasource", {}).get("uid") != source["uid"]:
            problems.append(f"{where}: datasource must be the provisioned {source['uid']!r}")
        if variable.get("refresh") not in (0, 1, 2):
            problems.append(f"{where}: refresh must be 0, 1 or 2")
    defined = {variable.get("name") for variable in variables}
    sql = " ".join(t.get("rawSql", "") for p in dashboard.get("panels", []) for t in p.get("targets", []))
    for used in sorted(set(re.findall(r"\$\{(\w+)(?::\w+)?\}", sql)) - defined):
        problems.append(f"variable {used!r} is used in a query but not defined")
    return problems


def dashboard_problems(dashboard: dict[str, Any], source: dict[str, Any]) -> list[str]:
    """Everything wrong with ``dashboard`` that Grafana would reject, ignore silently or draw wrongly."""
    problems = _unknown(dashboard, DASHBOARD_FIELDS, "dashboard")
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", str(dashboard.get("uid", ""))):
        problems.append("dashboard: uid must be 1-40 letters, digits, '-' or '_'")
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 36:
        problems.append("dashboard: schemaVersion must be an integer of Grafana 10 or later (>= 36)")
    time = dashboard.get("time", {})
    if not (RELATIVE_TIME.match(str(time.get("from"))) and RELATIVE_TIME.match(str(time.get("to")))):
        problems.append(f"dashboard: time range {time} is not relative (now-7d .. now)")
    if "refresh" in dashboard and not INTERVAL.match(str(dashboard["refresh"])):
        problems.append(f"dashboard: refresh {dashboard['refresh']!r} is not an interval like 1m")
    panels = dashboard.get("panels", [])
    if len({panel.get("id") for panel in panels}) != len(panels):
        problems.append("dashboard: panel ids must be unique")
    for panel in panels:
        problems += _unknown(panel, PANEL_FIELDS, f"panel {panel.get('id')}")
        if panel.get("type") not in BUILT_IN_PANELS:
            problems.append(f"panel {panel.get('id')}: type {panel.get('type')!r} is not a built-in panel")
        problems += _target_problems(panel, source)
    return problems + _grid_problems(panels) + _variable_problems(dashboard, source)


def load_dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def test_dashboard_matches_the_grafana_dashboard_model() -> None:
    assert dashboard_problems(load_dashboard(), provisioned_datasource()) == []


@pytest.mark.parametrize(
    "breaks",
    [
        lambda d: d.update(shemaVersion=39),  # typo
        lambda d: d["panels"][1]["gridPos"].update(x=6),  # overlaps panel 1
        lambda d: d["panels"][6]["gridPos"].update(w=25),
        lambda d: d["panels"][0].update(type="graph-old"),
        lambda d: d["panels"][0]["targets"][0]["datasource"].update(uid="other"),
        lambda d: d["panels"][6]["targets"][0].update(format=0),  # a table query as a time series
        lambda d: d["templating"]["list"].clear(),  # ${rule} used but not defined
        lambda d: d["time"].update({"from": "last week"}),
        lambda d: d["panels"].append(copy.deepcopy(d["panels"][0])),  # duplicate id, overlap
    ],
)
def test_a_broken_dashboard_fails_the_model(breaks: Callable[[dict[str, Any]], object]) -> None:
    dashboard = load_dashboard()
    breaks(dashboard)
    assert dashboard_problems(dashboard, provisioned_datasource())


# -- OpenTelemetry Collector -------------------------------------------------------------------

COLLECTOR_SECTIONS = ("receivers", "processors", "exporters", "extensions", "connectors", "service")
SIGNALS = ("traces", "metrics", "logs")
# What the contrib image's components we use accept (their config structs), for the keys we set.
LOADBALANCING_ROUTING_KEYS = ("traceID", "service", "resource", "metric", "streamID", "attributes")
LOADBALANCING_RESOLVERS = ("static", "dns", "k8s", "aws_cloud_map")


def _pipeline_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    pipelines = config.get("service", {}).get("pipelines", {})
    if not pipelines:
        problems.append("service.pipelines: none defined")
    for name, pipeline in pipelines.items():
        if name.split("/", 1)[0] not in SIGNALS:
            problems.append(f"service.pipelines.{name}: the pipeline type must be one of {SIGNALS}")
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                if component not in (config.get(kind) or {}):
                    problems.append(f"service.pipelines.{name}.{kind}: {component!r} is not configured in {kind}")
        for kind in ("receivers", "exporters"):
            if not pipeline.get(kind):
                problems.append(f"service.pipelines.{name}: needs at least one of {kind}")
        processors = pipeline.get("processors", [])
        if any(p.startswith("memory_limiter") for p in processors) and not processors[0].startswith("memory_limiter"):
            problems.append(f"service.pipelines.{name}: memory_limiter must be the first processor")
    for extension in config.get("service", {}).get("extensions", []):
        if extension not in (config.get("extensions") or {}):
            problems.append(f"service.extensions: {extension!r} is not configured in extensions")
    return problems


def _component_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    for name, limiter in (config.get("processors") or {}).items():
        if name.split("/", 1)[0] == "memory_limiter":
            if not limiter.get("check_interval"):
                problems.append(f"processors.{name}: check_interval must be set and above 0")
            if not 0 < limiter.get("spike_limit_percentage", 0) < limiter.get("limit_percentage", 0) <= 100:
                problems.append(f"processors.{name}: needs 0 < spike_limit_percentage < limit_percentage <= 100")
    for name, exporter in (config.get("exporters") or {}).items():
        if name.split("/", 1)[0] == "loadbalancing":
            if exporter.get("routing_key") not in LOADBALANCING_ROUTING_KEYS:
                problems.append(f"exporters.{name}.routing_key must be one of {LOADBALANCING_ROUTING_KEYS}")
            if len(set(exporter.get("resolver", {})) & set(LOADBALANCING_RESOLVERS)) != 1:
                problems.append(f"exporters.{name}.resolver needs exactly one of {LOADBALANCING_RESOLVERS}")
            if set(exporter.get("protocol", {})) != {"otlp"}:
                problems.append(f"exporters.{name}.protocol must be otlp")
    return problems


def collector_problems(config: dict[str, Any], environment: set[str]) -> list[str]:
    """What the collector would refuse at start-up (or start without) for ``config``."""
    problems = [f"unknown top-level section {key!r}" for key in config if key not in COLLECTOR_SECTIONS]
    text = yaml.safe_dump(config)
    for variable in sorted(set(re.findall(r"\$\{env:(\w+)\}", text)) - environment):
        problems.append(f"${{env:{variable}}} is not set in the collector's container")
    if re.search(r"\$\{(?!env:)[^}]*\}", text):
        problems.append("only ${env:NAME} references are expanded")
    return problems + _pipeline_problems(config) + _component_problems(config)


def collector_config_and_environment() -> tuple[dict[str, Any], set[str]]:
    config = yaml.safe_load(find("ConfigMap", "otel-collector-config")["data"]["config.yaml"])
    container = find("Deployment", "otel-collector")["spec"]["template"]["spec"]["containers"][0]
    return config, {variable["name"] for variable in container.get("env", [])}


def test_collector_config_is_one_the_collector_loads() -> None:
    config, environment = collector_config_and_environment()
    assert collector_problems(config, environment) == []
    # The health_check extension listens on the port the probes use.
    container = find("Deployment", "otel-collector")["spec"]["template"]["spec"]["containers"][0]
    health_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "health")
    assert config["extensions"]["health_check"]["endpoint"].endswith(f":{health_port}")


def _put_a_processor_before_the_memory_limiter(config: dict[str, Any]) -> None:
    config["processors"]["transform"] = {}
    config["service"]["pipelines"]["logs"]["processors"] = ["transform", "memory_limiter"]


@pytest.mark.parametrize(
    "breaks",
    [
        lambda c: c["service"]["pipelines"]["traces"].update(exporters=["otlp"]),  # not configured
        lambda c: c["service"]["pipelines"].update(spans=c["service"]["pipelines"]["traces"]),
        lambda c: c["service"]["pipelines"]["logs"].update(processors=["memory_limiter", "transform"]),
        lambda c: _put_a_processor_before_the_memory_limiter(c),
        lambda c: c["processors"].update(memory_limiter={"check_interval": "1s", "limit_percentage": 20}),
        lambda c: c["exporters"]["loadbalancing"].update(routing_key="traceId"),
        lambda c: c["exporters"]["loadbalancing"]["resolver"].update(static={"hostnames": ["a"]}),
        lambda c: c["exporters"]["loadbalancing"]["protocol"]["otlp"]["headers"].update(x="${env:MISSING}"),
        lambda c: c.update(pipelines={}),
    ],
)
def test_a_broken_collector_config_is_caught(breaks: Callable[[dict[str, Any]], object]) -> None:
    config, environment = collector_config_and_environment()
    breaks(config)
    assert collector_problems(config, environment)


def test_the_checks_read_the_deployed_files() -> None:
    """Guards the guards: the files exist where the checks look, and hold what they expect."""
    assert Path(DASHBOARD).is_file()
    kinds = {"Deployment", "StatefulSet", "Service", "ConfigMap", "Job", "Namespace"}
    assert {d["kind"] for d in k8s_documents()} >= kinds
