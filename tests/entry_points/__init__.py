"""The public entry points: assemble, validate and their async and JSON-lines forms."""
