"""A STAND-IN for the few `azlmbr` modules `level_tools.py` calls, so that the example and its
tests run where O3DE is absent. It is not O3DE: the "level" is a list of entities in memory.

    import azlmbr_standin
    azlmbr_standin.install()          # sys.modules gets azlmbr, azlmbr.bus, .editor, .entity
    import azlmbr.editor as editor    # ... then the example's calls work as in the Editor
    azlmbr_standin.LEVEL.names()      # what the level holds

The calls mirror the Editor's Python bindings: `azlmbr.entity.SearchBus` `SearchEntities`
(an `azlmbr.entity.SearchFilter`, whose empty `names` matches every entity),
`azlmbr.editor.ToolsApplicationRequestBus` `CreateNewEntity`, `EditorEntityAPIBus` `SetName`,
`EditorEntityInfoRequestBus` `GetName` / `GetParent` / `GetChildren`. An event the stand-in does
not know raises, rather than returning None as O3DE would, so a typo shows.
"""

from __future__ import annotations

import fnmatch
import sys
import threading
import types


class EntityId:
    """`azlmbr.entity.EntityId`: EntityId() is the invalid id (the level's root as a parent)."""

    def __init__(self, value: int = 0):
        self.id = value

    def IsValid(self) -> bool:  # noqa: N802 (O3DE's name)
        return self.id != 0

    def ToString(self) -> str:  # noqa: N802
        return f"[{self.id}]"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntityId) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"EntityId({self.id})"


class SearchFilter:
    """`azlmbr.entity.SearchFilter`: `names` are wildcards (any may match); empty matches all."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.names_case_sensitive = False


class Level:
    """The stand-in level: entities with a name and a parent, in creation order."""

    DEFAULT = [("Atom Default Environment", None), ("Camera", 1), ("Global Sky", 1), ("Ground", 1), ("Sun", 1)]

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Back to a new level's entities (O3DE's default level)."""
        with self._lock:
            self.entities: dict[int, dict] = {}
            self._next = 1
        for name, parent in self.DEFAULT:
            self.create(EntityId(parent or 0), name)

    def create(self, parent: EntityId, name: str | None = None) -> EntityId:
        with self._lock:
            number = self._next
            self._next += 1
            self.entities[number] = {"name": name or f"Entity{number}", "parent": parent.id if parent.IsValid() else 0}
        return EntityId(number)

    def entity(self, entity_id: EntityId) -> dict:
        with self._lock:
            if entity_id.id not in self.entities:
                raise KeyError(f"azlmbr stand-in: no entity {entity_id.ToString()} in the level")
            return self.entities[entity_id.id]

    def names(self) -> list[str]:
        with self._lock:
            return [e["name"] for e in self.entities.values()]

    def search(self, search_filter: SearchFilter) -> list[EntityId]:
        with self._lock:
            found = []
            for number, e in self.entities.items():
                name = e["name"] if search_filter.names_case_sensitive else e["name"].lower()
                patterns = search_filter.names if search_filter.names_case_sensitive else [p.lower() for p in search_filter.names]
                if not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns):
                    found.append(EntityId(number))
            return found

    def children(self, entity_id: EntityId) -> list[EntityId]:
        with self._lock:
            return [EntityId(n) for n, e in self.entities.items() if e["parent"] == entity_id.id]


#: The one level the stand-in buses act on.
LEVEL = Level()

Broadcast = 0
Event = 1


def _bus(bus_name: str, addressing: int, events: dict):
    """A bus function: `BusName(addressing, "Event", *args)` as `azlmbr` calls it."""

    def call(how: int, event: str, *args):
        if how != addressing:
            raise TypeError(f"azlmbr stand-in: {bus_name} takes {'bus.Broadcast' if addressing == Broadcast else 'bus.Event'}")
        if event not in events:
            raise AttributeError(f"azlmbr stand-in: {bus_name} has no event {event!r} here ({', '.join(events)})")
        return events[event](*args)

    call.__name__ = bus_name
    return call


def _set_name(entity_id: EntityId, name: str) -> None:
    LEVEL.entity(entity_id)["name"] = str(name)


def _parent(entity_id: EntityId) -> EntityId:
    return EntityId(LEVEL.entity(entity_id)["parent"])


def install() -> None:
    """Puts the stand-in `azlmbr`, `azlmbr.bus`, `azlmbr.editor` and `azlmbr.entity` into
    `sys.modules` (unless a real `azlmbr` is there already)."""
    if "azlmbr" in sys.modules and not getattr(sys.modules["azlmbr"], "STANDIN", False):
        return
    root = types.ModuleType("azlmbr", "A stand-in for O3DE's azlmbr (genai_bridge's examples/azlmbr_standin.py).")
    root.STANDIN = True
    bus = types.ModuleType("azlmbr.bus")
    bus.Broadcast, bus.Event = Broadcast, Event
    entity = types.ModuleType("azlmbr.entity")
    entity.EntityId = EntityId
    entity.SearchFilter = SearchFilter
    entity.SearchBus = _bus("SearchBus", Broadcast, {"SearchEntities": LEVEL.search, "GetRootEditorEntities": lambda: LEVEL.children(EntityId())})
    editor = types.ModuleType("azlmbr.editor")
    editor.ToolsApplicationRequestBus = _bus("ToolsApplicationRequestBus", Broadcast, {"CreateNewEntity": lambda parent: LEVEL.create(parent)})
    editor.EditorEntityAPIBus = _bus("EditorEntityAPIBus", Event, {"SetName": _set_name})
    editor.EditorEntityInfoRequestBus = _bus(
        "EditorEntityInfoRequestBus",
        Event,
        {"GetName": lambda i: LEVEL.entity(i)["name"], "GetParent": _parent, "GetChildren": LEVEL.children},
    )
    root.bus, root.entity, root.editor = bus, entity, editor
    sys.modules.update({"azlmbr": root, "azlmbr.bus": bus, "azlmbr.entity": entity, "azlmbr.editor": editor})
