"""autofusion.runtime"""
