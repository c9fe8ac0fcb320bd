"""The frozen binary's build helpers: what pyinstaller.spec leaves out of the bundle and how it slims the rest
(slim.py, elf.py), and the golden-transcript replay that tests/test_golden.py and scripts/smoke_binary.py share
(transcripts.py). Standard library only, except elf.py (pyelftools, in the `build` extra on Linux)."""
