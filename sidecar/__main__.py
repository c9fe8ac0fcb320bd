# Absolute import: this file is both `python -m sidecar` and the PyInstaller entry script.
from sidecar.runtime.cli import main

raise SystemExit(main())
