"""The models CRAG runs besides the evaluator: chat models (a local GGUF on llama.cpp or a provider's),
embeddings, and the yes/no and choice reads of a local model's first token."""
