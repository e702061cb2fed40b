"""The shipped Kubernetes deployment acknowledges a span only once it is kept somewhere that outlives the pod.

With ``acknowledge: spooled`` an OK means "fsynced in the spool". On an emptyDir (or the container's own
filesystem) the spool dies with the pod, and so do the spans it acknowledged. This reads the manifests
as Kubernetes would: each workload that runs ``spanscore serve``, the config its ConfigMap mounts,
loaded by spanscore's own loader with the image's and the container's environment, the spool directory
that config resolves to, the volume mounted over it, and whether that volume is a claim (it outlives
the pod) or not. It checks the checker too, on the shipped manifests changed in memory.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from spanscore.config import load_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")


def shipped() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc)
    return docs


def image_environment() -> dict[str, str]:
    """The SPANSCORE_* variables the image sets (the Dockerfile's ENV), which the pod inherits."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    return dict(re.findall(r"\b(SPANSCORE_[A-Z0-9_]+)=(\S+)", text))


def _mount_over(path: str, mounts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The volume mount a path lives on: the longest mountPath that contains it."""
    target = PurePosixPath(path)
    holding = [
        m for m in mounts if target == PurePosixPath(m["mountPath"]) or PurePosixPath(m["mountPath"]) in target.parents
    ]
    return max(holding, key=lambda m: len(m["mountPath"]), default=None)


def _served_config(container: dict[str, Any], pod: dict[str, Any], docs: list[dict[str, Any]], tmp: Path) -> Any:
    """The config ``spanscore serve -c FILE`` loads in this container, or None when it does not serve."""
    args = container.get("args", [])
    if not args or args[0] != "serve" or "-c" not in args:
        return None
    config_path = args[args.index("-c") + 1]
    mount = _mount_over(config_path, container.get("volumeMounts", []))
    assert mount is not None, f"{container['name']}: nothing is mounted over its config file {config_path}"
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    config_map = next(
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == volume["configMap"]["name"]
    )
    local = tmp / f"{container['name']}.yaml"
    local.write_text(config_map["data"][PurePosixPath(config_path).relative_to(mount["mountPath"]).as_posix()])
    environ = {**image_environment(), **{e["name"]: e["value"] for e in container.get("env", []) if "value" in e}}
    # Secret-held settings do not decide where the spool is; the fleet's Keeper must be some address to load.
    environ |= {e["name"]: "keeper:9181" for e in container.get("env", []) if e["name"] == "SPANSCORE_FLEET__KEEPER"}
    return load_config(local, environ=environ)


def spooled_acknowledgements_that_die_with_a_pod(docs: list[dict[str, Any]], tmp: Path) -> list[str]:
    """Each served container that acknowledges on spool while the spool's volume does not outlive its pod."""
    found = []
    for workload in (d for d in docs if d["kind"] in WORKLOADS):
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        claims = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for container in pod["containers"]:
            config = _served_config(container, pod, docs, tmp)
            if config is None or config.storage.acknowledge != "spooled":
                continue
            spool = config.storage.spool_dir
            mount = _mount_over(spool, container.get("volumeMounts", []))
            if mount is None:
                found.append(f"{name} acknowledges `spooled` with its spool {spool} on the container's own filesystem")
                continue
            volume = next((v for v in pod.get("volumes", []) if v["name"] == mount["name"]), {})
            if mount["name"] in claims:
                continue
            if "persistentVolumeClaim" in volume:
                if workload["kind"] != "StatefulSet" and workload["spec"].get("replicas", 1) > 1:
                    found.append(f"{name} acknowledges `spooled` with one claim's spool {spool} shared by its replicas")
                continue
            kind = next((k for k in volume if k != "name"), "no volume")
            found.append(
                f"{name} acknowledges `spooled` with its spool {spool} on volume {mount['name']!r} ({kind}), "
                "which does not outlive the pod"
            )
    return found


def spools_that_die_with_a_pod(docs: list[dict[str, Any]], tmp: Path) -> list[str]:
    """Each served container whose spool is not on a claim of its own, whatever it acknowledges.

    Under ``acknowledge: stored`` the spool still holds what was acknowledged after a failed insert, and the
    scores and decisions spooled on their way to the store: a replaced pod must find them to replay them.
    """
    found = []
    for workload in (d for d in docs if d["kind"] in WORKLOADS):
        name = f"{workload['kind']}/{workload['metadata']['name']}"
        pod = workload["spec"]["template"]["spec"]
        claims = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for container in pod["containers"]:
            config = _served_config(container, pod, docs, tmp)
            if config is None:
                continue
            spool = config.storage.spool_dir
            mount = _mount_over(spool, container.get("volumeMounts", []))
            if mount is None:
                found.append(f"{name}: its spool {spool} is on the container's own filesystem")
            elif workload["kind"] != "StatefulSet" or mount["name"] not in claims:
                volume = next((v for v in pod.get("volumes", []) if v["name"] == mount["name"]), {})
                kind = next((k for k in volume if k != "name"), "no volume")
                found.append(f"{name}: its spool {spool} is on volume {mount['name']!r} ({kind}), not a claim per pod")
            elif workload["spec"].get("persistentVolumeClaimRetentionPolicy", {}).get("whenScaled") == "Delete":
                found.append(f"{name}: scaling down deletes the claim holding its spool {spool} before it is replayed")
    return found


def _with_acknowledge(docs: list[dict[str, Any]], line: str) -> list[dict[str, Any]]:
    """The manifests with the ConfigMap's ``acknowledge:`` line replaced by ``line`` ("" drops it: the default)."""
    changed = copy.deepcopy(docs)
    config_map = next(d for d in changed if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spanscore-config")
    text = config_map["data"]["spanscore.yaml"]
    config_map["data"]["spanscore.yaml"] = re.sub(r"(?m)^(\s*)acknowledge: \w+$", rf"\g<1>{line}", text, count=1)
    assert config_map["data"]["spanscore.yaml"] != text, "the shipped ConfigMap no longer sets storage.acknowledge"
    return changed


def _as_deployment_on_an_empty_dir(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spanscore StatefulSet as the Deployment it was before #36: its spool volume an emptyDir per pod."""
    changed = copy.deepcopy(docs)
    workload = next(d for d in changed if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "spanscore")
    workload["kind"] = "Deployment"
    for key in ("serviceName", "podManagementPolicy", "updateStrategy", "persistentVolumeClaimRetentionPolicy"):
        workload["spec"].pop(key, None)
    workload["spec"].pop("volumeClaimTemplates")
    workload["spec"]["template"]["spec"]["volumes"].append({"name": "data", "emptyDir": {"sizeLimit": "2Gi"}})
    return changed


def _with_claims_deleted_on_scale_down(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    changed = copy.deepcopy(docs)
    workload = next(d for d in changed if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "spanscore")
    workload["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Retain", "whenScaled": "Delete"}
    return changed


def test_the_shipped_deployment_acknowledges_nothing_it_keeps_only_on_an_ephemeral_volume(tmp_path: Path) -> None:
    docs = shipped()
    served = [w for w in docs if w["kind"] in WORKLOADS and w["metadata"]["name"] == "spanscore"]
    assert served, "no spanscore workload in deploy/k8s"
    assert spooled_acknowledgements_that_die_with_a_pod(docs, tmp_path) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda docs: _as_deployment_on_an_empty_dir(_with_acknowledge(docs, "acknowledge: spooled")),
            r"Deployment/spanscore .* 'data' \(emptyDir\)",
        ),
        (
            lambda docs: _as_deployment_on_an_empty_dir(_with_acknowledge(docs, "")),
            r"Deployment/spanscore .* 'data' \(emptyDir\)",
        ),
        (lambda docs: _with_acknowledge(docs, "acknowledge: spooled"), None),
    ],
    ids=["spooled-on-emptydir", "default-on-emptydir", "spooled-on-a-claim-per-pod"],
)
def test_the_check_tells_an_ephemeral_spool_from_a_claim(tmp_path: Path, change: Any, problem: str | None) -> None:
    found = spooled_acknowledgements_that_die_with_a_pod(change(shipped()), tmp_path)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and re.search(problem, found[0]), found


def test_every_shipped_spool_is_on_a_volume_that_outlives_its_pod(tmp_path: Path) -> None:
    """#36 item 15: a replaced pod replays its predecessor's spool only if the spool is on that pod's own claim."""
    assert spools_that_die_with_a_pod(shipped(), tmp_path) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            _as_deployment_on_an_empty_dir,
            r"^Deployment/spanscore: its spool /var/lib/spanscore/spool is on volume 'data'",
        ),
        (_with_claims_deleted_on_scale_down, r"^StatefulSet/spanscore: scaling down deletes the claim"),
    ],
    ids=["deployment-on-emptydir", "claims-deleted-on-scale-down"],
)
def test_the_spool_check_bites(tmp_path: Path, change: Any, problem: str) -> None:
    found = spools_that_die_with_a_pod(change(shipped()), tmp_path)
    assert len(found) == 1 and re.search(problem, found[0]), found


def test_a_replaced_pod_keeps_its_name_its_claim_and_its_fleet_name() -> None:
    """The spool is replayed by the pod that mounts its claim; only a StatefulSet gives that pod the same name."""
    workload = next(d for d in shipped() if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "spanscore")
    headless = next(
        d for d in shipped() if d["kind"] == "Service" and d["metadata"]["name"] == workload["spec"]["serviceName"]
    )
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"].items() <= workload["spec"]["template"]["metadata"]["labels"].items()
    container = workload["spec"]["template"]["spec"]["containers"][0]
    replica = next(e for e in container["env"] if e["name"] == "SPANSCORE_FLEET__REPLICA")
    assert replica["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    (claim,) = workload["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
