"""rexrank.evaluation"""
