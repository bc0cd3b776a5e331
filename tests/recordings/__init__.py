"""Recordings: the one reader, session logs, sources, corpora and the ``streamfsm`` command."""
