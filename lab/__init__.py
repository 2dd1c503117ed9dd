"""What the project uses to measure and train itself; not installed with crag (it imports only crag's public names)."""
