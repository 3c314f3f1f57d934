"""GPU check of the start methods (issue 13, item 4): run it on a machine with a CUDA GPU.

    python benchmarks/gpu_check.py            # needs palaestra (a wheel will do) and torch
    python benchmarks/gpu_check.py --cpu      # the same runs on the CPU (no CUDA case)
    python benchmarks/gpu_check.py --workers 1 4 --throughput-steps 20000

Self-contained: it writes its plug-in modules, run files and runtime config into a temporary
directory and runs ``python -m palaestra experiment-start`` there, once per case:

1. ``brain-on-cuda-wN``: a torch Brain that learns on the GPU (a linear softmax policy,
   REINFORCE with a baseline, on a small "say the sign" task) with N CPU Muscles (``--workers``,
   default 2; each N a case), start_method auto.
   Nothing touches CUDA in the executor, so the processes fork; the Brain initialises CUDA in
   its own process. Passes if the run finishes, the Brain's parameters were on ``cuda``, the
   Muscles' on the CPU, the Brain updated the policy, and the last episodes score better than
   the first.
2. ``brain-on-cuda-spawn``: the same with start_method spawn.
3. ``cuda-at-import``: the same Brain and Muscles from a plug-in module that runs
   ``torch.zeros(1, device="cuda")`` when it is imported, start_method auto. Passes if the run
   finishes, the executor logged why it chose forkserver, and every Brain and Muscle process
   was forked by multiprocessing's fork server.
4. ``cuda-at-import-fork`` (the control): case 3 with start_method fork must fail with torch's
   "Cannot re-initialize CUDA in forked subprocess".
5. ``--throughput-steps S``: one worker plays S steps (episodes of 32) with the Brain on the GPU,
   then the same run with the Brain on the CPU; steps/s of each (steady: the episodes table's
   first start to last end; and over the command's wall time) and their ratio. Passes if both
   finish with one ``world_states`` row per step.

It prints PASS or FAIL per case (with the run's stderr on a failure) and exits 1 if one failed.
Without CUDA it prints SKIP and exits 0 (``--cpu`` runs cases 1 and 2 on the CPU instead).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

PLUGINS = '''
"""The gpu_check plug-ins: a "say the sign" environment, a REINFORCE Brain on a device."""

from __future__ import annotations

import io
import json
import multiprocessing
import os

import numpy as np
import torch

from palaestra.agent import Brain, Muscle, Objective
from palaestra.core.information import ActuatorInformation, RewardInformation, SensorInformation
from palaestra.core.spaces import Box, Discrete
from palaestra.environment import Environment


def record(path, **items):
    """Append one JSON line about this process to ``path``."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            parent_cmdline = f.read().replace(b"\\0", b" ").decode(errors="replace")
    except OSError:
        parent_cmdline = ""
    line = json.dumps({
        "pid": os.getpid(),
        "ppid": parent,
        "parent_cmdline": parent_cmdline,
        "method": multiprocessing.get_start_method(allow_none=True) or "fork",
        **items,
    })
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\\n")


class SignEnvironment(Environment):
    """Each step shows x in [-1, 1]; action 1 for x > 0 and 0 otherwise earns reward 1."""

    def __init__(self, uid=None, broker_uri=None, seed=0, steps=32):
        super().__init__(uid, broker_uri, seed)
        self.steps = int(steps)
        self.t = 0
        self.x = 0.0

    def _sensors(self):
        self.x = float(self.rng.uniform(-1.0, 1.0))
        value = np.array([self.x], dtype=np.float32)
        return [SensorInformation(value, Box(-1, 1, shape=(1,)), "x")]

    def start_environment(self):
        self.t = 0
        return self._sensors(), [ActuatorInformation(0, Discrete(2), "sign")]

    def update(self, actuators):
        reward = float(int(actuators[0].value) == int(self.x > 0))
        self.t += 1
        rewards = [RewardInformation(reward, Box(0, 1, shape=()), "right")]
        return self._sensors(), rewards, self.t >= self.steps


class LastReward(Objective):
    def internal_reward(self, memory, **kwargs):
        return float(sum(memory.latest_rewards()))


def weights_bytes(model):
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buffer)
    return buffer.getvalue()


class ReinforceBrain(Brain):
    """A linear softmax policy learned by REINFORCE with a mean baseline, on ``device``."""

    def __init__(self, record, device="cuda", lr=0.5):
        self.record = record
        self.device_name = device
        self.lr = float(lr)
        self.episodes = {}
        self.returns = []
        self.updates = 0

    def setup(self):
        self.device = torch.device(self.device_name)  # the GPU is touched here, not at import
        torch.manual_seed(self.seed)
        self.model = torch.nn.Linear(1, 2).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.lr)

    def thinking(self, muscle_id, data_from_muscle):
        if data_from_muscle is None:
            return weights_bytes(self.model) if self.updates == 0 else None
        rows = self.memory.muscle_memory(muscle_id)
        episode = self.episodes.setdefault(muscle_id, [])
        episode.append((*data_from_muscle, float(rows.objective[-1])))
        if not rows.dones[-1]:
            return None
        del self.episodes[muscle_id]
        obs = torch.tensor([[o] for o, _, _ in episode], dtype=torch.float32, device=self.device)
        actions = torch.tensor([a for _, a, _ in episode], device=self.device)
        rewards = torch.tensor([r for _, _, r in episode], dtype=torch.float32, device=self.device)
        logp = torch.log_softmax(self.model(obs), -1).gather(1, actions[:, None]).squeeze(1)
        loss = -((rewards - rewards.mean()) * logp).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        self.returns.append(float(rewards.sum()))
        return weights_bytes(self.model)

    def store(self):  # called after every episode: the check reads the last record
        record(
            self.record,
            role="brain",
            device=str(next(self.model.parameters()).device),
            updates=self.updates,
            returns=self.returns,
            cuda_initialised=torch.cuda.is_initialized(),
        )


class ReinforceMuscle(Muscle):
    """Samples actions with the newest policy from its Brain, on the CPU."""

    def __init__(self, record):
        self.record = record
        self.model = torch.nn.Linear(1, 2)
        self.recorded = False

    def update(self, update):
        self.model.load_state_dict(torch.load(io.BytesIO(update), weights_only=True))

    def propose_actions(self, sensors, actuators_available):
        if not self.recorded:
            self.recorded = True
            record(self.record, role="muscle", device=str(next(self.model.parameters()).device))
        x = float(np.asarray(sensors[0].value).reshape(-1)[0])
        with torch.no_grad():
            probs = torch.softmax(self.model(torch.tensor([[x]])), -1)[0].numpy()
        action = int(self.rng.random() < probs[1])
        actuators_available[0](action)
        return actuators_available, (x, action)
'''

AT_IMPORT = '''
"""A plug-in module that touches CUDA when it is imported (what a GPU agent module may do)."""

import torch

from gpu_plugins import LastReward, ReinforceBrain, ReinforceMuscle, SignEnvironment

ON_GPU = torch.zeros(1, device="cuda")

__all__ = ["LastReward", "ReinforceBrain", "ReinforceMuscle", "SignEnvironment"]
'''

RUN = """
uid: gpu-check-{case}
experiment_uid: gpu-check
seed: 7
version: "0.1"
schedule:
  - train:
      environments:
        - environment:
            name: {module}:SignEnvironment
            uid: sign
            params: {{steps: 32}}
      agents:
        - name: learner
          brain: {{name: {module}:ReinforceBrain, params: {{record: {record}, device: {device}}}}}
          muscle: {{name: {module}:ReinforceMuscle, params: {{record: {record}}}}}
          objective: {{name: {module}:LastReward, params: {{}}}}
          sensors: [sign.x]
          actuators: [sign.sign]
      simulation:
        name: palaestra.simulation:Vanilla
        conditions:
          - name: palaestra.simulation:VanillaSimControllerTerminationCondition
            params: {{}}
      phase_config: {{mode: train, worker: {workers}, episodes: {episodes}}}
run_config:
  condition:
    name: palaestra.experiment:VanillaRunGovernorTerminationCondition
    params: {{}}
"""

WHY = "CUDA is initialised in the executor"
FORKED_CUDA = "Cannot re-initialize CUDA in forked subprocess"


@dataclass(frozen=True)
class Case:
    name: str
    module: str
    start_method: str
    expect_failure: bool = False
    workers: int = 2


def cases(workers: list[int]) -> list[Case]:
    """The learning case once per worker count, then the start-method cases."""
    return [
        *(Case(f"brain-on-cuda-w{n}", "gpu_plugins", "auto", workers=n) for n in workers),
        Case("brain-on-cuda-spawn", "gpu_plugins", "spawn"),
        Case("cuda-at-import", "gpu_at_import", "auto"),
        Case("cuda-at-import-fork", "gpu_at_import", "fork", expect_failure=True),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="run cases 1 and 2 on the CPU")
    parser.add_argument("--episodes", type=int, default=20, help="episodes per worker")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--workers", type=int, nargs="+", default=[2], help="learning cases")
    parser.add_argument(
        "--throughput-steps", type=int, default=0, help="steps/s of an S-step run, GPU vs CPU"
    )
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return 0
    if not args.cpu and not torch.cuda.is_available():
        print(f"SKIP: no CUDA device (torch {torch.__version__}); --cpu runs the CPU cases")
        return 0
    device = "cpu" if args.cpu else "cuda"
    print(f"torch {torch.__version__}, device {device}", end="")
    print(f" ({torch.cuda.get_device_name(0)})" if device == "cuda" else "")
    chosen = cases(args.workers)
    if args.cpu:
        chosen = [c for c in chosen if c.module == "gpu_plugins"]
    work = Path(tempfile.mkdtemp(prefix="palaestra-gpu-check-"))
    (work / "gpu_plugins.py").write_text(PLUGINS)
    (work / "gpu_at_import.py").write_text(AT_IMPORT)
    failed = 0
    for case in chosen:
        ok, detail, seconds = run_case(work, case, device, args.episodes)
        print(f"{'PASS' if ok else 'FAIL'} {case.name} ({seconds:.1f} s): {detail}", flush=True)
        failed += not ok
    total = len(chosen)
    if args.throughput_steps:
        ok, detail = throughput(work, device, args.throughput_steps)
        print(f"{'PASS' if ok else 'FAIL'} throughput: {detail}", flush=True)
        failed += not ok
        total += 1
    if args.keep:
        print(f"kept {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    print(f"{total - failed}/{total} passed")
    return 1 if failed else 0


def throughput(work: Path, device: str, steps: int) -> tuple[bool, str]:
    """Steps/s of one worker's ``steps``-step run with the Brain on ``device``, then on the
    CPU (the same run); (passed, what was seen)."""
    episodes = max(1, steps // 32)
    rates = {}
    for where in dict.fromkeys([device, "cpu"]):
        case = Case(f"throughput-{where}", "gpu_plugins", "auto", workers=1)
        folder, proc, seconds = _start(work, case, where, episodes)
        if proc is None or proc.returncode != 0:
            return False, f"the {where} run failed" + (_tail(proc) if proc else ": timed out")
        with sqlite3.connect(folder / "palaestra.db") as conn:
            total, first, last = conn.execute(
                "select sum(steps), min(started_at), max(ended_at) from episodes"
            ).fetchone()
            worlds = conn.execute("select count(*) from world_states").fetchone()[0]
        if worlds != total or total != 32 * episodes:
            return False, f"the {where} run stored {worlds} steps of {32 * episodes}"
        span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).total_seconds()
        rates[where] = (total / span, total / seconds)
    text = ", ".join(
        f"Brain on {where}: {steady:,.0f} steps/s steady, {wall:,.0f} over the wall"
        for where, (steady, wall) in rates.items()
    )
    if len(rates) == 2:
        text += f"; {device}/cpu {rates[device][0] / rates['cpu'][0]:.2f}"
    return True, f"{32 * episodes} steps, 1 worker: {text}"


def _start(
    work: Path, case: Case, device: str, episodes: int
) -> tuple[Path, subprocess.CompletedProcess[str] | None, float]:
    """Write the case's run file and runtime config and run it; (folder, process or None if
    it timed out, seconds)."""
    folder = work / case.name
    folder.mkdir()
    record = folder / "processes.jsonl"
    run_file = folder / "run.yml"
    run_file.write_text(
        RUN.format(
            case=case.name,
            module=case.module,
            record=json.dumps(str(record)),
            device=device,
            episodes=episodes,
            workers=case.workers,
        )
    )
    (folder / "runtime.yaml").write_text(
        f"store_uri: sqlite:///{folder / 'palaestra.db'}\nlog_level: WARNING\n"
        f"start_method: {case.start_method}\n"
    )
    env = dict(os.environ)
    env.pop("PALAESTRA_START_METHOD", None)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(work), *_source(), env.get("PYTHONPATH")])
    )
    began = time.monotonic()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "palaestra",
                "-c",
                "runtime.yaml",
                "experiment-start",
                "run.yml",
            ],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return folder, None, time.monotonic() - began
    return folder, proc, time.monotonic() - began


def run_case(work: Path, case: Case, device: str, episodes: int) -> tuple[bool, str, float]:
    """Run one case; (passed, what was seen, seconds)."""
    folder, proc, seconds = _start(work, case, device, episodes)
    record = folder / "processes.jsonl"
    if proc is None:
        return False, "did not end within 600 s", seconds
    if case.expect_failure:
        if proc.returncode == 1 and FORKED_CUDA in proc.stderr:
            return True, f"failed as expected with fork: {FORKED_CUDA}", seconds
        return (
            False,
            f"exit {proc.returncode}, expected 1 with {FORKED_CUDA!r}" + _tail(proc),
            seconds,
        )
    if proc.returncode != 0:
        return False, f"exit {proc.returncode}" + _tail(proc), seconds
    records = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    problems = _check(case, records, proc, device)
    brain = next((r for r in reversed(records) if r["role"] == "brain"), {})
    seen = (
        f"children by {sorted({r['method'] for r in records})}, Brain on {brain.get('device')}"
        f" with {brain.get('updates')} updates, mean return of the first/last 5 episodes "
        f"{_mean(brain.get('returns', [])[:5]):.1f}/{_mean(brain.get('returns', [])[-5:]):.1f}"
    )
    if problems:
        return False, "; ".join(problems) + f" ({seen})" + _tail(proc), seconds
    return True, seen, seconds


def _check(
    case: Case, records: list[dict], proc: subprocess.CompletedProcess[str], device: str
) -> list[str]:
    problems = []
    brains = [r for r in records if r["role"] == "brain"]
    muscles = [r for r in records if r["role"] == "muscle"]
    if not brains or len({b["pid"] for b in brains}) != 1 or len(muscles) != case.workers:
        return [
            f"expected 1 Brain and {case.workers} Muscles to report, got {brains} and {muscles}"
        ]
    brain = brains[-1]
    if not brain["device"].startswith(device):
        problems.append(f"the Brain's parameters were on {brain['device']}, not {device}")
    if any(m["device"] != "cpu" for m in muscles):
        problems.append("a Muscle's parameters were not on the CPU")
    returns = brain["returns"]
    if brain["updates"] < 10 or _mean(returns[-5:]) <= _mean(returns[:5]):
        problems.append("the Brain did not learn (too few updates, or no better at the end)")
    if case.module == "gpu_at_import":
        if WHY not in proc.stderr:
            problems.append(f"no log line saying why ({WHY!r}) on stderr")
        forked_by_server = all(
            r["method"] == "forkserver" and "multiprocessing.forkserver" in r["parent_cmdline"]
            for r in records
        )
        if not forked_by_server:
            problems.append("not every Brain and Muscle was forked by the fork server")
    elif case.start_method != "auto" and any(r["method"] != case.start_method for r in records):
        problems.append(f"a process did not start by {case.start_method}")
    return problems


def _source() -> list[str]:
    """The checkout this script sits in, if palaestra is not installed."""
    root = Path(__file__).resolve().parents[1]
    return [str(root)] if (root / "palaestra" / "__init__.py").exists() else []


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return "\n--- stderr (end) ---\n" + proc.stderr[-4000:]


if __name__ == "__main__":
    sys.exit(main())
