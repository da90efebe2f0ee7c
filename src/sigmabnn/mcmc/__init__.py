"""sigmabnn.mcmc"""
