"""memory-sidecar: offline long-term memory for chat bots, over newline-delimited JSON on stdio."""

__version__ = "0.1.0"
