"""Copy the schema a source id names into the target registry, and say its id there.

The subjects come from the source registry: every subject that holds the id there
(``/schemas/ids/{id}/versions``) gets the schema in the target under the same name, so it works
whatever naming strategy the producers used (topic name, record name, topic and record name).
Schemas it refers to (Avro named types, Protobuf imports) are copied first, under their own
subjects, and referred to by their versions in the target. A subject new in the target gets
the source subject's own compatibility level with its first version; an existing one keeps its
own (each DC's producers register there too: the mirror never overrides their choice).
Registering is idempotent: a schema the subject has already keeps its id.
"""

from __future__ import annotations

from aa.schemas.registry import Reference, Registry, RegistryRefused, Schema

MAX_DEPTH = 32
"""How deep references may nest (a cycle would never end)."""
MAX_SUBJECTS_REMEMBERED = 10_000
"""Subjects whose compatibility was settled this run, remembered so it is asked once each."""


class SchemaCopier:
    """Copies schemas from ``source`` into ``target`` (both started by the caller)."""

    def __init__(self, source: Registry, target: Registry) -> None:
        self.source, self.target = source, target
        self._settled: set[str] = set()
        self._global: str | None = None
        """The source's global compatibility level (asked once)."""

    async def copy(self, source_id: int) -> int:
        """The target's id of the schema ``source_id`` names in the source, registered under
        each subject that holds it there. Raises :class:`RegistryRefused` when the source has
        no such schema (or no subject holds it) or the target refuses it, and
        ``RegistryUnavailable`` when either does not answer."""
        schema = await self.source.schema(source_id)
        holders = await self.source.holders(source_id)
        if not holders:
            raise RegistryRefused(
                f"{self.source.name} has schema {source_id} under no subject: there is no "
                "subject to register it under in the target",
                role="source",
                status=404,
                code=None,
            )
        ids = [await self._register(subject, schema, 0) for subject, _ in holders]
        return ids[0]

    async def _register(self, subject: str, schema: Schema, depth: int) -> int:
        refs = tuple([await self._reference(r, depth + 1) for r in schema.references])
        copied = Schema(schema.text, schema.type, refs)
        new = await self._is_new(subject)
        target_id = await self.target.register(subject, copied)
        await self._settle(subject, new)
        return target_id

    async def _reference(self, ref: Reference, depth: int) -> Reference:
        if depth > MAX_DEPTH:
            raise RegistryRefused(
                f"{self.source.name}: the references of {ref.subject} nest more than "
                f"{MAX_DEPTH} deep (a cycle?)",
                role="source",
                status=422,
                code=None,
            )
        found = await self.source.version(ref.subject, ref.version)
        refs = tuple([await self._reference(r, depth + 1) for r in found.references])
        copied = Schema(found.text, found.type, refs)
        new = await self._is_new(ref.subject)
        await self.target.register(ref.subject, copied)
        await self._settle(ref.subject, new)
        return Reference(ref.name, ref.subject, await self.target.version_of(ref.subject, copied))

    async def _is_new(self, subject: str) -> bool:
        """Whether ``subject`` has no version in the target yet (asked once per run)."""
        return subject not in self._settled and not await self.target.has_subject(subject)

    async def _settle(self, subject: str, new: bool) -> None:
        """A subject new in the target gets the source subject's own compatibility level, set
        right after its first version (which nothing is checked against; some registries, as
        Apicurio, keep no setting for a subject that has no version yet). A level equal to the
        source's global one is not the subject's own (Apicurio answers the global level for a
        subject without one): the subject follows the target's global level."""
        if subject in self._settled:
            return
        if new:
            level = await self.source.compatibility(subject)
            if self._global is None:
                self._global = await self.source.compatibility(None)
            if level is not None and level != self._global:
                await self.target.set_compatibility(subject, level)
        if len(self._settled) >= MAX_SUBJECTS_REMEMBERED:
            self._settled.clear()
        self._settled.add(subject)
