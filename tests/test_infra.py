"""infra/ cannot run a real cluster here (no Docker daemon, no Kubernetes), so its files are held to what can
be checked: the `ray up` config passes Ray's own validation, the KubeRay manifests are the objects the
operator expects and run a `lark batch` command line that this CLI accepts, and every image runs the
pinned Ray and torch versions of pyproject.toml."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import yaml
from ray.autoscaler._private.commands import prepare_config
from ray.autoscaler._private.util import validate_config

from orchestrator.cli import main

INFRA = Path(__file__).resolve().parents[1] / "infra"
PYPROJECT = tomllib.loads((INFRA.parent / "pyproject.toml").read_text())


def pinned(package: str) -> str:
    [spec] = [d for d in PYPROJECT["project"]["dependencies"] if re.match(rf"{package}\s*==", d)]
    return spec.split("==")[1].split()[0]


def accepts(command: str, root: Path) -> None:
    """Parse a `lark ...` command line with this CLI (unknown options or arguments raise), its /data volume
    standing in as `root`."""
    (root / "tasks").mkdir(exist_ok=True)
    words = shlex.split(command.replace("/data/", f"{root}/"))
    assert words[0] == "lark"
    with main.make_context("lark", words[1:]) as context:
        sub = main.get_command(context, words[1])
        sub.make_context(words[1], words[2:], parent=context)


def test_the_ray_up_config_passes_rays_validation():
    config = prepare_config(yaml.safe_load((INFRA / "ray-cluster.yaml").read_text()))
    validate_config(config)
    assert config["docker"]["image"].endswith(":0.1.0")


def test_the_kuberay_manifest_runs_lark_batch_on_the_lark_image(tmp_path):
    docs = {d["kind"]: d for d in yaml.safe_load_all((INFRA / "kuberay.yaml").read_text())}
    cluster, job = docs["RayCluster"], docs["RayJob"]
    assert cluster["apiVersion"] == job["apiVersion"] == "ray.io/v1"
    assert cluster["spec"]["rayVersion"] == pinned("ray")
    groups = [cluster["spec"]["headGroupSpec"], *cluster["spec"]["workerGroupSpecs"]]
    images = {c["image"] for g in groups for c in g["template"]["spec"]["containers"]}
    assert len(images) == 1
    assert job["spec"]["clusterSelector"]["ray.io/cluster"] == cluster["metadata"]["name"]
    accepts(job["spec"]["entrypoint"], tmp_path)
    claims = {d["metadata"]["name"] for d in yaml.safe_load_all((INFRA / "kuberay.yaml").read_text())
              if d["kind"] == "PersistentVolumeClaim"}
    used = {v["persistentVolumeClaim"]["claimName"] for g in groups for v in g["template"]["spec"]["volumes"]
            if "persistentVolumeClaim" in v}
    assert used <= claims


def test_the_image_installs_the_pinned_ray_and_torch():
    dockerfile = (INFRA / "Dockerfile").read_text()
    assert f"torch=={pinned('torch')}" in dockerfile
    assert f'"ray[default]=={pinned("ray")}"' in dockerfile


def test_the_documented_batch_commands_are_accepted(tmp_path):
    text = (INFRA / "ray-cluster.yaml").read_text() + (INFRA / "README.md").read_text()
    commands = re.findall(r"'(lark batch [^']*)'", text)
    assert commands
    for command in commands:
        accepts(command, tmp_path)


def test_the_kuberay_manifest_runs_lark_serve_on_the_cluster(tmp_path):
    """The service's Deployment runs the lark image with a `lark serve` command line this CLI accepts, bound
    off loopback with a token from a secret, its obligations on the RayCluster's head (`--address`)."""
    docs = list(yaml.safe_load_all((INFRA / "kuberay.yaml").read_text()))
    cluster = next(d for d in docs if d["kind"] == "RayCluster")
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "lark-serve")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert container["image"] == head["image"]
    command = container["command"]
    accepts(shlex.join(command), tmp_path)
    assert command[command.index("--address") + 1] == f"{cluster['metadata']['name']}-head-svc:6379"
    assert any(e["name"] == "LARK_TOKEN" and "secretKeyRef" in e.get("valueFrom", {}) for e in container["env"])
    claims = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {v["persistentVolumeClaim"]["claimName"] for v in volumes} <= claims
