"""Making the shipped evaluator: its training data (Wikipedia, real retrieval, FAQs, generated questions, the teacher's labels) and the commands that train, export, blend and calibrate it."""
