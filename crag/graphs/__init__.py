"""One graph per system, wiring only: CRAG (`crag.graphs.crag`) and the systems it is measured against."""
