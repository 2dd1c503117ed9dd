"""What the reader's answer rests on: each sentence linked to the strips that support it (`attribution`)."""
