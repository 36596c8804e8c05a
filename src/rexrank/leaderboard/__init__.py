"""rexrank.leaderboard"""
