"""The proxy's exceptions are one tree (sfqtui.proxy.errors), drawn in that module's docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import sfqtui.proxy
from sfqtui.proxy import errors
from sfqtui.proxy.errors import ProxyError

# The store's client defines its StoreAway on a base of its own until it derives from StoreError.


def proxy_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(sfqtui.proxy.__path__, "sfqtui.proxy."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def test_every_exception_of_the_proxy_is_a_proxy_error_drawn_in_the_tree() -> None:
    found = proxy_exceptions()
    assert {"sfqtui.proxy.errors.Closing", "sfqtui.proxy.errors.UpstreamError", "sfqtui.proxy.errors.GroupError"} <= set(found)
    for where, exception in found.items():
        assert issubclass(exception, ProxyError), f"{where} is not a ProxyError"
        assert exception.__module__ == errors.__name__, f"{where} is defined outside sfqtui.proxy.errors"
        assert f" {exception.__name__} " in (errors.__doc__ or ""), f"{where} is not drawn in the tree"
