"""sigmabnn.vi"""
