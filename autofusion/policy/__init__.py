"""autofusion.policy"""
