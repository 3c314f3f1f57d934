"""Runs a run file with some of its processes on other (simulated) hosts.

``python tests/netns_driver.py RUN STORE_URI HOME_ADDRESS [ROLES@NS@ADDRESS ...]``: ROLES is a
comma-separated list of roles (Muscle, Environment, Brain, ...), started with ``ip netns exec
NS`` (NS ``-``: as subprocesses here, on a host of their own name) and binding on ADDRESS.
With HOME_ADDRESS ``local`` and no placement, every process is the executor's, on one host,
with local links only. Prints ``outcome CODE MESSAGE`` and exits with the run's code."""

from __future__ import annotations

import sys

from palaestra.core.description.config import RuntimeConfig
from palaestra.core.supervision.launch import Placements, SubprocessLauncher
from palaestra.core.wire.netlink import Host
from palaestra.experiment.executor import execute
from palaestra.experiment.runfile import load_run_file


def main() -> int:
    run_file, store_uri, home, *where = sys.argv[1:]
    run = load_run_file(run_file)
    config = RuntimeConfig(store_uri=store_uri)
    launchers = []
    for index, item in enumerate(where):
        roles, ns, address = item.split("@")
        launchers.append(
            SubprocessLauncher(
                prefix=[] if ns == "-" else ["ip", "netns", "exec", ns],
                host=f"host{index + 1}" if ns == "-" else ns,
                roles=roles.split(","),
                address=address,
            )
        )
    local = home == "local"
    outcome = execute(
        run,
        config,
        placement=Placements(*launchers) if launchers else None,
        host=None if local else Host(name="home", address=home),
    )
    print("outcome", outcome.exit_code, outcome.message, flush=True)
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
