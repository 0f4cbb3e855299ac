"""autofusion.interpreter"""
