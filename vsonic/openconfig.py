"""Origin ``openconfig``: the ``openconfig-qos`` tree of a virtual switch that speaks
OpenConfig rather than CONFIG_DB (docs/vsonic.md, "OpenConfig").

The tree is RFC 7951 JSON held in memory, its member names unqualified (every node under
``/qos`` is openconfig-qos's). A path is (element, keys) pairs; a keyed element names one
list entry by its key leaves. Get answers the node at a path (``/qos`` qualified with its
module, as the top of an RFC 7951 document is). Set applies its deletes, then replaces,
then updates (gNMI specification §3.4.3) to a copy, and the whole tree after it is
checked before it is kept: a refused Set changes nothing. An update merges: containers
member by member, keyed lists entry by entry, a leaf-list or leaf replaced. Deleting what
is not there is not an error (gNMI specification §3.4.6).

What is checked: paths stay under ``/qos``, list entries carry the keys their path names,
and the document against the OpenConfig models when the switch is given ``check`` (a
function from the RFC 7951 document to a refusal, or None). vsonic ships without one: the
models' bindings are a development dependency (``oc-config-validate``) that the product
never imports, so the tests pass the real models' check in (``tests/yang/openconfig_models``).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vsonic.errors import InvalidPathError, PathNotFoundError, SchemaViolationError

ORIGIN = "openconfig"
TOP = "qos"
MODULE = "openconfig-qos"

Json = dict[str, Any]
Elem = tuple[str, tuple[tuple[str, str], ...]]
Check = Callable[[Json], str | None]


@dataclass(frozen=True)
class OcOp:
    """One operation of a Set: ``kind`` delete, replace or update, at ``path``."""

    kind: str
    path: tuple[Elem, ...]
    value: Any = None


def _matches(item: Any, keys: tuple[tuple[str, str], ...]) -> bool:
    return isinstance(item, dict) and all(_text(item.get(k)) == v for k, v in keys)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _unqualified(name: str) -> str:
    return name.rpartition(":")[2]


def _normal(value: Any) -> Any:
    """Member names without their module (RFC 7951 qualifies where the module changes)."""
    if isinstance(value, dict):
        return {_unqualified(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _checked(path: Sequence[Elem]) -> tuple[Elem, ...]:
    if not path or _unqualified(path[0][0]) != TOP or path[0][1]:
        shown = "/".join(name for name, _ in path) or "(root)"
        raise InvalidPathError(f"origin {ORIGIN}: vsonic serves /{TOP} only, not /{shown}")
    return tuple((_unqualified(name), keys) for name, keys in path[1:])


def _find(tree: Json, path: tuple[Elem, ...]) -> Any:
    node: Any = tree
    for name, keys in path:
        if not isinstance(node, dict) or name not in node:
            return None
        node = node[name]
        if keys:
            if not isinstance(node, list):
                return None
            node = next((item for item in node if _matches(item, keys)), None)
            if node is None:
                return None
    return node


def _make(tree: Json, path: tuple[Elem, ...]) -> Json:
    """The container or list entry at ``path``, created with its keys when absent."""
    node = tree
    for name, keys in path:
        if not keys:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                raise InvalidPathError(f"{name} is a leaf, not a container")
            node = child
            continue
        items = node.setdefault(name, [])
        if not isinstance(items, list):
            raise InvalidPathError(f"{name} is not a list")
        found = next((item for item in items if _matches(item, keys)), None)
        if found is None:
            found = dict(keys)
            items.append(found)
        node = found
    return node


def _merge(node: Json, value: Json, where: str) -> None:
    for name, incoming in value.items():
        here = node.get(name)
        if isinstance(incoming, dict):
            if here is None:
                node[name] = copy.deepcopy(incoming)
            elif isinstance(here, dict):
                _merge(here, incoming, f"{where}/{name}")
            else:
                raise InvalidPathError(f"{where}/{name}: a leaf, not a container")
        elif isinstance(incoming, list) and incoming and all(isinstance(i, dict) for i in incoming):
            items = node.setdefault(name, [])
            for item in incoming:
                entry = _entry_like(items, item)
                if entry is None:
                    items.append(copy.deepcopy(item))
                else:
                    _merge(entry, item, f"{where}/{name}")
        else:
            node[name] = copy.deepcopy(incoming)


def _entry_like(items: list[Any], item: Json) -> Json | None:
    """The entry of ``items`` with ``item``'s key. OpenConfig's style puts a list's key
    leaves, and only those, directly in its entries (the rest is under ``config``)."""
    keys = [k for k, v in item.items() if not isinstance(v, dict | list)]
    if not keys:
        raise InvalidPathError(f"a list entry without its keys: {sorted(item)}")
    for entry in items:
        if isinstance(entry, dict) and all(_text(entry.get(k)) == _text(item[k]) for k in keys):
            return entry
    return None


def _delete(tree: Json, path: tuple[Elem, ...]) -> None:
    if not path:
        tree.clear()
        return
    parent = _find(tree, path[:-1]) if len(path) > 1 else tree
    name, keys = path[-1]
    if not isinstance(parent, dict) or name not in parent:
        return
    if not keys:
        del parent[name]
        return
    items = parent[name]
    if isinstance(items, list):
        parent[name] = [item for item in items if not _matches(item, keys)]


def _set_at(tree: Json, path: tuple[Elem, ...], value: Any, merge: bool) -> None:
    if not path:
        if not isinstance(value, dict):
            raise InvalidPathError(f"/{TOP}: value is not a JSON object")
        if not merge:
            tree.clear()
        _merge(tree, value, f"/{TOP}")
        return
    name, keys = path[-1]
    if keys or isinstance(value, dict):
        if not isinstance(value, dict):
            raise InvalidPathError(f"{name}: a list entry's value is not a JSON object")
        for key, text in keys:
            if key in value and _text(value[key]) != text:
                raise InvalidPathError(f"{name}: key {key}={value[key]} where the path says {text}")
        node = _make(tree, path)
        if not merge:
            kept = {k: node[k] for k, _ in keys if k in node}
            node.clear()
            node.update(kept)
        _merge(node, value, name)
        return
    parent = _make(tree, path[:-1])
    parent[name] = copy.deepcopy(value)


@dataclass
class OpenConfigTree:
    """One switch's ``/qos`` tree. ``check``: the models' verdict on a whole document."""

    check: Check | None = None
    tree: Json = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Every write, by path text: what a test reads to see a Set's granularity.
    writes: list[str] = field(default_factory=list)

    def document(self) -> Json:
        return {f"{MODULE}:{TOP}": copy.deepcopy(self.tree)}

    def get(self, path: Sequence[Elem]) -> Any:
        """The JSON at ``path``; ``PathNotFoundError`` when nothing is there."""
        inner = _checked(path)
        with self.lock:
            if not inner:
                if not self.tree:
                    raise PathNotFoundError(f"/{TOP}: no QoS configuration")
                return {f"{MODULE}:{k}": copy.deepcopy(v) for k, v in self.tree.items()}
            found = _find(self.tree, inner)
            if found is None:
                raise PathNotFoundError(f"{_shown(path)}: not found")
            return copy.deepcopy(found)

    def apply(self, ops: Sequence[OcOp]) -> None:
        """All of ``ops`` or none: applied to a copy, checked whole, then kept."""
        with self.lock:
            after = copy.deepcopy(self.tree)
            order = {"delete": 0, "replace": 1, "update": 2}
            for op in sorted(ops, key=lambda o: order[o.kind]):
                inner = _checked(op.path)
                if op.kind == "delete":
                    _delete(after, inner)
                else:
                    _set_at(after, inner, _normal(op.value), merge=op.kind == "update")
            if self.check is not None:
                problem = self.check({f"{MODULE}:{TOP}": after})
                if problem is not None:
                    raise SchemaViolationError([f"openconfig-qos refuses the Set: {problem}"])
            self.tree = after
            self.writes += [f"{op.kind} {_shown(op.path)}" for op in ops]


def _shown(path: Sequence[Elem]) -> str:
    parts = (name + "".join(f"[{k}={v}]" for k, v in keys) for name, keys in path)
    return "/" + "/".join(parts)
