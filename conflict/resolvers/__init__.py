"""Built-in resolvers (``lww``, ``field-lww``, ``multi-value``, ``counter``, ``set``,
``document``), user functions, and the registry that picks one per topic or event type; the
table of what each accepts and returns is in docs/conflict.md."""

from conflict.resolvers.crdts import CounterResolver, DocumentResolver, SetResolver
from conflict.resolvers.registers import FieldLWWResolver, LWWResolver, MultiValueResolver
from conflict.resolvers.registry import BUILTIN, ResolverRegistry, UserFunctionResolver, resolve

__all__ = [
    "BUILTIN",
    "CounterResolver",
    "DocumentResolver",
    "FieldLWWResolver",
    "LWWResolver",
    "MultiValueResolver",
    "ResolverRegistry",
    "SetResolver",
    "UserFunctionResolver",
    "resolve",
]
