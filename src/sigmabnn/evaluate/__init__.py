"""sigmabnn.evaluate"""
