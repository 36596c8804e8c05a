"""rexrank.data"""
