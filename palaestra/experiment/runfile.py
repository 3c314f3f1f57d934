"""The run-file loader: palaestrAI-format YAML run files to a validated :class:`RunSpec`.

A run file names an experiment run (``uid``, ``experiment_uid``, ``seed``, ``version``), its
``schedule`` of phases and the run's termination ``run_config``. Each phase inherits what it
does not set from the phase before it: ``simulation`` and ``phase_config`` are merged key by
key, ``environments`` and ``agents`` are replaced whole. Every error is a
:class:`~palaestra.core.errors.RunFileError` with the file, the line and the key path.
"""

from __future__ import annotations

import difflib
import errno
import inspect
import os
import sys
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, NoReturn

import msgspec
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from palaestra.core.description.loading import import_failure, load_class
from palaestra.core.description.specs import (
    BRAIN_MEMORY,
    COUNT_MAX,
    ENVS_PER_WORKER_MAX,
    MUSCLE_MEMORY,
    SEED_MAX,
    UPDATE_LAG_ASYNC,
    AgentSpec,
    ClassSpec,
    EnvironmentSpec,
    LoadSpec,
    Mode,
    PhaseConfig,
    PhaseSpec,
    RunSpec,
    SimulationSpec,
)
from palaestra.core.errors import PluginLoadError, RunFileError, did_you_mean
from palaestra.core.supervision.start_methods import AUTO
from palaestra.core.turns import RoundRobin
from palaestra.environment.world import SUPPLIED
from palaestra.experiment.probe import (
    DEFAULT_PROBE_TIMEOUT,
    EnvironmentIds,
    InvalidEnvironmentError,
)
from palaestra.experiment.runfile_evaluation import (
    check_evaluation_condition,
    evaluations_not_inherited,
    is_evaluation_condition,
    refuse_in_simulation,
    sets_no_episodes,
    without_caps,
)
from palaestra.experiment.runfile_memory import memory_limits
from palaestra.experiment.runfile_objective import (
    is_objective_condition,
    phase_rules,
    with_objective_stops,
    with_phase_stops,
)
from palaestra.experiment.runfile_placement import agent_resources, placement_spec
from palaestra.experiment.runfile_record import RECORD_ALL, dump_policy, record_every
from palaestra.experiment.runfile_replay import replay_sources
from palaestra.experiment.runfile_schema import (
    Node,
    as_bool,
    as_class_name,
    as_int,
    as_list,
    as_mapping,
    as_name,
    as_params,
    describe,
    locate,
    optional,
)
from palaestra.experiment.runfile_turns import check_turns
from palaestra.simulation.controller import params_problems as simulation_params_problems

__all__ = ["load_run_file", "load_run_text"]

_TOP_KEYS = ("uid", "experiment_uid", "seed", "version", "schedule", "run_config")
_TOP_REQUIRED = ("uid", "seed", "version", "schedule")
_PHASE_KEYS = ("environments", "agents", "simulation", "phase_config")
_MERGED_PHASE_KEYS = frozenset({"simulation", "phase_config"})
_ENV_ITEM_KEYS = ("environment", "reward", "state_transformer")
_ENV_KEYS = ("name", "uid", "params")
_AGENT_REQUIRED = ("name", "brain", "muscle", "objective", "sensors", "actuators")
_AGENT_KEYS = (
    *_AGENT_REQUIRED,
    "load",
    "replay",
    "brain_memory",
    "muscle_memory",
    "filters",
    "dump",
    "hot_reload",
    "resources",
)
_LOAD_KEYS = ("agent", "experiment_run", "phase", "strict")
_LOAD_UNSUPPORTED = ("instance", "mode", "repeat", "sensors", "actuators")
_CLASS_KEYS = ("name", "params")
_RUN_CONFIG_KEYS = ("condition", "placement")
_SIMULATION_KEYS = ("name", "conditions", "params")
_PHASE_CONFIG_KEYS = (
    "mode",
    "worker",
    "episodes",
    "update_lag",
    "record",
    "evaluate_every",
    "store_raw_actuators",
    "step_rate",
    "envs_per_worker",
)
_MODES: tuple[Mode, ...] = ("train", "test")
_SEED_WHY = " (2^63 - 1, the largest integer the store keeps)"
_DEFAULT_RUN_CONDITION = "palaestra.experiment:VanillaRunGovernorTerminationCondition"
_BASE_CLASSES = MappingProxyType(
    {
        "brain": "palaestra.agent.brain:Brain",
        "muscle": "palaestra.agent.muscle:Muscle",
        "objective": "palaestra.agent.objective:Objective",
        "environment": "palaestra.environment.environment:Environment",
        "filter": "palaestra.agent.filter:Filter",
    }
)

_BUILT_WITH_PARAMS = ("brain", "muscle", "objective", "filter")
"""The roles whose plug-ins are built as ``Class(**params)`` and nothing else: their params
are checked against the constructor's signature when the run file is read."""

_NOT_AWAITED = MappingProxyType(
    {
        "brain": (
            "setup",
            "thinking",
            "thinking_batch",
            "store",
            "load",
            "pretrain",
            "teardown",
            "evaluate_rollouts",
        ),
        "muscle": ("setup", "propose_actions", "update", "reset", "teardown"),
        "objective": ("internal_reward",),
        "environment": ("update_batch",),
        "filter": (
            "setup",
            "setup_brain",
            "setup_muscle",
            "muscle_pre_process",
            "muscle_post_process",
            "brain_pre_process",
            "brain_post_process",
        ),
    }
)
"""The methods of each role that palaestra calls without awaiting (an Environment's
``start_environment``, ``update``, ``reset`` and ``shutdown`` may be ``async def``)."""
AWAITED_HINT = (
    "palaestra awaits only an Environment's start_environment, update, reset and shutdown; "
    "make this method a plain def."
)


def load_run_file(
    path: str | os.PathLike[str],
    *,
    check_classes: bool = True,
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
    start_method: str = AUTO,
) -> RunSpec:
    """Read and validate the run file ``path`` (:data:`STDIN`: standard input), kept as given
    in ``RunSpec.path`` and in error messages; the other arguments are :func:`load_run_text`'s.

    Raises:
        RunFileError: The file cannot be read or is not a valid run file.
    """
    shown = os.fsdecode(path)
    try:
        if shown == STDIN:
            shown, text = STDIN_NAME, _standard_input()
        else:
            with open(shown, encoding="utf-8-sig") as file:
                text = file.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise RunFileError(f"cannot read the run file: {reason}.", path=shown) from exc
    except UnicodeDecodeError as exc:
        message = f"the run file is not UTF-8 text (byte {exc.start}: {exc.reason})."
        raise RunFileError(message, path=shown) from exc
    return load_run_text(
        text,
        path=shown,
        check_classes=check_classes,
        probe_timeout=probe_timeout,
        start_method=start_method,
    )


STDIN = "-"
"""The run file name that reads the run file from standard input (``generate | palaestra
experiment-start -``); its plug-in modules are found in the working directory."""
STDIN_NAME = "<stdin>"
"""The path such a run file has in messages and in the store."""


def _standard_input() -> str:
    """Standard input's text (to its end: ``-`` is one run file)."""
    stream = sys.stdin
    if stream is None:
        raise OSError(errno.EBADF, "there is no standard input")
    if stream.isatty():
        print("Reading the run file from standard input (end it with Ctrl-D).", file=sys.stderr)
    return stream.buffer.read().decode("utf-8-sig")


def load_run_text(
    text: str,
    *,
    path: str = "<string>",
    check_classes: bool = True,
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
    start_method: str = AUTO,
) -> RunSpec:
    """Validate the text of a run file.

    Args:
        text: The YAML text; kept in ``RunSpec.document``.
        path: The name shown in errors and kept in ``RunSpec.path``.
        check_classes: Import every ``module:Class`` the text names and check it.
        probe_timeout: Seconds each environment may take to start while its ids are checked.
        start_method: The runtime config's ``start_method``: how those probes start.

    Returns:
        The validated run.

    Raises:
        RunFileError: The text is not a valid run file.
    """
    try:
        root = locate(_parse_yaml(text), text)
        builder = _RunBuilder(_ClassChecker(enabled=check_classes), probe_timeout, start_method)
        return builder.build(root, path=path, document=text)
    except RunFileError as exc:
        if exc.path is not None:
            raise
        located = RunFileError(exc.message, path=path, line=exc.line, key=exc.key, hint=exc.hint)
        raise located from exc.__cause__
    except RecursionError:
        raise RunFileError("the run file is nested too deeply.", path=path) from None


def yaml_hint(text: str, line: int | None, problem: str) -> str | None:
    """What the YAML parser's ``problem`` at ``line`` most likely means, in a sentence."""
    lines = text.splitlines()
    tabbed = [n for n, row in enumerate(lines, 1) if "\t" in row[: len(row) - len(row.lstrip())]]
    if tabbed:
        return f"line {tabbed[0]} is indented with a tab: YAML indents with spaces only."
    if line is None or not 0 < line <= len(lines):
        return None
    above = next(((n, lines[n - 1]) for n in range(line - 1, 0, -1) if lines[n - 1].strip()), None)
    if "expected <block end>" in problem and above is not None:
        return (
            f"line {line} is indented differently from the line above it (line {above[0]}: "
            f"{above[1].strip()!r}): the keys of one mapping start in one column, and a key's "
            "value is indented further under it."
        )
    if "mapping values are not allowed" in problem:
        return (
            f"line {line} has a second ': ' (quote a value that holds one: 'a: b'), or is "
            "indented under a key that already has a value on its own line."
        )
    if "expected ',' or" in problem:
        return "a [list] or {mapping} written on one line is not closed before this."
    return None


def _parse_yaml(text: str) -> Any:
    """Load YAML text with the round-trip loader, which records line numbers."""
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        line = mark.line + 1 if mark is not None else None
        hint = yaml_hint(text, line, problem)
        raise RunFileError(f"invalid YAML: {problem}.", line=line, hint=hint) from None
    except YAMLError as exc:
        raise RunFileError(f"invalid YAML: {exc}.") from None
    except Exception as exc:  # noqa: BLE001 - ruamel fails on odd inputs with non-YAML errors
        raise RunFileError(f"invalid YAML: {type(exc).__name__}: {exc}.") from None
    if data is None:
        raise RunFileError("the run file is empty.", line=1)
    return data


def _unfit_params(
    node: Node,
    name: str,
    found: type,
    signature: inspect.Signature,
    unknown: list[str],
    exc: TypeError,
) -> NoReturn:
    """Fail at ``node``: class ``name`` cannot be built with its params (``unknown``: those
    its constructor does not take; ``exc``: why Python's binding refused them)."""
    taken = [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    close = difflib.get_close_matches(unknown[0], taken, n=1) if unknown else []
    said = f"got an unexpected keyword argument '{unknown[0]}'" if unknown else exc
    node.fail(
        f"'{name}' cannot be made with these params: {said} (the parameters of "
        f"{found.__name__}: {', '.join(taken) or 'none'}).",
        f"Did you mean '{close[0]}'?" if close else None,
    )


class _ClassChecker:
    """Resolves ``module:Class`` names once per load and checks their base classes."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._resolved: dict[str, type | PluginLoadError] = {}

    def check(self, node: Node, name: str, role: str | None) -> None:
        """Check that ``name`` (at ``node``) resolves to a class fit for ``role``, a key of
        :data:`_BASE_CLASSES` (None: no base check)."""
        if not self.enabled:
            return
        found = self._resolve(name)
        if isinstance(found, PluginLoadError):
            message, _, own_hint = str(found).partition(" Did you mean ")
            hint = self._palaestra_hint(name) or (f"Did you mean {own_hint}" if own_hint else None)
            node.fail(message if message.endswith(".") else f"{message}.", hint)
        # The base classes may not exist yet; then there is nothing to check against.
        base_name = _BASE_CLASSES.get(role) if role else None
        base = self._resolve(base_name) if base_name else None
        if isinstance(base, type) and not issubclass(found, base):
            message = f"'{name}' is not a subclass of '{base_name}'."
            node.fail(message, self._palaestra_hint(name))
        if role:
            self._check_contract(node, name, found, role)

    @staticmethod
    def _check_contract(node: Node, name: str, found: type, role: str) -> None:
        """Fail where the class cannot be made (an abstract method left undefined) or defines
        a method palaestra calls as a coroutine function."""
        if inspect.isabstract(found):
            missing = sorted(getattr(found, "__abstractmethods__", ()))
            node.fail(
                f"'{name}' cannot be made: {found.__name__} does not define "
                f"{', '.join(missing)}, which every {role} must (abstract in its base class).",
                f"define {' and '.join(missing)} in {found.__name__}",
            )
        for method in _NOT_AWAITED.get(role, ()):
            if inspect.iscoroutinefunction(getattr(found, method, None)):
                node.fail(
                    f"'{name}': {found.__name__}.{method} is a coroutine function "
                    "(async def), which palaestra would not await.",
                    AWAITED_HINT,
                )

    def check_params(
        self, node: Node, name: str, params: dict[str, Any], supplied: Sequence[str] = ()
    ) -> None:
        """Fail (at ``node``, the ``params``) where class ``name`` cannot be built with
        ``params`` as palaestra builds it, ``Class(**params)`` (and the parameters of
        ``supplied`` that the constructor takes and ``params`` lack: an environment's ``uid``,
        ``seed`` and ``broker_uri``): a parameter its constructor does not take, or a required
        one not given. A constructor whose signature Python cannot tell (one in C, say) is
        left to the run."""
        if not self.enabled:
            return
        found = self._resolve(name)
        if not isinstance(found, type):
            return
        try:
            signature = inspect.signature(found, follow_wrapped=False)
        except (TypeError, ValueError):
            return
        taken_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        given = {
            key: None
            for key in supplied
            if key not in params and (taken_any or key in signature.parameters)
        }
        try:
            signature.bind(**params, **given)
        except TypeError as exc:
            unknown = [] if taken_any else [k for k in params if k not in signature.parameters]
            _unfit_params(node, name, found, signature, unknown, exc)

    def resolved(self, name: str) -> type | None:
        """The class ``name`` names, or None if it cannot be loaded (reported where it is
        named)."""
        found = self._resolve(name)
        return found if isinstance(found, type) else None

    def _resolve(self, name: str) -> type | PluginLoadError:
        if name not in self._resolved:
            try:
                self._resolved[name] = load_class(name)
            except PluginLoadError as exc:
                self._resolved[name] = exc
            except Exception as exc:  # noqa: BLE001 - a parent package of the module failed to import
                module = name.partition(":")[0]
                error = PluginLoadError(
                    f"module '{module}' failed to import: {import_failure(exc)}"
                )
                self._resolved[name] = error
        return self._resolved[name]

    def _palaestra_hint(self, name: str) -> str | None:
        """Suggest the palaestra class for a palaestrAI name, if there is one."""
        if name.partition(":")[0].split(".")[0] != "palaestrai":
            return None
        alternative = "palaestra" + name[len("palaestrai") :]
        if isinstance(self._resolve(alternative), type):
            return f"Did you mean '{alternative}'?"
        return None


class _RunBuilder:
    """Validates a located run file and builds its :class:`RunSpec`."""

    def __init__(self, classes: _ClassChecker, probe_timeout: float, start_method: str) -> None:
        self._classes = classes
        self._env_ids = EnvironmentIds(probe_timeout, start_method) if classes.enabled else None
        self._uncapped: set[int] = set()  # phases whose phase_config sets no episodes

    def build(self, root: Node, *, path: str, document: str) -> RunSpec:
        """Return the RunSpec of the document at ``root``."""
        fields = as_mapping(root, allowed=_TOP_KEYS, required=_TOP_REQUIRED)
        uid = as_name(fields["uid"])
        experiment_uid_node = optional(fields, "experiment_uid")
        phases = self._schedule(fields["schedule"])
        run_config = optional(fields, "run_config")
        conditions, phase_stops = self._run_conditions(run_config, phases)
        if any(is_evaluation_condition(c.name) for c in conditions):
            phases = without_caps(phases, self._uncapped)
        return RunSpec(
            uid=uid,
            experiment_uid=as_name(experiment_uid_node) if experiment_uid_node else uid,
            seed=as_int(fields["seed"], minimum=0, maximum=SEED_MAX, why=_SEED_WHY),
            version=_version(fields["version"]),
            phases=with_phase_stops(phases, phase_stops),
            conditions=conditions,
            placement=placement_spec(_placement_node(run_config)),
            path=path,
            document=document,
        )

    def _run_conditions(
        self, node: Node | None, phases: tuple[PhaseSpec, ...]
    ) -> tuple[tuple[ClassSpec, ...], dict[str, dict[int, float]]]:
        """Return the run's termination conditions from ``run_config`` (or the default), and
        the agents' phase rules if the condition is palaestrAI's objective condition."""
        fields = as_mapping(node, allowed=_RUN_CONFIG_KEYS) if node is not None else {}
        condition = optional(fields, "condition")
        if condition is None:
            return (ClassSpec(name=_DEFAULT_RUN_CONDITION),), {}
        spec = self._class_spec(condition, role=None)
        if is_evaluation_condition(spec.name):
            check_evaluation_condition(condition, phases, self._uncapped)
        if is_objective_condition(spec.name):
            names = sorted({agent.name for phase in phases for agent in phase.agents})
            return (spec,), phase_rules(condition, names)
        return (spec,), {}

    def _schedule(self, node: Node) -> tuple[PhaseSpec, ...]:
        """Return the phases of the schedule, each with what it inherited."""
        phases: list[PhaseSpec] = []
        fields: dict[str, Node] = {}
        for index, item in enumerate(as_list(node, non_empty=True)):
            name, body = _phase_entry(item)
            fields = _inherit(fields, _phase_fields(body))
            phases.append(self._phase(index, name, body, fields))
        return tuple(phases)

    def _phase(self, index: int, name: str, body: Node, fields: dict[str, Node]) -> PhaseSpec:
        """Return one phase from its keys after inheritance."""
        for key in _PHASE_KEYS:
            if key not in fields:
                body.fail(f"missing required key '{key}' (the first phase cannot inherit it).")
        environments = self._environments(fields["environments"])
        uids = [environment.uid for environment in environments]
        agents = self._agents(fields["agents"], name, uids, index)
        if self._env_ids is not None:
            self._check_ids_exist(fields["agents"], environments)
        simulation = self._simulation(fields["simulation"], len(environments))
        if self._env_ids is not None:
            self._check_turns(fields["agents"], name, environments, agents, simulation)
        if any(is_objective_condition(c.name) for c in simulation.conditions):
            agents = with_objective_stops(agents, fields["simulation"].value["conditions"])
        if sets_no_episodes(fields["phase_config"]):
            self._uncapped.add(index)
        own = _phase_fields(body).get("phase_config")
        config = _phase_config(evaluations_not_inherited(fields["phase_config"], own))
        return PhaseSpec(
            index=index,
            name=name,
            environments=environments,
            agents=agents,
            simulation=simulation,
            config=config,
        )

    def _check_ids_exist(self, agents: Node, environments: tuple[EnvironmentSpec, ...]) -> None:
        """Fail at the first sensor or actuator id its environment does not have."""
        assert self._env_ids is not None
        known = {e.uid: self._env_ids.of(e) for e in environments}
        for agent in as_list(agents):
            fields = as_mapping(agent, allowed=_AGENT_KEYS)
            for key, kind in (("sensors", "sensor"), ("actuators", "actuator")):
                for item in as_list(fields[key]):
                    value = _id_value(item)
                    uid = value.partition(".")[0]
                    ids = known.get(uid)
                    if ids is not None and value not in ids[key]:
                        _missing_id(item, value, kind, uid, sorted(ids[key]))

    def _check_turns(
        self,
        node: Node,
        phase: str,
        environments: tuple[EnvironmentSpec, ...],
        agents: tuple[AgentSpec, ...],
        simulation: SimulationSpec,
    ) -> None:
        """Fail where the agents do not take the turns of a game whose players take turns."""
        assert self._env_ids is not None
        controller = self._classes.resolved(simulation.name)
        policy = getattr(controller, "policy", None)
        one_per_step = isinstance(policy, type) and issubclass(policy, RoundRobin)
        short = simulation.name.rpartition(":")[2]
        for environment in environments:
            players = self._env_ids.turns(environment)
            if players:
                check_turns(
                    node, phase, environment.uid, players, agents, short if one_per_step else None
                )

    def _environments(self, node: Node) -> tuple[EnvironmentSpec, ...]:
        """Return a phase's environments, whose uids must be unique."""
        specs: list[EnvironmentSpec] = []
        seen: dict[str, int | None] = {}
        for item in as_list(node, non_empty=True):
            entry = as_mapping(item, allowed=_ENV_ITEM_KEYS, required=("environment",))
            spec, uid_node = self._environment(entry["environment"])
            extras = {
                key: self._class_spec(entry[key], role=None)
                for key in ("reward", "state_transformer")
                if optional(entry, key)
            }
            spec = msgspec.structs.replace(spec, **extras)
            _check_unique(seen, spec.uid, uid_node, "environment uid")
            specs.append(spec)
        return tuple(specs)

    def _environment(self, node: Node) -> tuple[EnvironmentSpec, Node]:
        """Return an environment and the node its uid comes from (``name`` if defaulted)."""
        fields = as_mapping(node, allowed=_ENV_KEYS, required=("name",))
        name = self._class_name(fields["name"], role="environment")
        uid_node = optional(fields, "uid")
        uid = as_name(uid_node) if uid_node else as_name(fields["name"], name.partition(":")[2])
        params = as_params(fields.get("params"))
        self._classes.check_params(
            optional(fields, "params") or fields["name"], name, params, SUPPLIED
        )
        spec = EnvironmentSpec(name=name, uid=uid, params=params)
        if self._env_ids is not None:  # started once now: its params are refused here
            try:
                self._env_ids.of(spec)
            except InvalidEnvironmentError as exc:
                (optional(fields, "params") or fields["name"]).fail(str(exc))
        return spec, uid_node or fields["name"]

    def _agents(
        self, node: Node, phase: str, uids: list[str], index: int = 0
    ) -> tuple[AgentSpec, ...]:
        """Return a phase's agents, whose names must be unique."""
        specs: list[AgentSpec] = []
        seen: dict[str, int | None] = {}
        for item in as_list(node, non_empty=True):
            spec, name_node = self._agent(item, phase, uids, index)
            _check_unique(seen, spec.name, name_node, "agent name")
            specs.append(spec)
        return tuple(specs)

    def _agent(
        self, node: Node, phase: str, uids: list[str], index: int = 0
    ) -> tuple[AgentSpec, Node]:
        """Return an agent of phase ``index`` and the node of its name."""
        fields = as_mapping(node, allowed=_AGENT_KEYS, required=_AGENT_REQUIRED)
        spec = AgentSpec(
            name=as_name(fields["name"]),
            brain=self._class_spec(fields["brain"], role="brain"),
            muscle=self._class_spec(fields["muscle"], role="muscle"),
            objective=self._class_spec(fields["objective"], role="objective"),
            sensors=_ids(fields["sensors"], "sensor", phase, uids),
            actuators=_ids(fields["actuators"], "actuator", phase, uids),
            load=_load(optional(fields, "load")),
            replay=replay_sources(optional(fields, "replay"), index),
            brain_memory=memory_limits(optional(fields, "brain_memory"), BRAIN_MEMORY),
            muscle_memory=memory_limits(optional(fields, "muscle_memory"), MUSCLE_MEMORY),
            filters=self._filters(optional(fields, "filters")),
            dump=dump_policy(optional(fields, "dump")),
            hot_reload=as_bool(fields["hot_reload"]) if "hot_reload" in fields else False,
        )
        brain, muscle = agent_resources(optional(fields, "resources"))
        if brain is not None or muscle is not None:
            spec = msgspec.structs.replace(spec, brain_resources=brain, muscle_resources=muscle)
        return spec, fields["name"]

    def _filters(self, node: Node | None) -> tuple[ClassSpec, ...]:
        """Return an agent's ``filters``: a list of ``{name, params}``, applied in order."""
        if node is None:
            return ()
        return tuple(self._class_spec(item, role="filter") for item in as_list(node))

    def _simulation(self, node: Node, environments: int) -> SimulationSpec:
        """Return a phase's simulation controller and its termination conditions."""
        fields = as_mapping(node, allowed=_SIMULATION_KEYS, required=("name", "conditions"))
        conditions = as_list(fields["conditions"])
        params = as_params(fields.get("params"))
        for key, problem in simulation_params_problems(params, environments):
            fields["params"].value[key].fail(problem)
        for item in conditions:
            refuse_in_simulation(item)
        specs = tuple(self._class_spec(item, role=None) for item in conditions)
        return SimulationSpec(
            name=self._class_name(fields["name"], role=None), conditions=specs, params=params
        )

    def _class_spec(self, node: Node, *, role: str | None) -> ClassSpec:
        """Return a ``{name, params}`` plug-in; ``role`` selects the base-class check."""
        fields = as_mapping(node, allowed=_CLASS_KEYS, required=("name",))
        name = self._class_name(fields["name"], role=role)
        params_node = fields.get("params")
        params = as_params(params_node)
        if role in _BUILT_WITH_PARAMS:
            self._classes.check_params(params_node or fields["name"], name, params)
        return ClassSpec(name=name, params=params)

    def _class_name(self, node: Node, *, role: str | None) -> str:
        """Return a checked ``module:Class`` name."""
        name = as_class_name(node)
        self._classes.check(node, name, role)
        return name


def _placement_node(run_config: Node | None) -> Node | None:
    """``run_config.placement``, checked as part of ``run_config`` by ``_run_conditions``."""
    if run_config is None or not isinstance(run_config.value, dict):
        return None
    return optional(run_config.value, "placement")


def _version(node: Node) -> str:
    """Return the version as a string; a number like ``3.5`` is kept as written."""
    value = node.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return node.text or str(value)
    if isinstance(value, str) and value:
        return value
    node.fail(f'expected a version like "3.5", got {describe(value)}.')


def _phase_entry(item: Node) -> tuple[str, Node]:
    """Return the name and body of a schedule item, a mapping with the phase name as only key."""
    if not isinstance(item.value, dict):
        item.fail(
            f"expected a mapping from a phase name to the phase, got {describe(item.value)}."
        )
    if len(item.value) != 1:
        keys = ", ".join(repr(key) for key in item.value)
        nested = any(key in _PHASE_KEYS for key in item.value)
        hint = "Indent the phase's keys under the phase name." if nested else None
        item.fail(f"expected a single key, the phase name, got {len(item.value)} ({keys}).", hint)
    ((name, body),) = item.value.items()
    if not isinstance(name, str) or not name:
        body.fail(f"expected a phase name that is a non-empty string, got {describe(name)}.")
    return as_name(body, name), body


def _phase_fields(body: Node) -> dict[str, Node]:
    """Return the keys a phase sets; an empty (null) phase sets none."""
    if body.value is None:
        return {}
    return as_mapping(body, allowed=_PHASE_KEYS)


def _inherit(previous: dict[str, Node], current: dict[str, Node]) -> dict[str, Node]:
    """Return a phase's keys after inheriting from the keys of the phase before it."""
    fields = dict(previous)
    for key, node in current.items():
        if key in _MERGED_PHASE_KEYS and key in previous:
            fields[key] = _merge(previous[key], node)
        else:
            fields[key] = node
    return fields


def _merge(old: Node, new: Node) -> Node:
    """Merge two mappings key by key, recursively; anything else is replaced by ``new``.

    Inherited children keep their own key path and line, so errors point where they were
    written.
    """
    if not isinstance(old.value, dict) or not isinstance(new.value, dict):
        return new
    merged = dict(old.value)
    for key, child in new.value.items():
        merged[key] = _merge(old.value[key], child) if key in old.value else child
    return Node(merged, new.key, new.line)


def _ids(node: Node, kind: str, phase: str, uids: list[str]) -> tuple[str, ...]:
    """Return the sensor or actuator ids of an agent, each of an environment of the phase."""
    ids: list[str] = []
    for item in as_list(node):
        value = _id_value(item)
        if not any(value.startswith(f"{uid}.") and len(value) > len(uid) + 1 for uid in uids):
            _foreign_id(item, value, kind, phase, uids)
        ids.append(value)
    return tuple(ids)


def _id_value(item: Node) -> str:
    """A sensor or actuator id as written (``myenv.0`` may be read as a number)."""
    value = item.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = item.text or str(value)
    if not isinstance(value, str) or not value:
        item.fail(f"expected an id like 'env_uid.0', got {describe(item.value)}.")
    return value


def _missing_id(item: Node, value: str, kind: str, uid: str, available: list[str]) -> NoReturn:
    """Fail for an id that the environment, started to check it, does not have."""
    close = difflib.get_close_matches(value, available, n=1)
    guess = f"Did you mean '{close[0]}'? " if close else ""
    shown = ", ".join(available[:12]) + (", ..." if len(available) > 12 else "")
    item.fail(
        f"environment '{uid}' has no {kind} '{value}'.",
        f"{guess}Its {kind}s are: {shown}.",
    )


def _check_unique(seen: dict[str, int | None], value: str, node: Node, what: str) -> None:
    """Fail if ``value`` was seen before in this phase; else remember where it is."""
    if value in seen:
        node.fail(
            f"{what} '{value}' is used twice in this phase.",
            f"It is first used on line {seen[value]}.",
        )
    seen[value] = node.line


def _foreign_id(item: Node, value: str, kind: str, phase: str, uids: list[str]) -> NoReturn:
    """Fail for an id that does not start with the uid of an environment of the phase."""
    prefix, _, rest = value.partition(".")
    close = difflib.get_close_matches(prefix, uids, n=1) if rest else []
    guess = f"Did you mean '{close[0]}.{rest}'? " if close else ""
    known = ", ".join(f"'{uid}'" for uid in uids)
    item.fail(
        f"{kind} '{value}' does not belong to an environment of phase '{phase}'.",
        f"{guess}Ids start with an environment uid and a dot; the uids are: {known}.",
    )


def _load(node: Node | None) -> LoadSpec | None:
    """Return where an agent's brain dump is loaded from, or None if it is not loaded."""
    if node is None:
        return None
    fields = as_mapping(node, allowed=_LOAD_KEYS, unsupported=_LOAD_UNSUPPORTED)
    agent = optional(fields, "agent")
    run = optional(fields, "experiment_run")
    phase = optional(fields, "phase")
    strict = optional(fields, "strict")
    return LoadSpec(
        agent=as_name(agent) if agent else None,
        experiment_run=as_name(run) if run else None,
        phase=as_int(phase, minimum=0) if phase else None,
        strict=as_bool(strict) if strict else False,
    )


def _phase_config(node: Node) -> PhaseConfig:
    """Return the phase's mode, worker count and episode count."""
    fields = as_mapping(node, allowed=_PHASE_CONFIG_KEYS)
    episodes = optional(fields, "episodes")  # null means 1, as palaestrAI allows it
    evaluate_every = optional(fields, "evaluate_every")  # null: none, as palaestrAI reads it
    if "store_raw_actuators" in fields:  # accepted for palaestrAI run files, not used
        as_bool(fields["store_raw_actuators"])
    return PhaseConfig(
        mode=_mode(fields["mode"]) if "mode" in fields else "train",
        worker=as_int(fields["worker"], minimum=1) if "worker" in fields else 1,
        episodes=as_int(episodes, minimum=1, maximum=COUNT_MAX) if episodes else 1,
        update_lag=_update_lag(fields["update_lag"]) if "update_lag" in fields else 0,
        record_every=record_every(fields["record"]) if "record" in fields else RECORD_ALL,
        evaluate_every=as_int(evaluate_every, minimum=0) if evaluate_every else 0,
        step_rate=_step_rate(fields["step_rate"]) if "step_rate" in fields else 0.0,
        envs_per_worker=(
            as_int(fields["envs_per_worker"], minimum=1, maximum=ENVS_PER_WORKER_MAX)
            if "envs_per_worker" in fields
            else 1
        ),
    )


def _update_lag(node: Node) -> int:
    """0: a Muscle applies the Brain's answer before acting (palaestrAI's order); 1: one step
    later, so the Brain thinks while the world steps; ``async``: the Muscle never waits for its
    Brain and applies answers when they arrive (:data:`UPDATE_LAG_ASYNC`)."""
    if isinstance(node.value, str) and node.value.lower() == "async":
        return UPDATE_LAG_ASYNC
    if isinstance(node.value, int) and not isinstance(node.value, bool) and node.value in (0, 1):
        return node.value
    node.fail(f"expected 0, 1 or async, got {describe(node.value)}.")


def _step_rate(node: Node) -> float:
    """Environment steps per second of wall-clock time (real-time pacing); 0 or null: lockstep,
    as fast as the slowest participant."""
    value = node.value
    if value is None:
        return 0.0
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1e6:
        return float(value)  # (NaN fails the comparison)
    node.fail(
        f"expected a number of steps per second from 0 to 1000000 (0: lockstep), "
        f"got {describe(value)}."
    )


def _mode(node: Node) -> Mode:
    """Return the phase mode, given in any case, as ``"train"`` or ``"test"``."""
    if isinstance(node.value, str):
        for mode in _MODES:
            if node.value.lower() == mode:
                return mode
    hint = did_you_mean(node.value.lower(), _MODES) if isinstance(node.value, str) else None
    node.fail(f"expected 'train' or 'test', got {describe(node.value)}.", hint)
