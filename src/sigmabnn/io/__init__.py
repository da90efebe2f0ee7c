"""sigmabnn.io"""
