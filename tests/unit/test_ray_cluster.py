"""The Ray backend's checks that need no cluster: the store it takes, the addresses it reads."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from palaestra.core.errors import InvalidInputError
from palaestra.experiment import ray_cluster
from palaestra.experiment.runtime_config import RuntimeConfig
from tests.conftest import EXPERIMENTS


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql+psycopg://postgres@127.0.0.1:5432/test",
        "postgresql://user@db.example:5432/runs",
        "none",
    ],
)
def test_stores_a_cluster_can_share_pass(uri: str) -> None:
    ray_cluster.check_store_for_ray(uri)


@pytest.mark.parametrize("uri", ["sqlite:///palaestra.db", "sqlite+pysqlite:////abs/x.db"])
def test_sqlite_is_refused_with_how_to_set_postgresql(uri: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        ray_cluster.check_store_for_ray(uri)
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert uri in message
    assert "store_uri: postgresql+psycopg://" in message
    assert "pip install 'palaestra[postgres]'" in message


def test_a_local_backend_checks_nothing() -> None:
    ray_cluster.check_backend(RuntimeConfig(backend="local", store_uri="sqlite:///x.db"))


@pytest.mark.parametrize("address", ["bogus", "host:", "host:99999", "ray://:10001"])
def test_an_address_that_is_no_host_and_port_is_bad_input(address: str) -> None:
    with pytest.raises(InvalidInputError, match="expected host:port"):
        ray_cluster._host_port(address)


def test_an_address_is_split_into_host_and_port() -> None:
    assert ray_cluster._host_port("10.0.0.5:6379") == ("10.0.0.5", 6379)
    assert ray_cluster._host_port("ray://head:10001") == ("head", 10001)
    assert ray_cluster._host_port("[::1]:6379") == ("::1", 6379)


def test_a_closed_port_is_unreachable_at_once() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ray_cluster.ClusterUnreachableError) as caught:
        ray_cluster._probe(f"127.0.0.1:{port}", 5.0)
    assert caught.value.exit_code == 3
    assert f"'127.0.0.1:{port}'" in str(caught.value)


def test_a_port_that_is_no_grpc_server_is_unreachable_within_the_timeout() -> None:
    with socket.socket() as listener:  # accepts (the backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(ray_cluster.ClusterUnreachableError, match="no answer within 0.5 s"):
            ray_cluster._probe(address, 0.5)


def test_the_api_sweep_on_ray_refuses_sqlite_before_anything_runs(tmp_path: Path) -> None:
    import palaestra

    store = tmp_path / "x.db"
    config = RuntimeConfig(backend="ray", store_uri=f"sqlite:///{store}")
    with pytest.raises(InvalidInputError, match="backend: ray needs a PostgreSQL store"):
        palaestra.sweep(EXPERIMENTS / "dummy_run.yml", seeds=[1, 2], config=config)
    assert not store.exists()
