"""Schema translation across DCs: records framed by a schema registry (Confluent's wire format:
magic byte 0, a 4-byte schema id) are copied with the target registry's id for the same schema,
the schema registered there first under the same subject. See docs/schemas.md."""
