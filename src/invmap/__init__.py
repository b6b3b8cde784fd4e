"""invmap: query a curated map of LLM-inference-engineering research."""

__version__ = "0.2.0"
