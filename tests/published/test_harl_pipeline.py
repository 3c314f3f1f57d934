"""harl's PipelineBrain and PipelineMuscle, with its normalisation wrappers, run unchanged.

``harl_pipeline_run.yml`` wraps harl's SAC: the Muscle normalises its observations with the
running mean and variance (VecNormMusclePreprocessor) that the Brain's VecNormBrainPreprocessor
keeps, stores and sends. The pipeline writes palaestrAI's private attributes of the Brain and
Muscle it builds (``_mode``, ``_uid``, ``_seed``, ``_sensors``, ``_dumpers``, ``_memory``,
``mode``) and loads through ``try_load_brain_dump``. The run must finish with exit 0 and no
ERROR line, and the test phase must act from its first step with the trained weights: its
first set points are what the newest stored actor computes from the first observation,
normalised by the newest stored running statistics (the pipeline's Muscle gets both from the
Brain's first answer).
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.conftest import Workspace
from tests.published.test_harl_brains import SENSORS, dumps, first_test_step, sac_action

pytestmark = pytest.mark.timeout(120)

HERE = Path(__file__).resolve().parent


def test_the_pipeline_trains_then_tests_with_the_trained_weights(
    workspace: Workspace, torch_with_harl: ModuleType
) -> None:
    torch = torch_with_harl
    from harl.common.running_mean_std import RunningMeanStd

    result = workspace.run(
        "-v", "experiment-start", str(HERE / "harl_pipeline_run.yml"), timeout=100
    )

    assert result.returncode == 0, result.stderr[-4000:]
    log = result.stdout + result.stderr
    errors = [line for line in log.splitlines() if " ERROR " in line or "Traceback" in line]
    assert not errors, "\n".join(errors)
    assert workspace.instance_status()[0] == "finished"

    with sqlite3.connect(workspace.store) as conn:
        for tag in ("sac_actor", "sac_critic", "vecnormbrainpreprocessor"):
            trained = dumps(conn, 0, tag)
            assert trained and all(trained), f"phase 0 left no non-empty dump tagged {tag!r}"
        actors = dumps(conn, 0, "sac_actor")
        statistics = dumps(conn, 0, "vecnormbrainpreprocessor")
        obs, setpoints = first_test_step(conn)
        (first_readings,) = conn.execute(
            "select m.sensor_readings from muscle_actions m order by m.id limit 1"
        ).fetchone()

    # the Muscle recorded the raw observations (the pipeline normalises a copy)
    assert set(json.loads(first_readings)) == set(SENSORS)
    # The newest dump of the preprocessor's tag is what its Brain loads and sends on (harl
    # stores its observation and then its objective statistics under the one tag; palaestrAI
    # keeps the last of a tag too). The pipeline sets the normalised values into the sensors,
    # clipped into their space, Box(0, 10), as palaestrAI's coerce_and_set_values_to_info_objects.
    rms = RunningMeanStd()
    rms.load(io.BytesIO(statistics[-1]))
    normalised = np.clip(rms.normalize(np.asarray(obs, dtype=np.float64)), 0.0, 10.0)
    actor = torch.load(io.BytesIO(actors[-1]), weights_only=False, map_location="cpu")
    actor.eval()
    with torch.no_grad():
        expected = sac_action(actor, torch.tensor(normalised.astype(np.float32)))
    np.testing.assert_allclose(setpoints, expected, rtol=1e-5, atol=1e-5)
    assert actors[0] != actors[-1], "the actor did not change while training"
