"""sigmabnn.physics"""
