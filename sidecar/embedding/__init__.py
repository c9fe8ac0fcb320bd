"""The embedding model: where its files are found (and their digests checked), and the ONNX embedder."""
