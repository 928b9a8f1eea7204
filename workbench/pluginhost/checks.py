"""What a plugin registers, checked before anything else reads it.

Each check returns a clean copy built from plain values (an ``EstimatorInfo`` of our own, tuples of
strings, plain ``Assumption`` objects), so that nothing the engine reads later is a plugin's
property, subclass or mutable list: the plugin's code runs only inside guarded calls.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from workbench.core.errors import describe_validation_error
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import ESTIMATOR_CONTRACT, EstimatorInfo

#: Ids and keys are short names: a longer one is a mistake (or an attempt to flood the output).
MAX_NAME = 200


def static_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` without running a property or ``__getattr__`` of the plugin's (None if absent).
    A ``__slots__`` member holds a plain value, so it is read."""
    found = inspect.getattr_static(obj, name, None)
    if isinstance(found, types.MemberDescriptorType):
        return getattr(obj, name, None)
    return found


def name(value: Any, what: str) -> str:
    if type(value) is not str or not value.strip():
        raise TypeError(f"{what} must be a non-empty string, not {_show(value)}")
    if len(value) > MAX_NAME or not value.isprintable():
        raise TypeError(f"{what} must be a printable string of at most {MAX_NAME} characters")
    return value


def text(value: Any, what: str) -> str:
    if type(value) is not str:
        raise TypeError(f"{what} must be a string, not {_show(value)}")
    return value


def _names(value: Any, what: str) -> tuple[str, ...]:
    if type(value) not in (tuple, list):
        raise TypeError(f"{what} must be a tuple or list of strings, not {_show(value)}")
    names = tuple(name(item, f"each of {what}") for item in value)
    if len(set(names)) != len(names):
        raise TypeError(f"{what} names a key twice")
    return names


def _number(value: Any, what: str, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        raise TypeError(f"{what} must be a finite number, not {_show(value)}")
    return value  # type: ignore[no-any-return]


def _show(value: Any) -> str:
    """A type name, and a short repr for the usual plain values."""
    if type(value) in (int, float, bool, str) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return type(value).__name__


def check_assumption(obj: Any, owner: str) -> Assumption:
    if not isinstance(obj, Assumption):
        raise TypeError(f"{owner}: assumptions must be Assumption objects, not {_show(obj)}")
    read = {name: Assumption.__dict__[name].__get__(obj) for name in Assumption.__slots__}  # no override runs
    ident = name(read["id"], f"{owner}: an assumption id")
    where = f"assumption {ident}"
    clean = Assumption(
        id=ident,
        title=text(read["title"], f"{where}: title"),
        default=_number(read["default"], f"{where}: default"),  # type: ignore[arg-type]
        unit=text(read["unit"], f"{where}: unit"),
        source=text(read["source"], f"{where}: source"),
        description=text(read["description"], f"{where}: description"),
        minimum=_number(read["minimum"], f"{where}: minimum", optional=True),
        maximum=_number(read["maximum"], f"{where}: maximum", optional=True),
    )
    try:
        clean.check(clean.default)
    except ValueError as exc:
        raise TypeError(f"{where}: its default is outside its own range ({exc})") from None
    return clean


def check_info(info: Any) -> EstimatorInfo:
    """A clean copy of an estimator's ``info`` (TypeError naming the first problem)."""
    if not isinstance(info, EstimatorInfo):
        raise TypeError(f"an estimator's `info` must be an EstimatorInfo, not {_show(info)}")
    read = {name: EstimatorInfo.__dict__[name].__get__(info) for name in EstimatorInfo.__slots__}
    ident = name(read["id"], "an estimator id")
    where = f"estimator {ident}"
    contract = read["contract"]
    if type(contract) is not int or contract != ESTIMATOR_CONTRACT:
        raise TypeError(f"{where} speaks contract {_show(contract)}, the engine {ESTIMATOR_CONTRACT}")
    assumptions = read["assumptions"]
    if type(assumptions) not in (tuple, list):
        raise TypeError(f"{where}: assumptions must be a tuple or list, not {_show(assumptions)}")
    return EstimatorInfo(
        id=ident,
        title=text(read["title"], f"{where}: title"),
        version=text(read["version"], f"{where}: version"),
        produces=_names(read["produces"], f"{where}: produces"),
        needs=_names(read["needs"], f"{where}: needs"),
        assumptions=tuple(check_assumption(a, where) for a in assumptions),
        description=text(read["description"], f"{where}: description"),
        contract=contract,
    )


def check_needs_by_key(value: Any, info: EstimatorInfo) -> dict[str, tuple[str, ...]]:
    """The optional ``needs_by_key``: produced key -> needs it reads (a subset of ``needs``)."""
    if value is None:
        return {}
    where = f"estimator {info.id}: needs_by_key"
    if not isinstance(value, Mapping) or type(value) not in (dict, types.MappingProxyType):
        raise TypeError(f"{where} must be a dict, not {_show(value)}")
    clean: dict[str, tuple[str, ...]] = {}
    for key, reads in dict(value).items():
        key = name(key, f"{where}: a key")
        if key not in info.produces:
            raise TypeError(f"{where}: {key} is not in produces")
        reads = _names(reads, f"{where}[{key}]")
        beyond = [r for r in reads if r not in info.needs]
        if beyond:
            raise TypeError(f"{where}[{key}] reads {beyond[0]}, which is not in needs")
        clean[key] = reads
    return clean


def check_accelerator(obj: Any) -> Accelerator:
    if isinstance(obj, Accelerator):
        fields = obj.model_dump()  # validated again: a plugin may have built it with model_construct
    elif type(obj) is dict:
        fields = {**obj, "custom": True}
    else:
        raise TypeError(f"an accelerator is an Accelerator or a dict, not {_show(obj)}")
    try:
        accelerator = Accelerator.model_validate(fields)
    except ValidationError as exc:
        raise TypeError(describe_validation_error(exc, "accelerator")) from None
    name(accelerator.id, "an accelerator id")
    return accelerator


def check_model(obj: Any) -> tuple[str, ModelArchitecture]:
    if not (type(obj) is tuple and len(obj) == 2):
        raise TypeError("a model is registered as (id, ModelArchitecture)")
    ident, arch = obj
    ident = name(ident, "a model id")
    if isinstance(arch, ModelArchitecture):
        arch = arch.model_dump()
    try:
        return ident, ModelArchitecture.model_validate(arch)
    except ValidationError as exc:
        raise TypeError(describe_validation_error(exc, f"model {ident}")) from None
