"""autofusion.frontend"""
