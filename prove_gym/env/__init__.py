"""The Gymnasium environment, tool-call formats and spaces."""
