"""sigmabnn.data"""
