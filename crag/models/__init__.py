"""The models CRAG runs besides the evaluator: chat models, embeddings, a local model's yes/no reads."""
