"""The Gymnasium environment: its ids, spaces and checker (tool-call formats: :mod:`prove_gym.formats`)."""
