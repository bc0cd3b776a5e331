"""Inputs written to hurt: bounds on memory and time, hostile servers and files."""
