"""The data door: checks that run over a dataset and the runner that drives them."""
