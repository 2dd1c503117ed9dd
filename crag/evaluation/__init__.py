"""`crag eval`: reproduce the paper's PopQA experiments (or any QA set in the same formats), answering
every question with several systems on the same knowledge base, web index and generator."""
