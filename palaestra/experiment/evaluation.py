"""palaestrAI's AgentEvaluationObjectiveTerminationCondition: a phase ends on evaluations.

With ``phase_config.evaluate_every: K`` (and one worker) the worker pauses after every ``K``
training episodes for an evaluation: one episode in test mode whose experience no Brain learns
from, then each agent's Brain is asked ``evaluate_rollouts`` (see
:meth:`palaestra.agent.brain.Brain.evaluate_rollouts`) and returns an
:class:`~palaestra.agent.evaluation_result.EvaluationResult`. This condition, named as the
run's condition, reads those results with one rule set per agent (params ``agents``)::

    run_config:
      condition:
        name: palaestrai.experiment:AgentEvaluationObjectiveTerminationCondition
        params:
          agents:
            my_agent:
              success: {metric: objective, threshold: 0.8, direction: greater_equal,
                        consecutive: 2, min_evaluations: 3}
              plateau: {metric: objective, direction: maximize, min_delta: 0.01,
                        patience: 4, min_evaluations: 5, window: 1}

As palaestrAI 3.5.18's: a result is valid if it has every metric the agent's rules read, each
a finite number; an invalid result resets that agent's success streak and changes nothing else.
A valid result extends the agent's success streak if its metric passes the threshold (else the
streak restarts), and, once ``window`` valid results exist, compares the mean of the last
``window`` with the best so far: an improvement by at least ``min_delta`` becomes the best and
clears the patience count, anything else adds one to it once ``min_evaluations`` valid results
exist. The phase ends by ``success`` once every agent has ``min_evaluations`` valid results and
``consecutive`` passing ones in a row (checked first), by ``plateau`` once every agent's
patience count reached ``patience``, else by ``max_episodes`` after the phase's ``episodes``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from palaestra.core.description.specs import PhaseConfig
from palaestra.core.termination import EpisodeEndsWithEnvironment
from palaestra.core.wire import messages as m

LOG = logging.getLogger(__name__)

CONDITION = "AgentEvaluationObjectiveTerminationCondition"
_SUCCESS_KEYS = ("metric", "threshold", "direction", "consecutive", "min_evaluations")
_PLATEAU_KEYS = ("metric", "direction", "min_delta", "patience", "min_evaluations", "window")
_SUCCESS_DIRECTIONS = ("greater_equal", "less_equal")
_PLATEAU_DIRECTIONS = ("maximize", "minimize")


class RuleError(ValueError):
    """A rule of the condition's params is malformed; ``key`` says where (under params)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


def evaluations(config: PhaseConfig) -> int:
    """Training episodes between a worker's evaluations in a phase: ``evaluate_every`` with
    one worker, else 0 (none: with several workers palaestra runs no evaluation, and says
    so)."""
    if config.worker == 1 or not config.evaluate_every:
        return config.evaluate_every
    LOG.warning(
        "phase_config.evaluate_every: palaestra runs evaluations with one worker only; this "
        "phase has %d, so it runs none",
        config.worker,
    )
    return 0


def is_evaluation_condition(name: str) -> bool:
    """Whether ``module:Class`` names palaestrAI's (or palaestra's) evaluation condition."""
    module, _, cls = name.partition(":")
    return cls == CONDITION and module.split(".")[0] in ("palaestra", "palaestrai")


@dataclasses.dataclass(frozen=True)
class SuccessRule:
    """The phase may end once ``consecutive`` valid results in a row pass ``threshold``."""

    metric: str
    threshold: float
    direction: str
    consecutive: int
    min_evaluations: int

    def passes(self, value: float) -> bool:
        if self.direction == "greater_equal":
            return value >= self.threshold
        return value <= self.threshold


@dataclasses.dataclass(frozen=True)
class PlateauRule:
    """The phase may end once ``patience`` results in a row brought no improvement."""

    metric: str
    direction: str
    min_delta: float
    patience: int
    min_evaluations: int
    window: int

    def improves(self, value: float, best: float | None) -> bool:
        if best is None:
            return True
        if self.direction == "maximize":
            return value >= best + self.min_delta
        return value <= best - self.min_delta


@dataclasses.dataclass
class AgentRecord:
    """What one agent's results so far mean for its rules."""

    valid: int = 0
    streak: int = 0
    patience: int = 0
    best: float | None = None
    values: deque[float] = dataclasses.field(default_factory=deque)


class AgentEvaluationObjectiveTerminationCondition(EpisodeEndsWithEnvironment):
    """Ends a phase on the Brains' evaluation results (see the module's description).

    Episodes end when an environment is done; the phase's ``episodes`` stay the bound.

    Args:
        agents: By agent name, its ``success`` and/or ``plateau`` rule.

    Raises:
        RuleError: The rules are malformed (the run-file loader reports it, exit 2).
    """

    def __init__(self, agents: Mapping[str, Any] | None = None, **params: Any) -> None:
        super().__init__(**params)
        if not isinstance(agents, Mapping) or not agents:
            raise RuleError("agents", "expected a mapping of agent names to their rules")
        self.success: dict[str, SuccessRule] = {}
        self.plateau: dict[str, PlateauRule] = {}
        for name, rules in agents.items():
            _parse_agent(str(name), rules, self.success, self.plateau)
        for kind, present in (("success", self.success), ("plateau", self.plateau)):
            missing = sorted(set(map(str, agents)) - set(present))
            if present and missing:
                raise RuleError(
                    f"agents.{missing[0]}",
                    f"no {kind} rule: give every agent one or none (the phase ends by "
                    f"{kind} when all agents reach theirs)",
                )
        self.records = {str(name): AgentRecord() for name in agents}
        self.reason: str | None = None
        """``success``, ``plateau`` or ``max_episodes`` once the phase ended."""

    def phase_done(self, episodes_done: int, episodes: int) -> bool:
        if self.reason is not None:
            return True
        if episodes_done >= episodes:
            self._end("max_episodes")
            return True
        return False

    def evaluation_done(self, evaluation: int, results: Sequence[m.AgentEvaluated]) -> bool:
        by_agent = {r.agent: r for r in results}
        for name, record in self.records.items():
            result = by_agent.get(name)
            if result is None:
                LOG.warning("evaluation %d: no result of agent %s", evaluation, name)
                record.streak = 0
            else:
                self._note(name, record, result)
        if self._all_succeeded():
            self._end("success")
        elif self._all_plateaued():
            self._end("plateau")
        return self.reason is not None

    def _note(self, name: str, record: AgentRecord, result: m.AgentEvaluated) -> None:
        """Apply one agent's result to its record."""
        success, plateau = self.success.get(name), self.plateau.get(name)
        metrics = {r.metric for r in (success, plateau) if r is not None}
        values = {k: result.metrics.get(k) for k in metrics}
        if not all(v is not None and math.isfinite(v) for v in values.values()):
            LOG.warning(
                "evaluation %d of %s: no finite %s in %s: not counted",
                result.evaluation,
                name,
                " and ".join(sorted(metrics)),
                result.metrics if result.result else "no result (evaluate_rollouts gave None)",
            )
            record.streak = 0
            return
        record.valid += 1
        LOG.info("evaluation %d of %s: %s", result.evaluation, name, values)
        if success is not None:
            passed = success.passes(float(values[success.metric] or 0.0))
            record.streak = record.streak + 1 if passed else 0
        if plateau is not None:
            _note_plateau(record, plateau, float(values[plateau.metric] or 0.0))

    def _all_succeeded(self) -> bool:
        return bool(self.success) and all(
            self.records[name].valid >= rule.min_evaluations
            and self.records[name].streak >= rule.consecutive
            for name, rule in self.success.items()
        )

    def _all_plateaued(self) -> bool:
        return bool(self.plateau) and all(
            self.records[name].patience >= rule.patience for name, rule in self.plateau.items()
        )

    def _end(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            LOG.info("the phase ends by %s (AgentEvaluationObjectiveTerminationCondition)", reason)


def _note_plateau(record: AgentRecord, rule: PlateauRule, value: float) -> None:
    record.values.append(value)
    while len(record.values) > rule.window:
        record.values.popleft()
    if len(record.values) < rule.window:
        return
    mean = sum(record.values) / rule.window
    if rule.improves(mean, record.best):
        record.best = mean
        record.patience = 0
    elif record.valid >= rule.min_evaluations:
        record.patience += 1


def _parse_agent(
    name: str,
    rules: Any,
    success: dict[str, SuccessRule],
    plateau: dict[str, PlateauRule],
) -> None:
    key = f"agents.{name}"
    if not isinstance(rules, Mapping):
        raise RuleError(key, "expected a mapping with a success and/or a plateau rule")
    unknown = sorted(str(k) for k in rules if k not in ("success", "plateau"))
    if unknown:
        raise RuleError(f"{key}.{unknown[0]}", "unknown rule: expected success or plateau")
    if not rules:
        raise RuleError(key, "needs a success and/or a plateau rule")
    if "success" in rules:
        fields = _fields(f"{key}.success", rules["success"], _SUCCESS_KEYS)
        success[name] = SuccessRule(
            metric=_metric(f"{key}.success", fields["metric"]),
            threshold=_finite(f"{key}.success.threshold", fields["threshold"]),
            direction=_choice(f"{key}.success", fields["direction"], _SUCCESS_DIRECTIONS),
            consecutive=_positive(f"{key}.success.consecutive", fields["consecutive"]),
            min_evaluations=_positive(f"{key}.success.min_evaluations", fields["min_evaluations"]),
        )
    if "plateau" in rules:
        fields = _fields(f"{key}.plateau", rules["plateau"], _PLATEAU_KEYS)
        min_delta = _finite(f"{key}.plateau.min_delta", fields["min_delta"])
        if min_delta < 0:
            raise RuleError(f"{key}.plateau.min_delta", f"expected >= 0, got {min_delta}")
        plateau[name] = PlateauRule(
            metric=_metric(f"{key}.plateau", fields["metric"]),
            direction=_choice(f"{key}.plateau", fields["direction"], _PLATEAU_DIRECTIONS),
            min_delta=min_delta,
            patience=_positive(f"{key}.plateau.patience", fields["patience"]),
            min_evaluations=_positive(f"{key}.plateau.min_evaluations", fields["min_evaluations"]),
            window=_positive(f"{key}.plateau.window", fields["window"]),
        )


def _fields(key: str, rule: Any, names: tuple[str, ...]) -> Mapping[str, Any]:
    """The rule's fields: exactly ``names``, as palaestrAI requires."""
    if not isinstance(rule, Mapping):
        raise RuleError(key, f"expected a mapping with {', '.join(names)}")
    missing = [n for n in names if n not in rule]
    unknown = sorted(str(k) for k in rule if k not in names)
    if missing or unknown:
        what = f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(unknown)}"
        raise RuleError(key, f"{what}: expected exactly {', '.join(names)}")
    return rule


def _metric(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise RuleError(f"{key}.metric", f"expected a metric's name, got {value!r}")
    return value


def _choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise RuleError(f"{key}.direction", f"expected {' or '.join(choices)}, got {value!r}")
    return str(value)


def _finite(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RuleError(key, f"expected a finite number, got {value!r}")
    return float(value)


def _positive(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RuleError(key, f"expected an integer >= 1, got {value!r}")
    return value
