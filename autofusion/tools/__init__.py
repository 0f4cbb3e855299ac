"""autofusion.tools"""
