"""The command line's modules import each other one way only (issue 9, part 1, item 8); the
import-linter contract "No import cycles between the command line's modules" says the same."""

from __future__ import annotations

import grimp


def test_the_cli_modules_import_each_other_without_cycles() -> None:
    graph = grimp.build_graph("palaestra", cache_dir=None)
    modules = sorted(m for m in graph.find_children("palaestra.cli"))

    cycles = [
        (importer, imported, graph.find_shortest_chain(importer=imported, imported=importer))
        for importer in modules
        for imported in modules
        if importer != imported
        and graph.direct_import_exists(importer=importer, imported=imported, as_packages=True)
        and graph.chain_exists(importer=imported, imported=importer, as_packages=True)
    ]

    assert "palaestra.cli.main" in modules and "palaestra.cli.results" in modules
    assert cycles == []
