"""Making and adapting the evaluator; nothing here runs when a question is answered (an import contract)."""
