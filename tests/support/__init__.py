"""Helpers shared by test modules (fixtures stay in conftest.py files; test modules import
helpers from here, never from each other)."""
