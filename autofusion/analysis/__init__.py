"""autofusion.analysis"""
