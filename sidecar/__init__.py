"""memory-sidecar: offline long-term memory for chat bots, over newline-delimited JSON on stdio."""

import os

# onnxruntime 1.29 and later collect telemetry on Linux and macOS too (a device id and an event database in
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, uploaded when a network is there). An offline memory sends
# nothing anywhere: opted out before onnxruntime is first imported (it reads this once, at initialisation), unless
# the environment already says otherwise. docs/privacy.md, "What leaves the machine".
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__version__ = "0.1.0"
