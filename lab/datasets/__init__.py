"""The validation sets the project measures itself on: PopQA, the documentation set, the relevance slices, the injection set."""
