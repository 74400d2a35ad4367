"""hotness_model"""
