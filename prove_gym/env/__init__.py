"""The Gymnasium environment, action parsers, formatters and spaces."""
