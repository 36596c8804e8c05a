"""rexrank.generate"""
