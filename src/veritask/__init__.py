"""veritask: manufacture verifiable tasks for training and evaluating LLM agents."""

__version__ = "0.1.0"
