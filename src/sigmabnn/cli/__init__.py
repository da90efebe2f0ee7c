"""sigmabnn.cli"""
