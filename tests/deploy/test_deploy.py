"""Deployment files: they parse, they fit together, and the dashboard's SQL runs on the schema.

No container runtime or cluster is available to the tests, so these check how the files fit
together: documents parse, names and ports line up across files, secrets are referenced rather
than written, and the config files load with spanscore's own loader. The Grafana panels' SQL is
executed on the embedded engine. Each file against its schema: ``test_schemas.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from spanscore.config import load_config
from spanscore.errors import ConfigError
from spanscore.storage.clickhouse import ClickHouseStore
from spanscore.storage.scores import DecisionRow
from tests.unit.storage.test_rollups import BASE_NS, make_scores

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "spanscore.json"
DATASOURCE_UID = "spanscore-clickhouse"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def k8s_documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None)
    return docs


def find(kind: str, name: str) -> dict[str, Any]:
    matches = [d for d in k8s_documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, (kind, name)
    return matches[0]


# -- image -------------------------------------------------------------------------------------


def test_dockerfile_builds_a_non_root_service_image() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim$", text, re.MULTILINE)
    assert re.search(r"^RUN pip install \.", text, re.MULTILINE)
    user = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert user and user[-1] not in ("root", "0")
    assert re.search(r"^EXPOSE 4317 4318 4319$", text, re.MULTILINE)
    assert 'CMD ["serve", "-c", "/etc/spanscore/spanscore.yaml"]' in text
    assert 'ENTRYPOINT ["spanscore"]' in text


def test_image_config_loads_and_listens_on_all_interfaces() -> None:
    config = load_config(DEPLOY / "spanscore.yaml", environ={})
    assert config.collector.grpc.host == config.collector.http.host == config.api.host == "0.0.0.0"
    assert (config.collector.grpc.port, config.collector.http.port, config.api.port) == (4317, 4318, 4319)


# -- compose -----------------------------------------------------------------------------------


def compose_environment(service: dict[str, Any], values: dict[str, str]) -> dict[str, str]:
    """The service's environment with ${VAR}, ${VAR:?msg} and ${VAR:-default} filled in."""

    def fill(text: str) -> str:
        return re.sub(r"\$\{(\w+)(?::[?-][^}]*)?\}", lambda m: values.get(m.group(1), ""), text)

    return {key: fill(str(value)) for key, value in service["environment"].items()}


def test_compose_runs_clickhouse_spanscore_and_grafana() -> None:
    compose = load_yaml(DEPLOY / "compose.yaml")
    services = compose["services"]
    assert set(services) == {"clickhouse", "migrate", "spanscore", "grafana"}
    assert services["clickhouse"]["image"].startswith("clickhouse/clickhouse-server:")
    assert services["grafana"]["image"].startswith("grafana/grafana:")
    published = {str(p).split(":")[-2]: str(p).split(":")[-1] for p in services["spanscore"]["ports"]}
    assert published == {"4317": "4317", "4318": "4318", "4319": "4319"}
    assert any(str(p).endswith(":3000") for p in services["grafana"]["ports"])
    assert services["spanscore"]["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    assert services["spanscore"]["build"]["dockerfile"] == "deploy/Dockerfile"


def test_compose_spanscore_reaches_the_server_with_tokens_from_the_environment() -> None:
    compose = load_yaml(DEPLOY / "compose.yaml")
    service = compose["services"]["spanscore"]
    secrets = {"CLICKHOUSE_PASSWORD": "pw", "SPANSCORE_INGEST_TOKEN": "in-tok", "SPANSCORE_API_TOKEN": "api-tok"}
    secrets |= {"SPANSCORE_OWNER_PASSWORD": "owner-pw", "SPANSCORE_QUERY_PASSWORD": "query-pw"}
    environ = compose_environment(service, secrets)
    # No secret is written into the file itself.
    raw = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    assert "in-tok" not in raw and "pw@" not in raw
    mount = next(v for v in service["volumes"] if v.endswith(":/etc/spanscore/spanscore.yaml:ro"))
    config = load_config(DEPLOY / mount.split(":")[0].removeprefix("./"), environ=environ)
    assert config.storage.dsn == "clickhouse://spanscore_owner:owner-pw@clickhouse:8123/"
    assert config.storage.query_dsn == "clickhouse://spanscore_query:query-pw@clickhouse:8123/"
    assert config.collector.auth_tokens == ["in-tok"]
    assert config.api.auth_tokens == ["api-tok"]
    assert config.collector.grpc.host == "0.0.0.0"
    # The administrator (CLICKHOUSE_USER) only creates deploy/clickhouse's users; spanscore never uses it.
    user = compose["services"]["clickhouse"]["environment"]["CLICKHOUSE_USER"]
    assert not config.storage.dsn.startswith(f"clickhouse://{user}:")


def test_compose_grafana_provisions_the_clickhouse_datasource_and_dashboards() -> None:
    compose = load_yaml(DEPLOY / "compose.yaml")
    grafana = compose["services"]["grafana"]
    assert "grafana-clickhouse-datasource" in grafana["environment"]["GF_INSTALL_PLUGINS"]
    mounts = dict(v.removesuffix(":ro").split(":", 1) for v in grafana["volumes"] if v.startswith("./"))
    for source in mounts:
        assert (DEPLOY / source).is_dir(), source
    datasources = load_yaml(DEPLOY / "grafana/provisioning/datasources/clickhouse.yaml")["datasources"]
    assert [d["type"] for d in datasources] == ["grafana-clickhouse-datasource"]
    source = datasources[0]
    assert source["uid"] == DATASOURCE_UID
    assert source["jsonData"]["host"] == "clickhouse"
    assert source["jsonData"]["defaultDatabase"] == load_config(DEPLOY / "spanscore.yaml", environ={}).storage.database
    assert source["secureJsonData"]["password"] == "$CLICKHOUSE_PASSWORD"
    assert "CLICKHOUSE_PASSWORD" in grafana["environment"]
    providers = [load_yaml(p) for p in (DEPLOY / "grafana/provisioning/dashboards").glob("*.yaml")]
    paths = {p["options"]["path"] for doc in providers for p in doc["providers"]}
    assert paths == {mounts["./grafana/dashboards"]}


# -- kubernetes --------------------------------------------------------------------------------


def test_every_k8s_document_has_api_version_kind_and_metadata() -> None:
    docs = k8s_documents()
    assert len(docs) >= 8
    for doc in docs:
        assert isinstance(doc.get("apiVersion"), str) and doc["apiVersion"], doc
        assert isinstance(doc.get("kind"), str) and doc["kind"], doc
        assert doc["metadata"]["name"], doc
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "spanscore", doc["metadata"]["name"]


def test_deployments_select_their_own_pods_and_services_find_them() -> None:
    docs = k8s_documents()
    workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    for workload in workloads:
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pods = {d["metadata"]["name"]: d["spec"]["template"] for d in workloads}
    for service in (d for d in docs if d["kind"] == "Service"):
        matching = [
            name
            for name, pod in pods.items()
            if service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        ]
        assert len(matching) == 1, service["metadata"]["name"]
        container_ports = {p["name"] for c in pods[matching[0]]["spec"]["containers"] for p in c["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in container_ports, (service["metadata"]["name"], port)


def test_spanscore_runs_several_replicas_with_config_and_secret_references(tmp_path: Path) -> None:
    deployment = find("StatefulSet", "spanscore")
    assert deployment["spec"]["replicas"] >= 2
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"] == ["serve", "-c", "/etc/spanscore/spanscore.yaml"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    config_map = find("ConfigMap", pod["volumes"][0]["configMap"]["name"])
    secret = load_yaml(K8S / "examples" / "spanscore-secret.yaml")
    environ = {}
    for variable in container["env"]:
        if "value" in variable:  # only the name of the variable holding Keeper's credential, not a secret
            assert variable == {"name": "SPANSCORE_FLEET__AUTH_ENV", "value": "FLEET_KEEPER_AUTH"}
            environ[variable["name"]] = variable["value"]
            continue
        if "fieldRef" in variable["valueFrom"]:  # the pod's own name: each replica's name in the fleet
            assert variable["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
            environ[variable["name"]] = "spanscore-1"
            continue
        ref = variable["valueFrom"]["secretKeyRef"]
        assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]
        environ[variable["name"]] = secret["stringData"][ref["key"]]
    secrets_by_reference = [v for v in container["env"] if v["name"] != "SPANSCORE_FLEET__AUTH_ENV"]
    assert all("value" not in variable for variable in secrets_by_reference)  # values only by reference
    config_path = Path(container["volumeMounts"][0]["mountPath"]) / "spanscore.yaml"
    assert str(config_path) == container["args"][-1]
    local = tmp_path / "spanscore.yaml"
    local.write_text(config_map["data"]["spanscore.yaml"], encoding="utf-8")
    with pytest.raises(ConfigError, match="placeholder"):  # the example applied unchanged does not start
        load_config(local, environ=environ)
    filled = {name: value.replace("REPLACE", f"secret-{index}") for index, (name, value) in enumerate(environ.items())}
    config = load_config(local, environ=filled)
    assert config.collector.auth_tokens == [filled["SPANSCORE_COLLECTOR__AUTH_TOKENS"]]  # one key, a plain token
    assert config.storage.dsn.startswith("clickhouse://")
    assert config.collector.grpc.host == "0.0.0.0" and config.collector.grpc.port == 4317
    # The replicas are one fleet: coordinated through Keeper, each under its pod's name (#28).
    assert config.fleet is not None and config.fleet.keeper == filled["SPANSCORE_FLEET__KEEPER"]
    assert config.fleet.replica_name() == "spanscore-1"  # a StatefulSet pod's: kept when replaced
    # Keeper's nodes admit only the fleet's credential, generated into the Secret (#36 item 15).
    assert config.fleet.credential(filled) == tuple(filled["FLEET_KEEPER_AUTH"].split(":", 1))
    assert config.storage.query_dsn.startswith("clickhouse://spanscore_query:")


def test_applying_the_folder_never_overwrites_the_real_secret() -> None:
    assert not [d for d in k8s_documents() if d["kind"] == "Secret"]
    example = load_yaml(K8S / "examples" / "spanscore-secret.yaml")
    assert example["kind"] == "Secret" and example["metadata"]["name"] == "spanscore-secrets"


def test_one_job_migrates_and_the_replicas_only_check(tmp_path: Path) -> None:
    config_map = find("ConfigMap", "spanscore-config")
    local = tmp_path / "spanscore.yaml"
    local.write_text(config_map["data"]["spanscore.yaml"], encoding="utf-8")
    assert load_config(local, environ={}).storage.migrate is False
    job = find("Job", "spanscore-migrate")["spec"]["template"]["spec"]
    deployment = find("StatefulSet", "spanscore")["spec"]["template"]["spec"]
    assert job["containers"][0]["args"] == ["migrate", "-c", "/etc/spanscore/spanscore.yaml"]
    assert job["containers"][0]["image"] == deployment["containers"][0]["image"]
    assert job["volumes"][0]["configMap"]["name"] == "spanscore-config"
    compose = load_yaml(DEPLOY / "compose.yaml")["services"]
    assert compose["migrate"]["command"][0] == "migrate"
    assert compose["spanscore"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert compose["spanscore"]["environment"]["SPANSCORE_STORAGE__MIGRATE"] == "false"


def test_data_directory_is_a_writable_volume_never_the_config_mount(tmp_path: Path) -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "SPANSCORE_STORAGE__DATA_DIR=/var/lib/spanscore" in dockerfile
    assert re.search(r"chown spanscore\S* /var/lib/spanscore", dockerfile)
    config = load_config(DEPLOY / "spanscore.yaml", environ={"SPANSCORE_STORAGE__DATA_DIR": "/var/lib/spanscore"})
    assert config.storage.dsn == "chdb:///var/lib/spanscore"
    assert config.storage.spool_dir.startswith("/var/lib/spanscore/")
    compose = load_yaml(DEPLOY / "compose.yaml")
    assert "spanscore-data:/var/lib/spanscore" in compose["services"]["spanscore"]["volumes"]
    assert "spanscore-data" in compose["volumes"]
    workload = find("StatefulSet", "spanscore")
    mounts = {m["mountPath"]: m for m in workload["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["/etc/spanscore"]["readOnly"] is True
    assert not mounts["/var/lib/spanscore"].get("readOnly", False)
    # The data directory, and so the spool in it, is each pod's own claim (#36 item 15).
    claims = {t["metadata"]["name"] for t in workload["spec"]["volumeClaimTemplates"]}
    assert mounts["/var/lib/spanscore"]["name"] in claims


def test_one_image_name_everywhere_with_build_and_push_steps() -> None:
    names = {load_yaml(DEPLOY / "compose.yaml")["services"][s]["image"] for s in ("migrate", "spanscore")}
    names |= {
        c["image"]
        for d in k8s_documents()
        if d["kind"] in ("Deployment", "StatefulSet", "Job")
        for c in d["spec"]["template"]["spec"]["containers"]
        if not c["image"].startswith("otel/")
    }
    assert names == {"spanscore:0.1.0"}
    doc = (DEPLOY.parent / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert "docker build -f deploy/Dockerfile -t spanscore:0.1.0 ." in doc
    assert "docker push <registry>/spanscore:0.1.0" in doc
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in doc
    assert "## Not done yet" not in doc


def test_build_context_leaves_out_the_virtualenv_and_the_licence_is_shipped() -> None:
    ignored = (DEPLOY.parent / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".venv", ".git", "spanscore-data"} <= set(ignored)
    assert "spanscore" not in ignored and "pyproject.toml" not in ignored
    licence = (DEPLOY.parent / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence


def test_env_example_matches_what_compose_requires() -> None:
    text = (DEPLOY / ".env.example").read_text(encoding="utf-8")
    values = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    raw = (DEPLOY / "compose.yaml").read_text(encoding="utf-8")
    required = set(re.findall(r"\$\{(\w+):\?", raw))
    assert required <= set(values)
    # Every required one is empty, so compose refuses to start until the operator sets a secret of their own
    # (a placeholder copied unchanged used to start a stack with tokens anyone can read here).
    assert not any(values[name] for name in required)
    optional = set(values) - required
    assert all(re.search(rf"\$\{{{name}:-", raw) for name in optional)


def test_collector_routes_each_trace_to_one_replica_through_the_headless_service() -> None:
    config = yaml.safe_load(find("ConfigMap", "otel-collector-config")["data"]["config.yaml"])
    exporter = config["exporters"]["loadbalancing"]
    assert exporter["routing_key"] == "traceID"
    headless = find("Service", "spanscore-headless")
    assert headless["spec"]["clusterIP"] == "None"
    hostname = exporter["resolver"]["dns"]["hostname"]
    assert hostname.split(".")[:2] == [headless["metadata"]["name"], headless["metadata"]["namespace"]]
    assert exporter["resolver"]["dns"]["port"] in {p["port"] for p in headless["spec"]["ports"]}
    for pipeline in ("traces", "logs"):
        assert config["service"]["pipelines"][pipeline]["exporters"] == ["loadbalancing"]
    assert "${env:SPANSCORE_INGEST_TOKEN}" in exporter["protocol"]["otlp"]["headers"]["authorization"]
    collector = find("Deployment", "otel-collector")["spec"]["template"]["spec"]["containers"][0]
    assert "contrib" in collector["image"]  # the loadbalancing exporter ships in the contrib build
    assert {e["name"] for e in collector["env"]} >= {"SPANSCORE_INGEST_TOKEN"}


# -- dashboard ---------------------------------------------------------------------------------


def dashboard_panels() -> list[dict[str, Any]]:
    return list(json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"])


def grafana_to_sql(sql: str) -> str:
    """Expand the Grafana macros and variables the panels use into plain ClickHouse SQL."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        r"\1 >= toDateTime('2020-01-01 00:00:00') AND \1 <= toDateTime('2100-01-01 00:00:00')",
        sql,
    )
    sql = sql.replace("${rule:singlequote}", "'prod', 'beta'")
    sql = sql.replace("${target:singlequote}", "'run', 'llm'")
    sql = sql.replace("${scorer:singlequote}", "'faithfulness', 'toxicity', 'completeness'")
    assert "$" not in sql, sql
    return sql


def test_dashboard_panels_query_the_views() -> None:
    panels = dashboard_panels()
    assert len({p["id"] for p in panels}) == len(panels) >= 6
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in ("score", "coverage", "worst runs", "judge cost"):
        assert topic in titles
    used = set()
    for panel in panels:
        assert panel["datasource"]["uid"] == DATASOURCE_UID
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == DATASOURCE_UID
            used.update(re.findall(r"\bFROM\s+(\w+)", target["rawSql"]))
    assert used >= {"score_trend_hourly", "coverage_daily", "worst_runs", "judge_cost_daily"}


@pytest.fixture
def seeded(chdb_dsn: str, database_name: str) -> Iterator[ClickHouseStore]:
    store = ClickHouseStore(chdb_dsn, database_name)
    store.open()
    store.insert_scores_sync(make_scores(600))
    store.insert_decisions_sync(
        [DecisionRow(BASE_NS + i, f"{i:032x}", "a1", f"run-{i}", "svc", "agent", "prod", "sampled", 1.0, "", "")
         for i in range(40)]
    )  # fmt: skip
    try:
        yield store
    finally:
        store.close()


def test_every_panel_query_runs_on_the_schema_and_returns_rows(seeded: ClickHouseStore) -> None:
    tables = {row[0] for row in seeded.internal_query(f"SHOW TABLES FROM {seeded.database}")}
    for panel in dashboard_panels():
        for target in panel["targets"]:
            for name in re.findall(r"\bFROM\s+(\w+)", target["rawSql"]):
                assert name in tables, (panel["title"], name)
            rows = seeded.internal_query(grafana_to_sql(target["rawSql"]))
            assert rows, panel["title"]
    listed = json.loads(DASHBOARD.read_text(encoding="utf-8"))["templating"]["list"]
    variables = [variable for variable in listed if variable["type"] == "query"]
    scorers = {"faithfulness", "toxicity", "completeness"}
    expected = {"rule": {"prod", "beta"}, "target": {"run"}, "scorer": scorers}  # the seeded scores are run scores
    assert {variable["name"] for variable in variables} == set(expected)
    for variable in variables:
        assert {r[0] for r in seeded.internal_query(variable["query"])} == expected[variable["name"]]


def test_every_sql_example_in_the_dashboards_doc_runs(seeded: ClickHouseStore) -> None:
    text = (DEPLOY.parent / "docs" / "dashboards.md").read_text(encoding="utf-8")
    examples = re.findall(r"```sql\n(.*?)```", text, re.DOTALL)
    assert len(examples) >= 8
    for sql in examples:
        seeded.internal_query(sql)  # raises on an unknown view, column or function
    # The two undated examples see the seeded rows: every hour of one scorer, three scorers.
    hours = seeded.internal_query(
        f"SELECT uniqExact(toStartOfHour(RunTimestamp)) FROM {seeded.database}.scores WHERE Scorer = 'faithfulness'"
    )[0][0]
    assert len(seeded.internal_query(examples[4])) == hours >= 6
    assert len(seeded.internal_query(examples[6])) == 3


def test_prometheus_scrapes_metrics_by_an_allowed_name_with_the_token_from_a_file() -> None:
    scrape = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    [job] = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["authorization"]["type"] == "Bearer" and "credentials" not in job["authorization"]
    assert job["authorization"]["credentials_file"].startswith("/")
    config = load_config(DEPLOY / "spanscore.yaml", environ={})
    for target in job["static_configs"][0]["targets"]:
        host, port = target.rsplit(":", 1)
        assert int(port) == config.api.port and host in config.api.allowed_hosts, target


def test_alert_rules_use_metrics_and_views_that_exist(seeded: ClickHouseStore) -> None:
    """Prometheus rules name only metrics the service exposes; Grafana rules' SQL runs on the schema."""
    from spanscore.server.prometheus import KINDS

    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text(encoding="utf-8"))
    expressions = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    named = {name.removeprefix("spanscore_") for expr in expressions for name in re.findall(r"spanscore_\w+", expr)}
    assert named and named <= set(KINDS), named - set(KINDS)
    grafana = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "alerting" / "spanscore.yaml").read_text())
    queries = [
        item["model"]["rawSql"]
        for group in grafana["groups"]
        for rule in group["rules"]
        for item in rule["data"]
        if "rawSql" in item["model"]
    ]
    assert queries
    for sql in queries:
        seeded.internal_query(sql.replace("Hour >= now() - INTERVAL 1 HOUR", "1"))


def test_the_shipped_replicas_acknowledge_only_what_outlives_a_pod(tmp_path: Path) -> None:
    """A `spooled` OK is a batch on the pod's disk: on an emptyDir it dies with the pod, so the manifests pin `stored`.

    Every configuration the deployment ships either keeps the spool on storage that outlives the pod (a
    persistent volume) or acknowledges after the insert.
    """
    workload = find("StatefulSet", "spanscore")
    volumes = [*workload["spec"]["template"]["spec"]["volumes"], *workload["spec"]["volumeClaimTemplates"]]
    spool_volume = next(v for v in volumes if v.get("name", v.get("metadata", {}).get("name")) == "data")
    shipped = yaml.safe_load(find("ConfigMap", "spanscore-config")["data"]["spanscore.yaml"])
    path = tmp_path / "k8s.yaml"
    path.write_text(yaml.safe_dump(shipped), encoding="utf-8")
    k8s = load_config(path, environ={})
    if "emptyDir" in spool_volume:
        assert k8s.storage.acknowledge == "stored", "the k8s replicas acknowledge spans kept only on an emptyDir"
    image = load_config(DEPLOY / "spanscore.yaml", environ={"SPANSCORE_STORAGE__DATA_DIR": "/var/lib/spanscore"})
    assert image.storage.acknowledge == "stored"


def _shipped_configs(tmp_path: Path) -> dict[str, Path]:
    """Every config the deployment ships, each as a file spanscore's loader reads."""
    k8s = tmp_path / "k8s.yaml"
    k8s.write_text(find("ConfigMap", "spanscore-config")["data"]["spanscore.yaml"], encoding="utf-8")
    return {"deploy/spanscore.yaml": DEPLOY / "spanscore.yaml", "deploy/k8s/spanscore-config.yaml": k8s}


HEALTHY_RUNS = [
    ("What is 2+2?", "4"),
    ("What is the capital of France?", "Paris."),
    ("List three primary colours.", "- red\n- yellow\n- blue"),
]


def test_the_shipped_rules_pass_healthy_runs(tmp_path: Path) -> None:
    """An operator's first dashboard must not be red for correct answers (#30 item 1).

    The shipped configs replace the default rule with their own ``rules:``; every code scorer they name
    must pass plainly correct short answers, as the default rule does, or red means nothing.
    """
    import spanscore
    from spanscore.scorers import build

    for where, path in _shipped_configs(tmp_path).items():
        for rule in yaml.safe_load(path.read_text(encoding="utf-8")).get("rules", []):
            for entry in rule["scorers"]:
                spec = {"name": entry} if isinstance(entry, str) else dict(entry)
                name = spec.pop("name")
                scorer = build(name, **spec)
                for question, answer in HEALTHY_RUNS:
                    result = scorer.run(spanscore.Run(input=question, output=answer))
                    assert result.status == "ok" and result.score is not None and result.score >= 0.5, (
                        f"{where}: rule {rule['name']!r} scorer {name!r} fails the healthy answer {answer!r} "
                        f"to {question!r}: {result.reason}"
                    )


def test_the_replicas_keep_a_disruption_budget_a_readiness_probe_on_readyz_and_keeper_acls() -> None:
    """#36 item 15: Keeper's nodes closed by a generated credential, one replica down at a time, ready when whole."""
    deployment = find("StatefulSet", "spanscore")
    budget = find("PodDisruptionBudget", "spanscore")
    assert budget["apiVersion"] == "policy/v1"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["maxUnavailable"] == 1 < deployment["spec"]["replicas"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "api"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "api"}
    env = {variable["name"]: variable for variable in container["env"]}
    holder = env["SPANSCORE_FLEET__AUTH_ENV"]["value"]
    assert env[holder]["valueFrom"]["secretKeyRef"] == {"name": "spanscore-secrets", "key": "keeper-auth"}
    example = (K8S / "examples" / "spanscore-secret.yaml").read_text(encoding="utf-8")
    assert '--from-literal=keeper-auth="spanscore:$(openssl rand -hex 32)"' in example


def test_compose_checks_readiness_on_readyz() -> None:
    service = load_yaml(DEPLOY / "compose.yaml")["services"]["spanscore"]
    assert "http://127.0.0.1:4319/readyz" in " ".join(service["healthcheck"]["test"])
