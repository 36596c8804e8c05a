"""One typed registry: metric name -> MetricSpec (+ the class that computes it).

Entries are lazy ("module:Class" strings) so listing metrics never imports torch.

Three ways in, one set of rules (``Registry.register``): rexrank's own metrics (``rexrank/metrics/__init__.py``),
code that registers a metric at run time, and installed plugins. A name or alias is lower case (``_NAME``), and no
name, alias, per-study column or leaderboard column may be taken twice: a second claim is refused, never a
replacement.

Plugins (docs/architecture.md, "Adding a metric (plugins)"): a distribution declares an entry point in the group
``PLUGIN_GROUP`` naming a function ``register(registry)``, which calls ``registry.register(spec, "module:Class")``.
They are loaded once per process, the first time an answer could depend on them: a listing (``names()``) or a name
rexrank's own metrics do not have. Looking up a name already registered loads none, so a broken plugin cannot stop
a run that does not ask for its metrics. What a plugin may change: only what it registers, under names nobody holds;
a plugin that fails (import error, exception, collision, a bad spec) leaves the registry exactly as before it ran
and every later listing or miss raises one ConfigError naming the plugin, its distribution and the fix. A plugin is
code the user installed and runs with their rights: rexrank checks what it registers, not what else it does.
``PLUGINS_ENV`` (comma-separated entry-point names; empty: none) chooses which installed plugins load.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

from rexrank.errors import ConfigError, UnknownNameError

# The entry-point group a distribution declares its metrics in, and the variable that picks which plugins load.
PLUGIN_GROUP = "rexrank.metrics"
PLUGINS_ENV = "REXRANK_METRIC_PLUGINS"
# Names and aliases as ``canonical`` reads them (stripped, lower case): anything else could never be looked up.
_NAME = re.compile(r"[a-z0-9][a-z0-9_.\-]{0,63}\Z")
_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is, as data.

    name: registry key (``bleu2``). column: the ReXrank leaderboard / CXR-Report-Metric column name
    (``bleu_score``). version: bump when a change could alter any number the metric returns.
    components: for composites (RadCliQ), the registry names whose per-report arrays it combines.
    """

    name: str
    column: str
    higher_is_better: bool
    version: str
    description: str
    needs_model: bool = False
    components: tuple[str, ...] = ()
    # How the leaderboard turns per-report values into the published number ("mean" or "reciprocal_of_mean").
    leaderboard_aggregation: str = "mean"
    leaderboard_column: str | None = None
    # How a direct call behaves inside a launched multi-process job (rexrank.parallel): "shard" splits one call's
    # distinct pairs across the processes (model-backed metrics); "replicate" computes them all in every process.
    across_processes: str = "replicate"
    # "report": one value per report, aggregated by leaderboard_aggregation. "corpus": the metric's class owns
    # STATISTICS (per-study columns, the first being ``column``), OUTPUTS (named values, the first the headline) and
    # corpus_values(sums, n); every value is a function of the column sums (rexrank.metrics.aggregation). Read from
    # the class, not declared here, so listing metrics imports no model code.
    level: str = "report"
    # Registry names whose configuration this metric takes as a keyword dict (``semb={...}``) and whose per-text
    # cache entries it reads: CE F1 reuses SembScore's CheXbert labels (rexrank.evaluation.plan.metric_config).
    shares: tuple[str, ...] = ()
    # The interval every value the metric reports lies in, a mean and its CI bounds included (None: no bound on
    # that side). The leaderboard store refuses a result outside it (rexrank.leaderboard.records.check_numbers);
    # for a corpus-level metric it bounds the headline value (results' "mean" slot).
    value_range: tuple[float | None, float | None] = (None, None)
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class _Entry:
    spec: MetricSpec
    target: str | Callable[..., Any]  # "module:Class" or the class itself
    origin: str | None = None  # the plugin that registered it (its label); None: rexrank or the running program

    def load(self):
        if callable(self.target):
            return self.target
        module_name, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module_name), attr)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class Registry:
    """Name -> entry, with helpful errors. Generic over what it holds (metrics here).

    ``plugin_group``: the entry-point group whose plugins this registry loads (None: none).
    """

    def __init__(self, kind: str, plugin_group: str | None = None):
        self.kind = kind
        self.plugin_group = plugin_group
        self._entries: dict[str, _Entry] = {}
        self._aliases: dict[str, str] = {}
        self._plugins_loaded = plugin_group is None
        self._plugin_errors: tuple[str, ...] = ()
        self._loading: str | None = None  # the plugin whose register function is running
        # The leaderboard serves from threads: one of them loads the plugins while the others wait.
        self._lock = threading.RLock()

    # -- registering ----------------------------------------------------------------------------------------------

    def register(self, spec: MetricSpec, target: str | Callable[..., Any], aliases: tuple[str, ...] = ()):
        """Add ``spec`` (computed by ``target``: a "module:Class" string, imported only when the class is asked
        for, or the class) under its name and ``aliases``. Raises ConfigError, changing nothing, when the spec is
        malformed or its name, an alias, its column or its leaderboard column is already taken."""
        origin = self._loading
        who = f"{self.kind.capitalize()} {getattr(spec, 'name', spec)!r}" + (f" from {origin}" if origin else "")
        if not isinstance(spec, MetricSpec):
            raise ConfigError(f"{who}: register takes a MetricSpec, not a {type(spec).__name__}")
        aliases = (aliases,) if isinstance(aliases, str) else tuple(aliases)
        for key in (spec.name, *aliases):
            if not isinstance(key, str) or not _NAME.match(key):
                raise ConfigError(f"{who}: {key!r} is not a usable name (lower-case letters, digits, '_', '-', '.', "
                                  "at most 64 characters, starting with a letter or digit)")
        if not isinstance(spec.column, str) or not spec.column.strip():  # the per-study table's column header
            raise ConfigError(f"{who}: its column must be a non-empty string, not {spec.column!r:.80}")
        if not (callable(target) or (isinstance(target, str) and _TARGET.match(target))):
            raise ConfigError(f"{who}: its class must be given as 'package.module:Class' or the class itself, "
                              f"not {target!r:.80}")
        for key in (spec.name, *aliases):
            holder = self._entries.get(key) or self._entries.get(self._aliases.get(key, ""))
            if holder is not None or aliases.count(key) + (key == spec.name) > 1:
                held_as = "alias" if holder is None or holder.spec.name != key else "name"
                raise ConfigError(self._collision(who, held_as, key, holder))
        for attribute in ("column", "leaderboard_column"):
            value = getattr(spec, attribute)
            holder = next((e for e in self._entries.values() if value is not None
                           and getattr(e.spec, attribute) == value), None)
            if holder is not None:
                raise ConfigError(self._collision(who, attribute.replace("_", " "), value, holder))
        self._entries[spec.name] = _Entry(spec, target, origin)
        for alias in aliases:
            self._aliases[alias] = spec.name
        return target

    def _collision(self, who: str, held_as: str, key: str, holder: _Entry | None) -> str:
        """The message for ``key`` claimed again; ``held_as``: what it is to its holder (name, alias, column)."""
        if holder is None:  # the same key twice in one call
            return f"{who}: {held_as} {key!r} is given twice"
        if not (self._loading or holder.origin):
            return f"{self.kind} {key!r} is already registered (the {held_as} of {holder.spec.name!r})"
        owner = f"{holder.origin}'s" if holder.origin else "rexrank's"
        detail = "" if held_as == "name" else f" (its {held_as} {key!r})"
        fix = "; rename it in the plugin" if self._loading else ""
        return f"{who} collides with {owner} {holder.spec.name!r}{detail}{fix}"

    @contextlib.contextmanager
    def scoped(self) -> Iterator[Registry]:
        """Within the block, registrations are temporary: on leaving it, however it ends, the registry is exactly
        what it was on entering (names, aliases, which plugins were loaded and how). For tests and for programs
        that add a metric for one job::

            with REGISTRY.scoped():
                REGISTRY.register(MySpec, MyMetric)
                ...
        """
        with self._lock:
            saved = self._state()
        try:
            yield self
        finally:
            with self._lock:
                self._restore(saved)

    def _state(self) -> tuple:
        return dict(self._entries), dict(self._aliases), self._plugins_loaded, self._plugin_errors

    def _restore(self, state: tuple) -> None:
        entries, aliases, self._plugins_loaded, self._plugin_errors = state
        self._entries.clear()
        self._entries.update(entries)
        self._aliases.clear()
        self._aliases.update(aliases)

    # -- plugins --------------------------------------------------------------------------------------------------

    def load_plugins(self) -> None:
        """Load the installed plugins, once per process (later calls only repeat a failure). Raises one ConfigError
        naming every plugin that failed; the plugins that loaded stay registered."""
        self._ensure_plugins()
        if self._plugin_errors:
            raise ConfigError("; ".join(self._plugin_errors))

    def _ensure_plugins(self) -> None:
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = True  # first, so a plugin that lists metrics does not load them again
            errors = []
            try:
                for entry_point in self._plugin_entry_points():
                    error = self._load_plugin(entry_point)
                    if error:
                        errors.append(error)
            except ConfigError as exc:
                errors.append(str(exc))
            self._plugin_errors = tuple(errors)

    def _plugin_entry_points(self) -> list:
        from importlib.metadata import entry_points

        found = sorted(entry_points(group=self.plugin_group), key=lambda ep: (ep.name, ep.value))
        chosen = os.environ.get(PLUGINS_ENV)
        if chosen is None:
            return found
        wanted = [name.strip() for name in chosen.split(",") if name.strip()]
        missing = [name for name in wanted if name not in {ep.name for ep in found}]
        if missing:
            have = ", ".join(ep.name for ep in found) or "none"
            raise ConfigError(f"{PLUGINS_ENV} names {', '.join(map(repr, missing))}, which no installed distribution "
                              f"provides (installed {self.kind} plugins: {have}); correct or unset {PLUGINS_ENV}")
        return [ep for ep in found if ep.name in wanted]

    def _load_plugin(self, entry_point) -> str | None:
        """Run one plugin's register function; on any failure restore the registry and return the message."""
        dist = getattr(entry_point, "dist", None)
        distribution = f"{dist.name} {dist.version}" if dist is not None else entry_point.value
        label = f"plugin {entry_point.name!r} ({distribution})"
        fix = (f"fix or uninstall {dist.name if dist is not None else entry_point.name}, or set {PLUGINS_ENV} to the "
               "plugins to load (comma-separated; empty for none)")
        saved = self._state()
        self._loading = label
        try:
            function = entry_point.load()
            if isinstance(function, ModuleType) or not callable(function):
                raise TypeError(f"entry point {entry_point.value!r} must name a function register(registry)")
            function(self)
        except ConfigError as exc:  # what register refused: already names the plugin
            self._restore(saved)
            return f"{exc}; {fix}"
        except (Exception, SystemExit) as exc:  # a plugin's own failure, whatever it is, is reported, not raised
            self._restore(saved)
            return f"{self.kind.capitalize()} {label} failed to load: {_one_line(exc)}; {fix}"
        finally:
            self._loading = None
        return None

    # -- looking up -----------------------------------------------------------------------------------------------

    def canonical(self, name: str) -> str:
        key = str(name).strip().lower()
        key = self._aliases.get(key, key)
        if key not in self._entries:
            self._ensure_plugins()  # the name may be a plugin's
            key = self._aliases.get(key, key)
        if key not in self._entries:
            self.load_plugins()  # a plugin that failed may have had it: say so rather than "unknown"
            raise UnknownNameError(f"Unknown {self.kind} {name!r}. Available: {', '.join(self.names())}")
        return key

    def spec(self, name: str) -> MetricSpec:
        return self._entries[self.canonical(name)].spec

    def cls(self, name: str):
        entry = self._entries[self.canonical(name)]
        if entry.origin is None:
            return entry.load()
        try:
            loaded = entry.load()
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{self.kind.capitalize()} {entry.spec.name!r} from {entry.origin} cannot be loaded "
                              f"from {entry.target!r}: {_one_line(exc)}") from None
        declared = getattr(loaded, "spec", entry.spec)
        if isinstance(declared, MetricSpec) and declared != entry.spec:
            raise ConfigError(f"{self.kind.capitalize()} {entry.spec.name!r} from {entry.origin}: its class "
                              f"declares a different spec ({declared.name!r}) than the one it registered")
        return loaded

    def names(self, *, plugins: bool = True) -> list[str]:
        """Every registered name, rexrank's first. ``plugins=False``: only those not registered by a plugin, and
        none is loaded (for code that means rexrank's own metrics)."""
        if not plugins:
            return [name for name, entry in self._entries.items() if entry.origin is None]
        self.load_plugins()
        return list(self._entries)

    def options(self, name: str) -> tuple[list[str], bool]:
        """(the keyword options ``name``'s class takes, whether it also takes any other key), read from its
        constructor, so the class is the one owner of what it accepts. "Any other key": a ``**kwargs`` it forwards
        (GREEN's backend options, FineRadScore's HTTP options). Imports the class's module; loads no model."""
        signature = inspect.signature(self.cls(name))
        named = [p.name for p in signature.parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        return named, open_ended

    def check_options(self, name: str, keys: Iterable[str], *, flag: str = "--option") -> None:
        """Raise ConfigError naming every key ``name`` does not take, and the keys it does take."""
        accepted, open_ended = self.options(name)
        unknown = [key for key in keys if key not in accepted]
        if not unknown or open_ended:
            return
        canonical = self.canonical(name)
        takes = f"it takes: {', '.join(accepted)}" if accepted else "it takes no options"
        raise ConfigError(f"{flag}: {self.kind} {canonical} has no option {', '.join(map(repr, unknown))}; {takes}")

    def __contains__(self, name: object) -> bool:
        try:
            self.canonical(str(name))
        except UnknownNameError:
            return False
        return True
