"""``mnemo cortex …``: the long-term tier (memory-architecture §5.4, the RAPTOR tree)."""

from __future__ import annotations

import typer
from rich.text import Text
from rich.tree import Tree

from mnemo.interfaces.cli._common import EntityOpt, JsonOpt, NamespaceOpt, open_archive, out, print_json
from mnemo.models import Scope, TreeNode, to_jsonable

__all__ = ["register"]

LEVEL_NAMES = {1: "branch", 2: "trunk", 3: "canopy"}


def register(app: typer.Typer) -> None:
    """Add the ``cortex`` command group to ``app``."""
    group = typer.Typer(no_args_is_help=True, help="The long-term tier: blocks in the cortex and their tree.")
    group.command("tree")(tree)
    app.add_typer(group, name="cortex")


def tree(entity: EntityOpt = "default", namespace: NamespaceOpt = "default", as_json: JsonOpt = False) -> None:
    """Print the scope's RAPTOR tree (canopy, trunk, branch) with each node's summary."""
    scope = Scope(entity, namespace)
    with open_archive() as archive:
        nodes = archive.inspect.cortex_tree(scope)
    if as_json:
        print_json([to_jsonable(n) for n in nodes])
        return
    if not nodes:
        out.print("no tree yet: a night cycle builds it once blocks have moved to the cortex")
        return
    out.print(_outline(scope, nodes))


def _outline(scope: Scope, nodes: list[TreeNode]) -> Tree:
    """The nodes as a collapsible outline: every root (no parent), then its members, recursively."""
    by_id = {n.id: n for n in nodes}
    root = Tree(Text(f"cortex tree of {scope}"))  # user text: no markup

    def add(branch: Tree, node: TreeNode) -> None:
        label = Text.assemble(
            (f"{LEVEL_NAMES.get(node.level, node.level)} ", "bold"), f"({node.block_count} blocks) ", node.summary
        )
        child = branch.add(label)
        for member in node.member_ids:
            if member in by_id:
                add(child, by_id[member])

    for node in nodes:
        if node.parent_id is None:
            add(root, node)
    return root
