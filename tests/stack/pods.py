"""Run the chart's Jobs and CronJobs as Kubernetes would run their pods, without Kubernetes:
each container's command, args, env and mounted files, inside the built image, with `buildah
run --isolation chroot` on the host network (dev/image run).

What is reproduced, from the pod spec `helm template` renders:
- command + args, the container's workingDir, the pod's runAsUser/runAsGroup;
- env: `value`, and `valueFrom.secretKeyRef` from the Secrets the test provides (a missing
  Secret or key fails the pod, as Kubernetes' CreateContainerConfigError does);
- volumes: a ConfigMap (each key a file, mode 0644), a Secret (each key a file, owned by
  root:fsGroup with the volume's defaultMode, as the kubelet writes them), an emptyDir (an empty
  directory anyone may write, 0777); mounted read-only where the container says so.
Not reproduced: readOnlyRootFilesystem and dropped capabilities (chroot isolation runs as the
user given, in the host's namespaces), resources, probes, and the Job controller's retries.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Pod:
    kind: str  # Job or CronJob
    name: str
    weight: int | None  # helm.sh/hook-weight for a hook Job
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    mounts: tuple[tuple[Path, str, bool], ...]  # host path, container path, read-only
    user: str
    workdir: str
    manifest: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class Ran:
    pod: Pod
    code: int
    out: str
    err: str

    def explain(self) -> str:
        return f"{self.pod.kind} {self.pod.name} ({' '.join(self.pod.argv)}) exited {self.code}\n{self.out}\n{self.err}"


def pods(docs: list[dict[str, Any]], secrets: dict[str, dict[str, str]], root: Path) -> list[Pod]:
    """Every Job and CronJob of the rendered chart, its files materialised under `root`."""
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    found = []
    for doc in docs:
        if doc["kind"] == "Job":
            spec = doc["spec"]["template"]["spec"]
        elif doc["kind"] == "CronJob":
            spec = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        else:
            continue
        weight = (doc["metadata"].get("annotations") or {}).get("helm.sh/hook-weight")
        found.append(_pod(doc, spec, None if weight is None else int(weight), config_maps, secrets, root))
    return found


def _pod(
    doc: dict[str, Any],
    spec: dict[str, Any],
    weight: int | None,
    config_maps: dict[str, dict[str, str]],
    secrets: dict[str, dict[str, str]],
    root: Path,
) -> Pod:
    (container,) = spec["containers"]
    security = spec.get("securityContext", {})
    where = root / doc["metadata"]["name"]
    volumes = {v["name"]: _volume(v, where / v["name"], config_maps, secrets, security) for v in spec["volumes"]}
    mounts = tuple(
        (volumes[m["name"]], m["mountPath"], bool(m.get("readOnly"))) for m in container.get("volumeMounts", [])
    )
    env = tuple((e["name"], _env_value(e, secrets)) for e in container.get("env", []))
    return Pod(
        doc["kind"],
        doc["metadata"]["name"],
        weight,
        tuple(container.get("command", [])) + tuple(container.get("args", [])),
        env,
        mounts,
        f"{security['runAsUser']}:{security['runAsGroup']}",
        container.get("workingDir", "/"),
        doc,
    )


def _env_value(env: dict[str, Any], secrets: dict[str, dict[str, str]]) -> str:
    if "value" in env:
        return str(env["value"])
    ref = env["valueFrom"]["secretKeyRef"]
    assert ref["key"] in secrets.get(ref["name"], {}), f"env {env['name']}: no Secret {ref['name']}/{ref['key']}"
    return secrets[ref["name"]][ref["key"]]


def _volume(
    volume: dict[str, Any],
    path: Path,
    config_maps: dict[str, dict[str, str]],
    secrets: dict[str, dict[str, str]],
    security: dict[str, Any],
) -> Path:
    path.mkdir(parents=True)
    if "configMap" in volume:
        for key, text in config_maps[volume["configMap"]["name"]].items():
            (path / key).write_text(text)
            (path / key).chmod(0o644)
    elif "secret" in volume:
        name = volume["secret"]["secretName"]
        assert name in secrets, f"volume {volume['name']}: no Secret {name}"
        for key, text in secrets[name].items():
            (path / key).write_text(text)
            os.chown(path / key, 0, int(security.get("fsGroup", 0)))
            (path / key).chmod(int(volume["secret"].get("defaultMode", 0o644)))
    else:
        assert "emptyDir" in volume, f"volume {volume['name']}: only configMap, secret and emptyDir are run here"
    path.chmod(0o777 if "emptyDir" in volume else 0o755)
    return path


def run(image: str, pod: Pod, timeout_s: float = 600) -> Ran:
    """The pod's container, once, in a throwaway container of `image`; its exit code and output."""
    options = ["--user", pod.user, "--workingdir", pod.workdir]
    for name, value in pod.env:
        options += ["--env", f"{name}={value}"]
    for host, target, read_only in pod.mounts:
        options += ["-v", f"{host}:{target}:{'ro' if read_only else 'rw'}"]
    done = subprocess.run(
        [str(REPO / "dev" / "image"), "run", *options, "--", *pod.argv],
        env={**os.environ, "HEPHAESTUS_IMAGE": image},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return Ran(pod, done.returncode, done.stdout, done.stderr)
